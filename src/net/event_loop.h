// EventLoop: the one loop type of every worker and the acceptor: epoll over
// I/O sources of any kind, millisecond timers, and tasks posted from other
// threads through a bounded inbox. Runs on its owner thread; Post from any.
#pragma once

#include <sys/epoll.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/non_copyable.h"
#include "common/status.h"
#include "net/channel.h"

namespace trove::net {

class EventLoop;

// Something that owns an fd registered with a loop: a client connection, a
// listening socket, an outbound backend socket, a channel's eventfd.
class IoWatcher {
 public:
  virtual ~IoWatcher() = default;
  // `events` is epoll's mask (EPOLLIN, EPOLLOUT, EPOLLERR, EPOLLHUP...).
  virtual void OnIoEvent(uint32_t events) = 0;
};

// The watcher of an owner's own queue fd (a loop's inbox, a worker's accept
// channel): every event calls owner->*kOnEvent(), whatever the mask.
template <typename Owner, void (Owner::*kOnEvent)()>
class MemberWatcher final : public IoWatcher {
 public:
  explicit MemberWatcher(Owner* owner) : owner_(owner) {}
  void OnIoEvent(uint32_t) override { (owner_->*kOnEvent)(); }

 private:
  Owner* const owner_;
};

// A move-only callable run once on a loop's thread. Type-erased so that any
// protocol can define its own messages (a published message, a wake-up, a
// reply to a cross-worker request) without net/ knowing them.
class Task {
 public:
  Task() = default;
  template <typename F, typename = std::enable_if_t<!std::is_same_v<std::decay_t<F>, Task>>>
  Task(F f) : impl_(new Impl<F>(std::move(f))) {}  // NOLINT: implicit by design
  Task(Task&&) noexcept = default;
  Task& operator=(Task&&) noexcept = default;
  explicit operator bool() const { return impl_ != nullptr; }
  void operator()() { impl_->Run(); }

 private:
  struct Base {
    virtual ~Base() = default;
    virtual void Run() = 0;
  };
  template <typename F>
  struct Impl final : Base {
    explicit Impl(F f) : fn(std::move(f)) {}
    void Run() override { fn(); }
    F fn;
  };
  std::unique_ptr<Base> impl_;
};

// A timer owned by its user (no allocation to arm, cancel or re-arm), fired
// on its loop's thread. Thread safety: owner loop thread only.
// Invariant: armed() iff the timer is in exactly one loop's heap.
class Timer : NonCopyable {
 public:
  explicit Timer(Task fn) : fn_(std::move(fn)) {}
  ~Timer();
  bool armed() const { return loop_ != nullptr; }
  int64_t deadline_ns() const { return deadline_ns_; }

 private:
  friend class EventLoop;
  Task fn_;
  EventLoop* loop_ = nullptr;  // set while armed
  int64_t deadline_ns_ = 0;
  uint64_t seq_ = 0;  // arming order: equal deadlines fire first-armed first
  size_t index_ = 0;  // position in the loop's heap while armed
};

// Thread safety: everything runs on the owner thread (the one calling Run*)
// except Post/TryPost, which any thread may call.
//
// Invariants:
//  1. Tasks from one sender thread run in the order it posted them; none is
//     ever dropped (a full inbox makes the sender wait, see Post).
//  2. A timer fires at most once per arming, never before its deadline, and
//     timers with the same deadline fire in arming order.
//  3. Nothing here sleeps on the owner thread except epoll_wait, whose
//     timeout is the next timer's deadline (or -1 with none).
class EventLoop : NonCopyable {
 public:
  explicit EventLoop(const Clock* clock = nullptr, size_t inbox_capacity = 1024);
  ~EventLoop();

  // Creates the epoll set and registers the inbox.
  Status Init();
  // Binds the loop to the calling thread (Current() returns it there).
  void BindToThisThread();
  // The loop owned by the calling thread, or nullptr.
  static EventLoop* Current();
  bool OnOwnerThread() const { return Current() == this; }

