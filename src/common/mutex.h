// Mutex / MutexLock: the only lock types Trove code uses (std::mutex is
// unannotated). Debug builds rank every Mutex, keep a thread_local stack of held
// ranks and DCHECK that ranks only rise; AssertHeld() checks the owner.
// Any thread may use these.
#pragma once

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "common/check.h"
#include "common/thread_annotations.h"

namespace trove {

// Lock ranks, lowest taken first. The engine's order (see engine/item_locks.h):
// item stripe -> LRU segment -> slab allocator -> stats (leaf). Background
// control locks sit before the item stripes because their holders take items.
enum class LockRank : int {
  kNone = 0,        // unranked: never checked (tests, leaf helpers)
  kBackground = 10, // maintainer / crawler / rebalancer control locks
  kItemStripe = 20,
  kLru = 30,
  kSlabs = 40,
  kStats = 50,
  kLeaf = 60,       // locks that never take another lock
};

namespace detail {
// Debug-only rank bookkeeping; no-ops in release.
void PushRank(LockRank r, bool is_try);
void PopRank(LockRank r);
}  // namespace detail

class CAPABILITY("mutex") Mutex {
 public:
  explicit Mutex(LockRank rank = LockRank::kNone) : rank_(rank) {}
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() ACQUIRE() {
#if TROVE_DEBUG
    detail::PushRank(rank_, false);
#endif
    mu_.lock();
#if TROVE_DEBUG
    owner_.store(std::this_thread::get_id(), std::memory_order_relaxed);
#endif
  }
  // A try-lock may go against the order (the LRU tail walk): it never waits.
  bool TryLock() TRY_ACQUIRE(true) {
    if (!mu_.try_lock()) return false;
#if TROVE_DEBUG
    detail::PushRank(rank_, true);
    owner_.store(std::this_thread::get_id(), std::memory_order_relaxed);
#endif
    return true;
  }
  void Unlock() RELEASE() {
#if TROVE_DEBUG
    owner_.store(std::thread::id(), std::memory_order_relaxed);
    detail::PopRank(rank_);
#endif
    mu_.unlock();
  }
  void AssertHeld() const ASSERT_CAPABILITY(this) {
#if TROVE_DEBUG
    CHECK(owner_.load(std::memory_order_relaxed) == std::this_thread::get_id());
#endif
  }
  void set_rank(LockRank r) { rank_ = r; }
  std::mutex& native() { return mu_; }

 private:
  friend class CondVar;
  // A CondVar wait gives mu_ up and takes it back: the owner follows, so
  // AssertHeld holds after the wait (another thread may have held it meanwhile).
  void OwnerLeavesForWait() {
#if TROVE_DEBUG
    owner_.store(std::thread::id(), std::memory_order_relaxed);
#endif
  }
  void OwnerBackFromWait() {
#if TROVE_DEBUG
    owner_.store(std::this_thread::get_id(), std::memory_order_relaxed);
#endif
  }

  std::mutex mu_;
  LockRank rank_;
#if TROVE_DEBUG
  std::atomic<std::thread::id> owner_{};
#endif
};

class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex* mu) ACQUIRE(mu) : mu_(mu) { mu_->Lock(); }
  ~MutexLock() RELEASE() { mu_->Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex* mu_;
};

// Condition variable over a Mutex (used by background threads to sleep).
class CondVar {
 public:
  explicit CondVar(Mutex* mu) : mu_(mu) {}
  // REQUIRES: mu held. Waits up to `ms` milliseconds or until signalled.
  void WaitFor(int64_t ms) {
    std::unique_lock<std::mutex> lk(mu_->native(), std::adopt_lock);
    mu_->OwnerLeavesForWait();
    cv_.wait_for(lk, std::chrono::milliseconds(ms));
    mu_->OwnerBackFromWait();
    lk.release();
  }
  void Wait() {
    std::unique_lock<std::mutex> lk(mu_->native(), std::adopt_lock);
    mu_->OwnerLeavesForWait();
    cv_.wait(lk);
    mu_->OwnerBackFromWait();
    lk.release();
  }
  void Signal() { cv_.notify_one(); }
  void SignalAll() { cv_.notify_all(); }

 private:
  Mutex* mu_;
  std::condition_variable cv_;
};

}  // namespace trove
