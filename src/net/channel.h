// Channel<T>: a bounded multi-producer, single-consumer queue with an eventfd
// wakeup, the only way other threads reach a worker (docs/THREADS.md). Producers are
// any thread; the consumer is the thread that owns the channel (a worker).
#pragma once

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "common/check.h"
#include "common/mutex.h"
#include "common/non_copyable.h"
#include "common/thread_annotations.h"

namespace trove::net {

// A bounded FIFO of T plus an eventfd that becomes readable when the queue
// goes from empty to non-empty. The consumer polls fd() (epoll) and calls
// Drain(); producers call TrySend() or Send().
//
// Thread safety: TrySend/Send/size are safe from any thread. Drain is for the
// single consumer thread only (several consumers would still be memory-safe but
// would share wakeups unpredictably).
//
// Invariants:
//  1. 0 <= count_ <= capacity_; slots_[head_ .. head_+count_) (mod capacity)
//     hold values, every other slot is empty.
//  2. Whenever count_ > 0, the eventfd is readable or a Drain() is in
//     progress that will re-arm it before returning (no lost wakeup).
//  3. A message is never dropped: TrySend reports a full queue with false and
//     keeps the caller's value; Send waits until there is room.
template <typename T>
class Channel : NonCopyable {
 public:
  explicit Channel(size_t capacity)
      : mu_(LockRank::kLeaf), not_full_(&mu_), slots_(capacity), capacity_(capacity) {
    CHECK(capacity > 0);
    efd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    CHECK(efd_ >= 0);
  }
  ~Channel() { ::close(efd_); }

  // The wakeup fd to poll for readability (never read it directly).
  int fd() const { return efd_; }
  size_t capacity() const { return capacity_; }

  // Appends v unless the queue is full. On false, v is left untouched.
  bool TrySend(T& v) EXCLUDES(mu_) {
    bool was_empty;
    {
      MutexLock l(&mu_);
      if (count_ == capacity_) return false;
      slots_[(head_ + count_) % capacity_].emplace(std::move(v));
      was_empty = count_ == 0;
      ++count_;
    }
    // Only the empty -> non-empty transition needs a wakeup (invariant 2).
    if (was_empty) Wake();
    return true;
  }
  bool TrySend(T&& v) { return TrySend(v); }

  // Appends v, waiting while the queue is full. `while_full()` runs between
  // attempts (a worker sending to another worker uses it to serve its own
  // inbox, so two workers sending to each other cannot deadlock).
  template <typename F>
  void Send(T v, F&& while_full) EXCLUDES(mu_) {
    while (!TrySend(v)) {
      while_full();
      MutexLock l(&mu_);
      if (count_ == capacity_) not_full_.WaitFor(1);
    }
  }
  void Send(T v) {
    Send(std::move(v), [] {});
  }

  // Pops up to `max` values into *out (appending). Returns how many.
  size_t Drain(std::vector<T>* out, size_t max = SIZE_MAX) EXCLUDES(mu_) {
    uint64_t junk;
    // Clear the wakeup first: a send that lands after this read either is
    // popped below or finds the queue empty again and writes a new wakeup.
    ssize_t r = ::read(efd_, &junk, sizeof(junk));
    (void)r;
    size_t n = 0;
    bool more;
    {
      MutexLock l(&mu_);
      while (count_ > 0 && n < max) {
        out->push_back(std::move(*slots_[head_]));
        slots_[head_].reset();
        head_ = (head_ + 1) % capacity_;
        --count_;
        ++n;
      }
      more = count_ > 0;
      if (n > 0) not_full_.SignalAll();
    }
    if (more) Wake();  // invariant 2 for what we left behind
    return n;
  }

  size_t size() const EXCLUDES(mu_) {
    MutexLock l(&mu_);
    return count_;
  }

 private:
  void Wake() {
    uint64_t one = 1;
    ssize_t r;
    do {
      r = ::write(efd_, &one, sizeof(one));
    } while (r < 0 && errno == EINTR);
    // EAGAIN means the counter is saturated: already readable, which is all
    // we need.
  }

  mutable Mutex mu_;
  CondVar not_full_;
  std::vector<std::optional<T>> slots_ GUARDED_BY(mu_);
  size_t head_ GUARDED_BY(mu_) = 0;
  size_t count_ GUARDED_BY(mu_) = 0;
  const size_t capacity_;
  int efd_ = -1;
};

}  // namespace trove::net
