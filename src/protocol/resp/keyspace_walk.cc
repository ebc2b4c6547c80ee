// SlicedWalk: slices of a keyspace walk, continued as tasks on the worker.
#include "protocol/resp/keyspace_walk.h"

#include "common/limits.h"
#include "net/worker.h"
#include "protocol/resp/session.h"

namespace trove::resp {
namespace {

// One slice: buckets in groups of 1024 until about a millisecond has passed.
bool Step(SlicedWalk& w) {
  const Clock* clock = w.engine->clock();
  const int64_t t0 = clock->MonoNanos();
  do {
    w.cursor = w.engine->Scan(w.cursor, 1024, w.visit);
    if (w.after_slice) w.after_slice();
  } while (w.cursor != 0 && clock->MonoNanos() - t0 < limits::kWalkSliceNanos);
  return w.cursor == 0;
}

void Continue(net::Worker* worker, std::shared_ptr<SlicedWalk> walk) {
  worker->Post([worker, walk] {
    net::Connection* c = worker->Find(walk->conn_id);
    if (c == nullptr) return;  // the client left: drop the walk
    if (!Step(*walk)) {
      Continue(worker, walk);
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
  net::ConnControl* self = ctx.session != nullptr ? ctx.session->control() : nullptr;
  net::Worker* worker = net::Worker::Current();
  if (self == nullptr || worker == nullptr || ctx.in_exec) {
    while (!Step(*walk)) {
    }
    walk->finish(*ctx.w);
    return;
  }
  if (Step(*walk)) {
    walk->finish(*ctx.w);
    return;
  }
  walk->conn_id = self->id();
  walk->proto = ctx.w->proto();
  self->Suspend();
  Continue(worker, std::move(walk));
}

}  // namespace trove::resp