  // --- I/O sources (owner thread) ---
  Status AddFd(int fd, uint32_t events, IoWatcher* w);
  Status ModFd(int fd, uint32_t events, IoWatcher* w);
  void DelFd(int fd);

  // --- timers (owner thread) ---
  // Arms (or re-arms) t to fire `ms` milliseconds from now.
  void ArmAfter(Timer* t, int64_t ms) { ArmAt(t, NowNs() + ms * 1000000); }
  void ArmAt(Timer* t, int64_t mono_ns);
  void Cancel(Timer* t);
  size_t armed_timers() const { return heap_.size(); }

  // --- tasks (any thread) ---
  // Queues `t` unless the inbox is full; on false `t` is left untouched.
  bool TryPost(Task& t);
  // Queues `t`, waiting while the inbox is full.
  //
  // Why this cannot deadlock: a loop thread that waits here first moves its
  // own inbox into a private backlog and keeps doing so while it waits, so
  // its inbox never stays full because it is waiting. A sender blocked on a
  // loop L therefore waits only for L's thread to drain, and L's thread is
  // either running (it drains at every turn) or itself waiting here, which
  // drains too. No cycle of full inboxes can form. The backlog runs, before
  // anything newer from the inbox, at the waiting thread's next turn (never
  // inside the Post call), so a task never runs in the middle of a handler.
  void Post(Task t);

  // --- running (owner thread) ---
  // Runs after each turn's ready I/O, before its timers and tasks (a worker
  // parses the reads it deferred to order them by arrival). Set before Run*.
  void SetAfterIo(IoWatcher* w) { after_io_ = w; }
  // One turn: waits for I/O up to `max_wait_ms` (-1: until something
  // happens; 0: don't wait), shortened to the next timer; dispatches ready
  // I/O, then due timers, then the backlog and the inbox's tasks.
  void RunOnce(int max_wait_ms);
  // The fds ready now (epoll_wait with no wait), not dispatched: for a
  // caller that handles some of them itself (Worker::ServeWhileBusy);
  // level-triggered, the others are reported again by the next RunOnce.
  int PollNow(epoll_event* out, int max);
  int64_t NowNs() const { return clock_->MonoNanos(); }
  // When this turn's epoll_wait returned: no clock read, precise to a turn
  // (for per-request timing on hot paths; NowNs for deadlines).
  int64_t TurnNs() const { return turn_ns_; }
  const Clock* clock() const { return clock_; }
  // Tasks run so far (tests, stats).
  uint64_t tasks_run() const { return tasks_run_; }

 private:
  // epoll_ctl(op) for fd; `what` names the operation in the error.
  Status CtlFd(int op, int fd, uint32_t events, IoWatcher* w, const char* what);
  void RunTasks();
  // Runs each of `tasks` in order (a task may post more: they go to the
  // inbox or the backlog, never into `tasks`).
  void RunAll(std::vector<Task>* tasks);
  void RunTimers();
  void HeapUp(size_t i);
  void HeapDown(size_t i);
  void HeapSwap(size_t a, size_t b);
  bool Before(const Timer* a, const Timer* b) const;
  // Moves what waits in the inbox into backlog_ (a thread waiting in Post).
  void DrainToBacklog();

  const Clock* clock_;
  int epoll_fd_ = -1;
  Channel<Task> inbox_;
  MemberWatcher<EventLoop, &EventLoop::RunTasks> inbox_watcher_{this};
  // --- owner thread only ---
  std::vector<Timer*> heap_;
  uint64_t timer_seq_ = 0;
  std::vector<Task> backlog_;
  std::vector<Task> batch_;
  int64_t turn_ns_ = 0;
  IoWatcher* after_io_ = nullptr;  // SetAfterIo
  uint64_t tasks_run_ = 0;
  bool in_tasks_ = false;
};

}  // namespace trove::net
