// Command plumbing shared by every cmd_<family>.cc: the spec of a command and
// the context a handler runs in. Handlers run on the connection's worker.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/engine.h"
#include "protocol/resp/core/client.h"
#include "protocol/resp/core/conn_state.h"
#include "protocol/resp/core/effects.h"
#include "protocol/resp/core/resp_writer.h"

namespace trove::resp {

class RespServer;
struct WorkerStats;
struct ScratchEntry;

// Command flags (the subset of Redis's that Trove acts on, plus kGlobal).
enum CmdFlag : uint32_t {
  kCmdWrite = 1u << 0,
  kCmdReadonly = 1u << 1,
  kCmdFast = 1u << 2,
  kCmdAdmin = 1u << 3,
  kCmdNoAuth = 1u << 4,   // allowed before AUTH
  kCmdNoQueue = 1u << 5,  // runs at once inside MULTI (EXEC DISCARD MULTI WATCH QUIT RESET)
  kCmdGlobal = 1u << 6,   // walks the keyspace (KEYS SCAN FLUSHDB ...): no KeyLockSet
  kCmdDenyOom = 1u << 7,
  kCmdLoading = 1u << 8,
  kCmdStale = 1u << 9,
  kCmdNoMulti = 1u << 10,  // refused inside MULTI
  kCmdMovableKeys = 1u << 11,
  kCmdPubsub = 1u << 12,
  kCmdPubsubOk = 1u << 13,  // allowed in RESP2 subscribed mode (SUBSCRIBE..., PING, QUIT, RESET)
  kCmdRateExempt = 1u << 14,  // never rate-limited (AUTH HELLO PING QUIT RESET MULTI EXEC DISCARD)
};

struct CommandContext;
using CommandFn = void (*)(CommandContext& ctx);
// Appends the argv indexes that hold keys (for commands whose keys move).
using KeysFn = void (*)(std::span<const std::string_view> argv, std::vector<size_t>* out);

// One command of the table. Key positions are Redis's (first, last, step;
// last < 0 counts from the end).
struct CommandSpec {
  const char* name;
  int arity;  // > 0 exact, < 0 at least -arity
  uint32_t flags;
  int first_key;
  int last_key;
  int step;
  CommandFn fn;
  KeysFn keys = nullptr;
  const char* group = "generic";
  const char* summary = "";
  const char* since = "1.0.0";
  int id = -1;  // index in the table (filled by CommandTable)
  // A collection write: it stores its result after replying, so its reply is
  // staged and replaced by -OOM if that store fails (filled by CommandTable).
  bool stages_reply = false;
  // A write command whose lookups of its source keys count as keyspace
  // hits/misses, as Redis's lookupKeyRead does (GETSET, *STORE, COPY ...).
  bool reads_keys = false;
};

// What a family's Register*Commands appends its commands with: one call per
// command, in the forms the families use (the group is the family's, or
// given per command by the server and connection families).
struct CommandAdder {
  std::vector<CommandSpec>* t;
  const char* group = nullptr;
  // Keys at first..last by step, or from kf.
  void operator()(const char* name, int arity, uint32_t flags, int first, int last, int step,
                  CommandFn fn, const char* summary, const char* since,
                  KeysFn kf = nullptr) const {
    t->push_back({name, arity, flags, first, last, step, fn, kf, group, summary, since});
  }
  // Keys at first..last, step 1.
  void operator()(const char* name, int arity, uint32_t flags, int first, int last, CommandFn fn,
                  const char* summary, const char* since, KeysFn kf = nullptr) const {
    t->push_back({name, arity, flags, first, last, 1, fn, kf, group, summary, since});
  }
  // No keys, the family's group.
  void operator()(const char* name, int arity, uint32_t flags, CommandFn fn, const char* summary,
                  const char* since) const {
    t->push_back({name, arity, flags, 0, 0, 0, fn, nullptr, group, summary, since});
  }
  // No keys, a group of its own.
  void operator()(const char* name, int arity, uint32_t flags, CommandFn fn, const char* grp,
                  const char* summary, const char* since) const {
    t->push_back({name, arity, flags, 0, 0, 0, fn, nullptr, grp, summary, since});
  }
};

// What a handler sees for one call.
// Invariant: when locked is true, the stripes of every key the command names
// are held by a KeyLockSet on this thread (every stripe when exclusive is
// true), so the handler uses only the engine's *Locked operations;
// kCmdGlobal handlers run with locked false.
struct CommandContext {
  // The caller's connection services (core/client.h); null when no
  // connection is behind the call.
  Client* client = nullptr;
  RespServer* server = nullptr;
  // The running worker's counters (keyspace hits/misses); may be null.
  WorkerStats* stats = nullptr;
  // Where the command's side effects go (core/effects.h): never null while
  // a command runs; the caller drains it with no stripe held.
  Effects* fx = nullptr;
  engine::Engine* engine = nullptr;
  engine::ThreadStats* ts = nullptr;
  ConnState* conn = nullptr;
  RespWriter* w = nullptr;
  // Where pub/sub confirmations go: w, except under CLIENT REPLY OFF/SKIP,
  // where replies are dropped but these still reach the client (Redis's
  // CLIENT_PUSHING).
  RespWriter* push = nullptr;
  std::span<const std::string_view> argv;
  const CommandSpec* spec = nullptr;
  bool locked = false;
  bool in_exec = false;
  // Commands that touch keys they did not name (a script's undeclared keys,
  // commands/scripting_call.cc; SORT's BY/GET patterns, commands/sort.cc):
  // the seam sets can_go_exclusive when it could run the command again
  // holding every stripe; a handler that needs that sets want_exclusive
  // and writes no reply; the seam then runs it again with exclusive set.
  // A command a script runs while holding every stripe has exclusive set.
  bool can_go_exclusive = false;
  bool want_exclusive = false;
  bool exclusive = false;
  // Inside a script: the script's own SELECT (-1 until it selects), which
  // keys use and SELECT sets, leaving the caller's database as it was.
  int* script_db = nullptr;
  // Set by EVAL/FCALL when the script called a read-only command: a
  // tracking client then tracks the script's declared keys (Redis's rule).
  bool script_read = false;
  // CLIENT NO-TOUCH is on and the command is not TOUCH: lookups do not bump.
  bool no_touch = false;
  // Lookups count keyspace hits/misses: read commands and reads_keys ones.
  bool count_keyspace = false;
  // The keyspace-notification classes enabled for this command
  // (KeyEventSink::enabled(), read once per command; 0 almost always).
  uint32_t notify = 0;
  // Collections decoded or created by this command (see collections.h).
  std::vector<ScratchEntry>* scratch = nullptr;
  // Set when a collection write could not be stored (no memory under -M);
  // Session then replaces the command's reply with -OOM.
  bool* write_failed = nullptr;
  // Set while a blocked client's command runs again to serve it (the
  // writer's worker, BlockRegistry): a blocking command that still finds no
  // data sets *would_block instead of blocking (commands/blocking.cc).
  bool* would_block = nullptr;
  // The changes this command made to the keyspace, as Redis's server.dirty
  // counts them (INFO persistence rdb_changes_since_last_save). A handler
  // that knows the count sets it, where that is cheap: DEL the keys
  // removed, LPUSH the elements pushed, 0 when nothing changed. Left at
  // kDirtyUnknown, a write command counts 1 unless it replied with an error
  // (Session::Run, services/blocked_serve.cc).
  static constexpr int64_t kDirtyUnknown = -1;
  int64_t dirty = kDirtyUnknown;

