// The command seam (execute.h). Runs on the caller's worker.
#include "protocol/resp/core/execute.h"

#include <memory>
#include <optional>

#include "common/check.h"
#include "net/protocol_handler.h"
#include "protocol/resp/core/command_table.h"
#include "protocol/resp/core/resp_server.h"
#include "protocol/resp/services/busy_scripts.h"

namespace trove::resp {

void CommandContext::Bind(RespServer* srv, WorkerStats* st, engine::ThreadStats* thread_stats,
                          Effects* effects, ConnState* cs, RespWriter* writer,
                          const CommandSpec* cmd, std::span<const std::string_view> args) {
  server = srv;
  stats = st;
  engine = srv->engine();
  ts = thread_stats;
  fx = effects;
  conn = cs;
  w = writer;
  push = writer;
  spec = cmd;
  argv = args;
}
namespace {

// The engine keys of ctx's command, in buf->keys with views in buf->views.
void EncodeKeys(CommandContext& ctx, ExecBuffers* buf) {
  buf->keys.resize(buf->idx.size());
  buf->views.clear();
  for (size_t j = 0; j < buf->idx.size(); ++j) {
    buf->keys[j] = ctx.Key(buf->idx[j]);
    buf->views.push_back(buf->keys[j]);
  }
}

// A command that found the stripe of a key it did not name busy before it
// changed or replied anything (a script's undeclared key, a key SORT's
// BY/GET pattern names) runs again from the start holding every stripe (the
// cost: it waits for every command in flight and holds up every other
// worker's key access while it runs; docs/resp.md, "Scripting", "SORT").
// buf holds the command's keys when it has any (EncodeKeys ran): a write's
// changes to them are recorded as on the first run.
void RunExclusive(CommandContext& ctx, ExecBuffers* buf) {
  ctx.want_exclusive = false;
  ctx.can_go_exclusive = false;
  ctx.engine->LockAllKeyStripes();
  ctx.locked = true;
  ctx.exclusive = true;
  if (ctx.notify == 0 || buf->idx.empty()) {
    ctx.spec->fn(ctx);
  } else {
    RunRecordingChanges(ctx, buf->idx, buf->views, &buf->changes);
  }
  ctx.exclusive = false;
  ctx.locked = false;
  ctx.engine->UnlockAllKeyStripes();
}

}  // namespace

namespace {
// One ExecBuffers per nesting level, made once per level and kept: a lease
// is an index, never a move or an allocation after the first use.
thread_local std::vector<std::unique_ptr<ExecBuffers>> tl_exec_buffers;
thread_local size_t tl_exec_depth = 0;
}  // namespace

ExecBuffersLease::ExecBuffersLease() {
  auto& levels = tl_exec_buffers;
  if (tl_exec_depth == levels.size()) levels.push_back(std::make_unique<ExecBuffers>());
  buf_ = levels[tl_exec_depth++].get();
}

ExecBuffersLease::~ExecBuffersLease() {
  DCHECK(tl_exec_depth > 0 && tl_exec_buffers[tl_exec_depth - 1].get() == buf_);
  --tl_exec_depth;
}

bool LockKeysUnlessBusy(CommandContext& ctx, std::span<const std::string_view> keys,
                        std::optional<engine::KeyLockSet>* lock, bool* is_eval) {
  BusyScripts* busy = ctx.server != nullptr ? &ctx.server->busy_scripts() : nullptr;
  net::ConnControl* control =
      busy != nullptr && busy->any() && ctx.client != nullptr ? ctx.client->control() : nullptr;
  if (control == nullptr) {  // the usual case: nothing busy, a plain wait
    lock->emplace(ctx.engine, keys);
    return true;
  }
  const int me = control->worker_id();
  std::vector<uint32_t> stripes;  // only while a script is busy
  stripes.reserve(keys.size());
  for (std::string_view k : keys) stripes.push_back(ctx.engine->KeyStripe(k));
  lock->emplace(ctx.engine, keys, [&] { return busy->Holds(me, stripes, false, is_eval); });
  if (lock->value().held()) return true;
  lock->reset();
  return false;
}

void ExecuteCommand(CommandContext& ctx, ExecBuffers* buf) {
  DCHECK(ctx.fx != nullptr);
  const CommandSpec& spec = *ctx.spec;
  const bool diff = ctx.notify != 0 && (spec.flags & kCmdWrite) != 0;
  if (ctx.locked) {
    if (!diff) {
      spec.fn(ctx);
      return;
    }
    // The stripes are held; the keys are needed for the comparison.
    CommandTable::KeyIndexes(spec, ctx.argv, &buf->idx);
    EncodeKeys(ctx, buf);
    RunRecordingChanges(ctx, buf->idx, buf->views, &buf->changes);
    return;
  }
  if ((spec.flags & kCmdGlobal) != 0) {
    spec.fn(ctx);
    return;
  }
  CommandTable::KeyIndexes(spec, ctx.argv, &buf->idx);
  // The seam takes the stripes itself here, so it can run the handler again
  // holding every stripe if the handler asks (EVAL and FCALL touching keys
  // they did not declare, SORT with BY/GET patterns).
  ctx.can_go_exclusive = true;
  if (buf->idx.empty()) {
    spec.fn(ctx);
  } else {
    EncodeKeys(ctx, buf);
    std::optional<engine::KeyLockSet> lock;
    bool is_eval = true;
    if (!LockKeysUnlessBusy(ctx, buf->views, &lock, &is_eval)) {
      ctx.w->Error(BusyScripts::BusyError(is_eval));
      return;
    }
    ctx.locked = true;
    if (ctx.notify == 0) {
      spec.fn(ctx);  // the usual case: no notifications, no comparison
    } else {
      RunRecordingChanges(ctx, buf->idx, buf->views, &buf->changes);
    }
    ctx.locked = false;
  }
  if (ctx.want_exclusive) RunExclusive(ctx, buf);
}

}  // namespace trove::resp
