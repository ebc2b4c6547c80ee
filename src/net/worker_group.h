// WorkerGroup: every worker of a server, as the workers see each other: post
// a task to the owner of a connection, or run a task on every worker and
// gather the answers back on the asking worker. Built by NetServer.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "common/check.h"
#include "net/event_loop.h"
#include "net/protocol_handler.h"

namespace trove::net {

class Worker;

// Thread safety: size/OwnerOf/Post* from any thread once the workers run;
// the functions passed in run on the workers named.
class WorkerGroup {
 public:
  void Add(Worker* w) { workers_.push_back(w); }
  size_t size() const { return workers_.size(); }
  Worker& worker(size_t i) { return *workers_[i]; }
  EventLoop& loop(size_t i);
  // The worker that owns connection `conn_id` (the acceptor's round-robin).
  size_t OwnerOf(uint64_t conn_id) const { return conn_id % workers_.size(); }

  // Runs fn(control, handler) on the owner of `conn_id` if that connection
  // is still open there when the task runs; otherwise fn is dropped.
  using ConnFn = std::function<void(ConnControl*, ProtocolHandler*)>;
  void PostToConn(uint64_t conn_id, ConnFn fn);

  // Runs each(worker) on every worker, then done(answers) back on the loop
  // of the calling thread (a worker), answers in worker order. Nothing
  // waits: the last worker to answer posts `done` to the caller's inbox.
  template <typename T>
  void Gather(std::function<T(Worker&)> each, std::function<void(std::vector<T>)> done);

  // An input fence: runs `done` on the calling worker once every worker
  // (the caller too) has served the input that had reached it when Fence
  // was called, i.e. has ended one loop turn whose epoll_wait began after
  // the request reached it. Nothing waits; every loop keeps running. RESP
  // serves blocked clients after a fence, so that a blocking command that
  // reached another worker before the write that serves it is in line by
  // then (docs/THREADS.md, "Input fences"). Worker threads only.
  void Fence(Task done);

 private:
  std::vector<Worker*> workers_;
};

// --- template ---

template <typename T>
void WorkerGroup::Gather(std::function<T(Worker&)> each, std::function<void(std::vector<T>)> done) {
  EventLoop* origin = EventLoop::Current();
  CHECK(origin != nullptr);  // only a loop thread can be answered
  struct State {
    std::vector<T> answers;
    // acq_rel: each worker's answer is written before its decrement, and the
    // last decrement (acquire) sees them all before posting done.
    std::atomic<size_t> left;
    std::function<T(Worker&)> each;
    std::function<void(std::vector<T>)> done;
    EventLoop* origin;
  };
  auto st = std::make_shared<State>();
  st->answers.resize(workers_.size());
  st->left.store(workers_.size(), std::memory_order_relaxed);
  st->each = std::move(each);
  st->done = std::move(done);
  st->origin = origin;
  for (size_t i = 0; i < workers_.size(); ++i) {
    Worker* w = workers_[i];
    loop(i).Post([st, w, i] {
      st->answers[i] = st->each(*w);
      if (st->left.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        st->origin->Post([st] { st->done(std::move(st->answers)); });
      }
    });
  }
}

}  // namespace trove::net
