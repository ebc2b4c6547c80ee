// EventLoop: epoll, the timer heap and the inbox of one loop thread.
#include "net/event_loop.h"

#include <unistd.h>

#include <cerrno>
#include <climits>

#include "common/check.h"

namespace trove::net {
namespace {

thread_local EventLoop* tls_loop = nullptr;
constexpr int kMaxEvents = 256;
// Tasks run per inbox drain before the loop looks at I/O again, so a flood
// of messages cannot starve the loop's connections (with 64 KiB published
// messages, 256 per turn meant 16 MB of copying between two PINGs).
constexpr size_t kTasksPerDrain = 64;

}  // namespace

Timer::~Timer() {
  if (loop_ != nullptr) loop_->Cancel(this);
}

EventLoop::EventLoop(const Clock* clock, size_t inbox_capacity)
    : clock_(clock ? clock : SystemClock::Default()), inbox_(inbox_capacity) {}

EventLoop::~EventLoop() {
  // Timers still armed belong to objects that outlive no loop: disarm them
  // so their destructors do not touch a dead heap.
  for (Timer* t : heap_) t->loop_ = nullptr;
  heap_.clear();
  if (tls_loop == this) tls_loop = nullptr;
  if (epoll_fd_ >= 0) ::close(epoll_fd_);
}

Status EventLoop::Init() {
  epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd_ < 0) return Status::FromErrno("epoll_create1");
  return AddFd(inbox_.fd(), EPOLLIN, &inbox_watcher_);
}

void EventLoop::BindToThisThread() { tls_loop = this; }

EventLoop* EventLoop::Current() { return tls_loop; }

Status EventLoop::CtlFd(int op, int fd, uint32_t events, IoWatcher* w, const char* what) {
  epoll_event ev{};
  ev.events = events;
  ev.data.ptr = w;
  if (::epoll_ctl(epoll_fd_, op, fd, &ev) < 0) return Status::FromErrno(what);
  return Status::Ok();
}

Status EventLoop::AddFd(int fd, uint32_t events, IoWatcher* w) {
  return CtlFd(EPOLL_CTL_ADD, fd, events, w, "epoll_ctl add");
}

Status EventLoop::ModFd(int fd, uint32_t events, IoWatcher* w) {
  return CtlFd(EPOLL_CTL_MOD, fd, events, w, "epoll_ctl mod");
}

void EventLoop::DelFd(int fd) { ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr); }

// --- timers: a binary min-heap of Timer*, each knowing its index ---

bool EventLoop::Before(const Timer* a, const Timer* b) const {
  if (a->deadline_ns_ != b->deadline_ns_) return a->deadline_ns_ < b->deadline_ns_;
  return a->seq_ < b->seq_;
}

void EventLoop::HeapSwap(size_t a, size_t b) {
  std::swap(heap_[a], heap_[b]);
  heap_[a]->index_ = a;
  heap_[b]->index_ = b;
}

void EventLoop::HeapUp(size_t i) {
  while (i > 0) {
    size_t parent = (i - 1) / 2;
    if (!Before(heap_[i], heap_[parent])) break;
    HeapSwap(i, parent);
    i = parent;
  }
}

void EventLoop::HeapDown(size_t i) {
  for (;;) {
    size_t l = 2 * i + 1, r = l + 1, m = i;
    if (l < heap_.size() && Before(heap_[l], heap_[m])) m = l;
    if (r < heap_.size() && Before(heap_[r], heap_[m])) m = r;
    if (m == i) return;
    HeapSwap(i, m);
    i = m;
  }
}

void EventLoop::ArmAt(Timer* t, int64_t mono_ns) {
  if (t->loop_ != nullptr) Cancel(t);
  t->loop_ = this;
  t->deadline_ns_ = mono_ns;
  t->seq_ = ++timer_seq_;
  t->index_ = heap_.size();
  heap_.push_back(t);
  HeapUp(t->index_);
}

void EventLoop::Cancel(Timer* t) {
  if (t->loop_ == nullptr) return;
  DCHECK(t->loop_ == this);
  size_t i = t->index_;
  DCHECK(i < heap_.size() && heap_[i] == t);
  size_t last = heap_.size() - 1;
  if (i != last) {
    HeapSwap(i, last);
    heap_.pop_back();
    HeapDown(i);
    HeapUp(i);
  } else {
    heap_.pop_back();
  }
  t->loop_ = nullptr;
}

void EventLoop::RunTimers() {
  if (heap_.empty()) return;
  const int64_t now = NowNs();
  // Only timers due at entry fire this turn: one re-armed for "now" by its
  // own callback waits for the next turn instead of spinning here.
  const uint64_t seq_limit = timer_seq_;
  while (!heap_.empty() && heap_[0]->deadline_ns_ <= now && heap_[0]->seq_ <= seq_limit) {
    Timer* t = heap_[0];
    Cancel(t);
    t->fn_();  // may re-arm or destroy t
  }
}

// --- tasks ---

bool EventLoop::TryPost(Task& t) { return inbox_.TrySend(t); }

void EventLoop::Post(Task t) {
  EventLoop* self = Current();
  inbox_.Send(std::move(t), [self] {
    if (self != nullptr) self->DrainToBacklog();
  });
}

void EventLoop::DrainToBacklog() { inbox_.Drain(&backlog_); }

void EventLoop::RunAll(std::vector<Task>* tasks) {
  for (Task& t : *tasks) {
    t();
    ++tasks_run_;
  }
}

void EventLoop::RunTasks() {
  if (in_tasks_) return;  // a task that runs the loop's tasks again: no nesting
  in_tasks_ = true;
  // The backlog is older than anything still in the inbox (invariant 1). A
  // backlog task that waits in Post refills the backlog with inbox tasks
  // that are older than what is left there, so run the backlog until empty.
  while (!backlog_.empty()) {
    std::vector<Task> old;
    old.swap(backlog_);
    RunAll(&old);
  }
  batch_.clear();
  inbox_.Drain(&batch_, kTasksPerDrain);
  std::vector<Task> run;
  run.swap(batch_);
  RunAll(&run);
  run.clear();
  if (batch_.capacity() < run.capacity()) batch_.swap(run);
  in_tasks_ = false;
}

int EventLoop::PollNow(epoll_event* out, int max) {
  const int n = ::epoll_wait(epoll_fd_, out, max, 0);
  return n < 0 ? 0 : n;
}

void EventLoop::RunOnce(int max_wait_ms) {
  int timeout = max_wait_ms;
  if (!backlog_.empty()) timeout = 0;
  if (!heap_.empty() && timeout != 0) {
    int64_t wait_ns = heap_[0]->deadline_ns_ - NowNs();
    int64_t ms = wait_ns <= 0 ? 0 : (wait_ns + 999999) / 1000000;
    if (ms > INT_MAX) ms = INT_MAX;  // a timer weeks away must not wrap to "forever"
    if (timeout < 0 || ms < timeout) timeout = static_cast<int>(ms);
  }
  epoll_event events[kMaxEvents];
  int n = ::epoll_wait(epoll_fd_, events, kMaxEvents, timeout);
  if (n < 0) {
    CHECK(errno == EINTR);
    n = 0;
  }
  turn_ns_ = NowNs();
  for (int i = 0; i < n; ++i) {
    static_cast<IoWatcher*>(events[i].data.ptr)->OnIoEvent(events[i].events);
  }
  if (after_io_ != nullptr) after_io_->OnIoEvent(0);
  RunTimers();
  if (!backlog_.empty()) RunTasks();
}

}  // namespace trove::net
