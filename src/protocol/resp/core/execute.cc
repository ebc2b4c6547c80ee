// The command seam (execute.h). Runs on the caller's worker.
#include "protocol/resp/core/execute.h"

#include <optional>

#include "common/check.h"
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
// Given-back buffers: a worker needs one per nesting level.
constexpr size_t kKeepLeases = 4;
thread_local std::vector<ExecBuffers> tl_exec_buffers;
}  // namespace

ExecBuffersLease::ExecBuffersLease() {
  auto& free = tl_exec_buffers;
  if (!free.empty()) {
    buf_ = std::move(free.back());
    free.pop_back();
  }
}

ExecBuffersLease::~ExecBuffersLease() {
  auto& free = tl_exec_buffers;
  if (free.size() < kKeepLeases) free.push_back(std::move(buf_));
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
    const int me = ctx.client != nullptr && ctx.client->control() != nullptr
                       ? ctx.client->control()->worker_id()
                       : -1;
    if (me >= 0 && ctx.server != nullptr && ctx.server->busy_scripts().any()) {
      // A script busy on another worker may take one of these stripes after
      // the caller's BUSY check and then never let go: wait for the stripes
      // only while no busy script holds one (busy_scripts.h), else BUSY.
      std::vector<uint32_t> stripes;  // only while a script is busy
      for (std::string_view k : buf->views) stripes.push_back(ctx.engine->KeyStripe(k));
      bool is_eval = true;
      BusyScripts& busy = ctx.server->busy_scripts();
      lock.emplace(ctx.engine, buf->views,
                   [&] { return busy.Holds(me, stripes, false, &is_eval); });
      if (!lock->held()) {
        ctx.w->Error(BusyScripts::BusyError(is_eval));
        return;
      }
    } else {
      lock.emplace(ctx.engine, buf->views);
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
