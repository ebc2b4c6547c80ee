// WorkerGroup (worker_group.h): reaching another worker's connection, and
// input fences across every worker of the group.
#include "net/worker_group.h"

#include <atomic>
#include <memory>
#include <utility>

#include "common/check.h"
#include "net/worker.h"

namespace trove::net {

EventLoop& WorkerGroup::loop(size_t i) { return workers_[i]->loop(); }

struct Worker::Fence {
  // acq_rel: what each worker served happens before its decrement; the last
  // one posts `done`.
  std::atomic<size_t> left{0};
  EventLoop* origin = nullptr;
  Task done;
};

void WorkerGroup::Fence(Task done) {
  EventLoop* origin = EventLoop::Current();
  CHECK(origin != nullptr);  // only a loop thread can be answered
  auto f = std::make_shared<Worker::Fence>();
  f->left.store(workers_.size(), std::memory_order_relaxed);
  f->origin = origin;
  f->done = std::move(done);
  for (Worker* w : workers_) {
    w->Post([w, f] { w->AddFence(f); });
  }
}

void Worker::AnswerFences() {
  for (std::shared_ptr<Fence>& f : fences_armed_) {
    if (f->left.fetch_sub(1, std::memory_order_acq_rel) == 1) f->origin->Post(std::move(f->done));
  }
  fences_armed_.clear();
  fences_armed_.swap(fences_new_);
}

void WorkerGroup::PostToConn(uint64_t conn_id, ConnFn fn) {
  if (workers_.empty()) return;
  Worker* w = workers_[OwnerOf(conn_id)];
  w->Post([w, conn_id, fn = std::move(fn)] {
    Connection* c = w->Find(conn_id);
    if (c != nullptr) fn(c, c->handler.get());
  });
}

}  // namespace trove::net