  // Fills what every caller of the seam sets the same way: the worker
  // (server, its counters, the engine), the effects record, the caller's
  // ConnState, the writer (also for pushes), the command and its arguments
  // (core/execute.cc). The caller then sets client, locked, in_exec, the
  // lookup flags and its out-parameters.
  void Bind(RespServer* srv, WorkerStats* st, engine::ThreadStats* thread_stats, Effects* effects,
            ConnState* cs, RespWriter* writer, const CommandSpec* cmd,
            std::span<const std::string_view> args);

  size_t argc() const { return argv.size(); }
  int db() const {
    return script_db != nullptr && *script_db >= 0 ? *script_db : conn->identity().db();
  }
  // The engine key of argv[i] in the selected database.
  std::string Key(size_t i) const;
  std::string EncodeKey(std::string_view k) const;
  void Error(std::string_view msg) const { w->Error(msg); }
  void SyntaxError() const { w->Error("ERR syntax error"); }
  void WrongType() const {
    w->Error("WRONGTYPE Operation against a key holding the wrong kind of value");
  }
  void NotInteger() const { w->Error("ERR value is not an integer or out of range"); }
  void NotFloat() const { w->Error("ERR value is not a valid float"); }
  // Redis's ERR wrong number of arguments for '<name>' command.
  void WrongArity() const;
};

// Appends every command family's commands to t, in the order of
// commands/families.cc (the one list of families; the command table calls it).
void RegisterCommandFamilies(std::vector<CommandSpec>* t);

}  // namespace trove::resp
