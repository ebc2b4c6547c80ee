// The command seam: the one path by which a parsed command runs, whoever
// calls it: a connection (connection/session.cc), a transaction (EXEC runs
// each queued command through it under the transaction's stripes), a blocked
// client served on the writer's worker, and next scripts and the proxy's
// internal cache. docs/ARCHITECTURE.md draws it.
//
// The caller fills a CommandContext with its identity (ctx.conn: user,
// database, protocol; ctx.client: its connection services or null), its
// writer and an Effects record; ExecuteCommand takes the command's key
// stripes (unless the caller holds them), runs the handler, and appends the
// command's side effects to ctx.fx. It does not count, log, stage or drain:
// the caller does those once the stripes are released, so every caller
// produces the same effects in the same order.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/engine.h"
#include "protocol/resp/core/command.h"
#include "protocol/resp/services/key_event_rules.h"

namespace trove::resp {

// A caller's buffers, reused between its commands so that the hot path
// allocates nothing.
struct ExecBuffers {
  std::vector<size_t> idx;
  std::vector<std::string> keys;
  std::vector<std::string_view> views;
  KeyChangeBuffers changes;
};

// One ExecBuffers borrowed from its thread's stack for one command's run
// and given back after it: the vectors' grown capacity stays with the worker
// rather than with each connection (an idle connection holds none, issue
// 42), and the hot path neither allocates nor moves a vector. A nested run
// (a connection served while a script is busy) takes the next level.
// Thread safety: the thread that made it only; leases end in reverse order.
class ExecBuffersLease {
 public:
  ExecBuffersLease();
  ~ExecBuffersLease();
  ExecBuffersLease(const ExecBuffersLease&) = delete;
  ExecBuffersLease& operator=(const ExecBuffersLease&) = delete;
  ExecBuffers* get() { return buf_; }
  ExecBuffers* operator->() { return buf_; }

 private:
  ExecBuffers* buf_;
};

// Takes the stripes of `keys` into *lock for ctx's command. While a script
// is busy on another worker (services/busy_scripts.h) it never waits on a
// stripe that script holds: the caller's BUSY check can race with the script
// taking one just after it, and the script may never let go. Returns false
// then, with nothing held and *is_eval saying which BUSY error to answer.
bool LockKeysUnlessBusy(CommandContext& ctx, std::span<const std::string_view> keys,
                        std::optional<engine::KeyLockSet>* lock, bool* is_eval);

// Runs ctx.spec->fn for ctx.argv.
// - ctx.locked true: the caller holds the stripes of every key the command
//   names (EXEC, a blocked client's serve); they stay held.
// - kCmdGlobal commands (keyspace walks) take stripes themselves.
// - otherwise the command's keys are locked here (engine::KeyLockSet) for
//   the handler's duration.
// Requires ctx.fx, ctx.conn, ctx.w, ctx.spec; ctx.notify read by the caller
// (KeyEvents::enabled()) once per command.
void ExecuteCommand(CommandContext& ctx, ExecBuffers* buf);

}  // namespace trove::resp
