// SlicedWalk: slices of a keyspace walk, continued as tasks on the worker.
#include "protocol/resp/core/keyspace_walk.h"

#include "common/limits.h"
#include "net/worker.h"
#include "net/connection.h"
#include "protocol/resp/core/client.h"

namespace trove::resp {
namespace {

// One slice: buckets in groups of 1024 until about a millisecond has passed.
// With a session (null inside EXEC) and reply_bytes, stops early, killed,
// once out plus the reply so far pass the session's output limit.
bool Step(SlicedWalk& w, Client* s, const net::OutputBuffer* out) {
  const Clock* clock = w.engine->clock();
  const int64_t t0 = clock->MonoNanos();
  do {
    w.cursor = w.engine->Scan(w.cursor, 1024, w.visit);
    if (w.after_slice) w.after_slice();
    if (s != nullptr && w.reply_bytes != nullptr && s->OutputOverLimit(*out, *w.reply_bytes)) {
      w.killed = true;
      return true;
    }
  } while (w.cursor != 0 && clock->MonoNanos() - t0 < limits::kWalkSliceNanos);
  return w.cursor == 0;
}

void Continue(net::Worker* worker, std::shared_ptr<SlicedWalk> walk) {
  worker->Post([worker, walk] {
    net::Connection* c = worker->Find(walk->conn_id);
    if (c == nullptr) return;  // the client left: drop the walk
    // Only RESP connections run walks, so the handler is one.
    Client* s = ClientOfHandler(c->handler.get());
    if (!Step(*walk, s, &c->output())) {
      Continue(worker, walk);
      return;
    }
    if (walk->killed) {
      s->KillForOutputLimit(c->output());
      return;
    }
    RespWriter w(&c->output(), walk->proto);
    walk->finish(w);
    c->OutputAdded();
    c->Resume();
  });
}

}  // namespace

void RunSlicedWalk(CommandContext& ctx, std::shared_ptr<SlicedWalk> walk) {
  net::ConnControl* self = ctx.client != nullptr ? ctx.client->control() : nullptr;
  net::Worker* worker = net::Worker::Current();
  Client* s = ctx.in_exec ? nullptr : ctx.client;
  if (self == nullptr || worker == nullptr || ctx.in_exec) {
    while (!Step(*walk, s, ctx.w->out())) {
    }
  } else if (!Step(*walk, s, ctx.w->out())) {
    walk->conn_id = self->id();
    walk->proto = ctx.w->proto();
    self->Suspend();
    Continue(worker, std::move(walk));
    return;
  }
  if (walk->killed) {
    s->KillForOutputLimit(*ctx.w->out());
    return;
  }
  walk->finish(*ctx.w);
}

}  // namespace trove::resp
