// redis.call and redis.pcall: a script as a caller of the command seam. A
// call is checked (as Redis words its refusals), run through ExecuteCommand
// under the stripes the EVAL holds (its declared KEYS), with the EVAL's
// effects record, and its reply, written to a scratch buffer, is parsed into
// Lua values (scripting_convert.cc). Runs on the connection's worker.
#include <sys/uio.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "net/io_buffer.h"
#include "protocol/resp/commands/scripting_internal.h"
#include "protocol/resp/commands/server_commands.h"
#include "protocol/resp/core/command_table.h"
#include "protocol/resp/core/execute.h"
#include "protocol/resp/core/resp_server.h"
#include "protocol/resp/services/latency_histogram.h"
#include "protocol/resp/types/collections.h"
#include "protocol/resp/types/keyspace.h"

namespace trove::resp {
namespace {

// Commands a script may not run (Redis 7.0's noscript flag, for the
// commands Trove has): transactions, subscriptions, connection state, admin,
// scripts, and the blocking commands (Redis 7.0 refuses them too).
bool NoScript(std::string_view name) {
  static constexpr std::string_view kNames[] = {
      "multi",      "exec",       "discard",     "watch",        "unwatch",
      "subscribe",  "psubscribe", "ssubscribe",  "unsubscribe",  "punsubscribe",
      "sunsubscribe", "monitor",  "client",      "acl",          "config",
      "auth",       "hello",      "reset",       "quit",         "shutdown",
      "eval",       "evalsha",    "eval_ro",     "evalsha_ro",   "script",
      "fcall",      "fcall_ro",   "function",
      "blpop",      "brpop",      "blmove",      "brpoplpush",   "blmpop",
      "bzpopmin",   "bzpopmax",   "bzmpop"};
  return std::find(std::begin(kNames), std::end(kNames), name) != std::end(kNames);
}

// Moves out's bytes to *s (replacing it), leaving out empty.
void TakeBytes(net::OutputBuffer& out, std::string* s) {
  s->clear();
  iovec iov[64];
  for (;;) {
    const int n = out.PendingIov(iov, 64);
    if (n <= 0) break;
    size_t total = 0;
    for (int i = 0; i < n; ++i) {
      s->append(static_cast<const char*>(iov[i].iov_base), iov[i].iov_len);
      total += iov[i].iov_len;
    }
    out.Advance(total);
  }
}

// How long a script that already wrote waits for the stripe of a key it did
// not declare before it gives up with an error (another thread holds the
// stripe; it may itself be waiting for one of the script's).
constexpr auto kUndeclaredWait = std::chrono::milliseconds(100);

// Takes the stripe of k, a key the script did not declare, for the rest of
// the run, without ever waiting on a lock (so no lock-order cycle can
// form): try-locked; when busy and the script has not written yet, the run
// asks to be run again holding every stripe; when it has written, it
// retries for up to kUndeclaredWait. False with the error's text.
bool LockUndeclared(ScriptRun& run, const std::string& k, std::string_view name,
                    std::string* err) {
  engine::Engine* e = run.ctx->engine;
  using Try = engine::Engine::StripeTry;
  Try t = e->TryLockKeyStripe(k);
  if (t == Try::kBusy && !run.wrote && run.ctx->can_go_exclusive) {
    run.want_exclusive = true;
    *err = "ERR the script runs again holding every key";
    return false;
  }
  const auto deadline = std::chrono::steady_clock::now() + kUndeclaredWait;
  while (t == Try::kBusy && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::yield();
    t = e->TryLockKeyStripe(k);
  }
  if (t == Try::kBusy) {
    *err = "ERR Script attempted to access key '" + std::string(name) +
           "', not declared in KEYS, while another client held it; declare the script's keys "
           "in KEYS";
    return false;
  }
  if (t == Try::kLocked) {
    run.extra_locked.push_back(k);
    // A busy run's new stripe: other workers answer BUSY for it too.
    if (run.busy_worker >= 0)
      run.ctx->server->busy_scripts().AddStripe(run.busy_worker, e->KeyStripe(k));
  }
  return true;
}

// The checks of one call, in Redis's order; false with the error's text.
bool Allowed(ScriptRun& run, const CommandSpec& spec, std::span<const std::string_view> argv,
             std::vector<size_t>* key_idx, std::string* err) {
  CommandContext& ctx = *run.ctx;
  const int argc = static_cast<int>(argv.size());
  if ((spec.arity > 0 && argc != spec.arity) || (spec.arity < 0 && argc < -spec.arity)) {
    *err = "ERR Wrong number of args calling Redis command from script";
    return false;
  }
  if (NoScript(spec.name)) {
    *err = "ERR This Redis command is not allowed from script";
    return false;
  }
  // Keyspace walks suspend and slice across workers.
  if ((spec.flags & kCmdGlobal) != 0) {
    *err = "ERR this command is not supported inside scripts yet";
    return false;
  }
  const Identity& id = ctx.conn->identity();
  if (!id.unrestricted()) {
    const std::shared_ptr<const acl::User>& u = id.acl_user();
    const int slot = HistogramSlots::Get().SlotOf(spec, argv);
    size_t pos = 0;
    const acl::Denied d = u->Check(spec, slot, argv, &pos);
    if (d != acl::Denied::kOk) {
      const std::string_view full =
          slot >= 0 ? std::string_view(HistogramSlots::Get().name(static_cast<size_t>(slot)))
                    : std::string_view(spec.name);
      const std::string_view object = d == acl::Denied::kCmd ? full : argv[pos];
      ctx.server->acl().AddLog(d, "lua", object, u->name(),
                               ctx.client != nullptr ? ctx.client->ClientInfoLine() : "",
                               ctx.server->NowMs());
      // Redis 7.0's words for a script's denied call (not the NOPERM a
      // client's own command gets).
      switch (d) {
        case acl::Denied::kCmd:
          *err = "ERR The user executing the script can't run this command or subcommand";
          break;
        case acl::Denied::kKey:
          *err =
              "ERR The user executing the script can't access at least one of the keys "
              "mentioned in the command";
          break;
        case acl::Denied::kChannel:
          *err =
              "ERR The user executing the script can't publish to the channel mentioned in the "
              "command";
          break;
        default:
          *err = "ERR The user executing the script is lacking the permissions for the command";
      }
      return false;
    }
  }
  const bool write = (spec.flags & kCmdWrite) != 0;
  if (write && run.read_only) {
    *err = "ERR Write commands are not allowed from read-only scripts.";
    return false;
  }
  if (!run.wrote && !run.allow_oom && (spec.flags & kCmdDenyOom) != 0 &&
      ctx.engine->over_mem_limit()) {
    *err = "OOM command not allowed when used memory > 'maxmemory'.";
    return false;
  }
  if (run.exclusive) return true;
  std::vector<size_t>& idx = *key_idx;
  CommandTable::KeyIndexes(spec, argv, &idx);
  for (size_t i : idx) {
    const std::string k = EncodeDbKey(run.db >= 0 ? run.db : ctx.db(), argv[i]);
    if (std::binary_search(run.keys.begin(), run.keys.end(), k)) continue;
    if (!LockUndeclared(run, k, argv[i], err)) return false;
  }
  return true;
}

// Runs a checked call through the seam; its reply's bytes in cs.reply.
void Run(ScriptRun& run, const CommandSpec& spec, std::span<const std::string_view> argv,
         ScriptVm::CallScratch& cs) {
  CommandContext& outer = *run.ctx;
  RespWriter rw(&cs.out, run.resp);
  rw.set_error_sink(outer.w->error_sink());  // a called command's error counts where it arises
  std::vector<ScratchEntry> scratch;  // allocates only if the command decodes a collection
  bool write_failed = false;
  bool would_block = false;
  CommandContext ctx;
  ctx.Bind(outer.server, outer.stats, outer.ts, outer.fx, outer.conn, &rw, &spec, argv);
  ctx.client = outer.client;
  ctx.no_touch = outer.conn->identity().no_touch() && std::string_view(spec.name) != "touch";
  ctx.count_keyspace = (spec.flags & kCmdWrite) == 0 || spec.reads_keys;
  ctx.scratch = &scratch;
  ctx.write_failed = &write_failed;
  // Blocking commands are refused above; should one still find no data, it
  // answers as if timed out rather than block the script's connection.
  ctx.would_block = &would_block;
  ctx.notify = outer.server->key_events().enabled();
  ctx.locked = true;  // the EVAL holds the declared keys' stripes (checked above)
  ctx.exclusive = run.exclusive;  // or every stripe (SORT's patterns then lock nothing)
  ctx.script_db = &run.db;
  ExecBuffers buf;  // used only when notifications are on (the stripes are held)
  ExecuteCommand(ctx, &buf);
  const bool errored = rw.errors() != 0;
  TakeBytes(cs.out, &cs.reply);  // always: the buffer starts empty at the next call
  if (write_failed) {
    cs.reply = "-OOM command not allowed when used memory > 'maxmemory'.\r\n";
  } else if (would_block) {
    cs.reply = run.resp >= 3 ? "_\r\n" : "*-1\r\n";
  }
  if ((spec.flags & kCmdWrite) != 0) run.wrote = true;
  if ((spec.flags & kCmdReadonly) != 0) run.read_called = true;
  // MONITOR shows a script's commands after the script's own line, from
  // the client "lua", as Redis does.
  outer.server->FeedMonitorsAs(spec, argv, ctx.db(), "lua");
  if (outer.stats != nullptr) {
    CommandCounters& c = outer.stats->cmds[static_cast<size_t>(spec.id)];
    c.calls.fetch_add(1, std::memory_order_relaxed);
    if (errored || write_failed) c.failed.fetch_add(1, std::memory_order_relaxed);
    uint64_t dirty = 0;
    if (ctx.dirty != CommandContext::kDirtyUnknown)
      dirty = static_cast<uint64_t>(ctx.dirty);
    else if ((spec.flags & kCmdWrite) != 0 && !errored)
      dirty = 1;
    if (dirty > 0 && !write_failed) outer.stats->dirty.fetch_add(dirty, std::memory_order_relaxed);
  }
}

// Checks and runs the call whose arguments are on L's stack; true with the
// reply's bytes in cs.reply, false with the error's text there (a refusal
// or the command's error reply), *counted when the error was counted in
// errorstats already (a refusal or the command's own error reply; not the
// script's mistakes, which count once as the script's reply if it fails
// with them), as Redis counts them. The arguments are viewed where Lua
// keeps them (integers converted in place, as Redis does); floats are
// formatted as Redis formats them ("%.17g").
bool Call(lua_State* L, ScriptVm::CallScratch& cs, bool* counted) {
  *counted = false;
  ScriptRun* run = CurrentRun(L);
  const int argc = lua_gettop(L);
  if (run == nullptr) {
    cs.reply = "ERR redis.call can only run inside a script";
    return false;
  }
  if (argc == 0) {
    cs.reply = "ERR Please specify at least one argument for this redis lib call";
    return false;
  }
  cs.argv.clear();
  cs.numbers.clear();
  cs.numbers.reserve(static_cast<size_t>(argc));  // views into it stay valid
  for (int i = 1; i <= argc; ++i) {
    const int t = lua_type(L, i);
    if (t == LUA_TNUMBER && !lua_isinteger(L, i)) {
      char num[64];
      const int n = std::snprintf(num, sizeof num, "%.17g", lua_tonumber(L, i));
      cs.numbers.emplace_back(num, static_cast<size_t>(n));
      cs.argv.push_back(cs.numbers.back());
    } else if (t == LUA_TNUMBER || t == LUA_TSTRING) {
      size_t n;
      const char* s = lua_tolstring(L, i, &n);  // stays on the stack for the call
      cs.argv.emplace_back(s, n);
    } else {
      cs.reply = "ERR Lua redis lib command arguments must be strings or integers";
      return false;
    }
  }
  const std::span<const std::string_view> argv(cs.argv);
  const CommandSpec* spec = CommandTable::Get().Find(argv[0]);
  if (spec == nullptr) {
    cs.reply = "ERR Unknown Redis command called from script";
    return false;
  }
  if (run->want_exclusive) {  // the run is void: it runs again from the start
    cs.reply = "ERR the script runs again holding every key";
    return false;
  }
  if (!Allowed(*run, *spec, argv, &cs.key_idx, &cs.reply)) {
    if (!run->want_exclusive) {
      if (ErrorSink* sink = run->ctx->w->error_sink()) sink->CountError(cs.reply);
      if (run->ctx->stats != nullptr)
        run->ctx->stats->cmds[static_cast<size_t>(spec->id)].rejected.fetch_add(
            1, std::memory_order_relaxed);
      *counted = true;
    }
    return false;
  }
  // A busy run's first write: a kill granted before it wins (the write
  // does not happen); after it the run cannot be killed (busy_scripts.h).
  if ((spec->flags & kCmdWrite) != 0 && run->busy_worker >= 0 && !run->wrote &&
      !run->ctx->server->busy_scripts().MayWrite(run->busy_worker)) {
    run->killed = true;
    cs.reply = kScriptKilledError;
    return false;
  }
  Run(*run, *spec, argv, cs);
  if (!cs.reply.empty() && cs.reply[0] == '-') {
    *counted = true;
    const size_t eol = cs.reply.find('\r');
    cs.reply.erase(eol == std::string::npos ? cs.reply.size() : eol);
    cs.reply.erase(0, 1);
    return false;
  }
  return true;
}

// Pushes the call's result; true when it is an error to raise (always
// when the run is void and must unwind, even from redis.pcall).
bool CallAndPush(lua_State* L, bool raise) {
  ScriptVm::CallScratch& cs = VmOf(L).call;
  bool counted;
  if (!Call(L, cs, &counted)) {
    PushErrTable(L, cs.reply);
    if (counted) {  // Redis's marker: the script's reply does not count it again
      lua_pushboolean(L, 1);
      lua_setfield(L, -2, "ignore_error_stats_update");
    }
    const ScriptRun* run = CurrentRun(L);
    return raise || (run != nullptr && (run->want_exclusive || run->killed));
  }
  size_t pos = 0;
  PushReply(L, cs.reply, &pos);
  return false;
}

// redis.acl_check_cmd's answer for the arguments on L's stack: 1 allowed,
// 0 denied, -1 no such command.
int AclCheck(lua_State* L) {
  const ScriptRun* run = CurrentRun(L);
  const int argc = lua_gettop(L);
  std::vector<std::string> args;
  for (int i = 1; i <= argc; ++i) {
    size_t n;
    const char* s = lua_tolstring(L, i, &n);
    if (s == nullptr) return -1;
    args.emplace_back(s, n);
  }
  std::vector<std::string_view> argv(args.begin(), args.end());
  const CommandSpec* spec = argv.empty() ? nullptr : CommandTable::Get().Find(argv[0]);
  if (spec == nullptr) return -1;
  if ((spec->arity > 0 && argc != spec->arity) || (spec->arity < 0 && argc < -spec->arity))
    return -2;
  if (run == nullptr) return 1;
  const Identity& id = run->ctx->conn->identity();
  if (id.unrestricted()) return 1;
  const int slot = HistogramSlots::Get().SlotOf(*spec, argv);
  size_t pos = 0;
  return id.acl_user()->Check(*spec, slot, argv, &pos) == acl::Denied::kOk ? 1 : 0;
}

}  // namespace

// No C++ object is alive when lua_error leaves these frames.
int LuaAclCheckCmd(lua_State* L) {
  if (lua_gettop(L) < 1) return luaL_error(L, "Please specify at least one argument for this redis lib call");
  const int r = AclCheck(L);
  if (r == -1) return luaL_error(L, "Invalid command passed to redis.acl_check_cmd()");
  if (r == -2) return luaL_error(L, "Wrong number of args calling Redis command from script");
  lua_pushboolean(L, r);
  return 1;
}

int LuaRedisCall(lua_State* L) {
  if (CallAndPush(L, /*raise=*/true)) return lua_error(L);
  return 1;
}

int LuaRedisPCall(lua_State* L) {
  CallAndPush(L, /*raise=*/false);
  return 1;
}

}  // namespace trove::resp
