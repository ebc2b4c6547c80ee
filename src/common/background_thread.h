// BackgroundThread: starts and stops one background thread whose loop sleeps
// on its owner's Mutex and CondVar (LRU maintainer, crawler, slab rebalancer,
// log collector). Start/Stop run on the owner's control thread.
#pragma once

#include <atomic>
#include <functional>
#include <thread>

#include "common/mutex.h"
#include "common/non_copyable.h"
#include "common/thread_annotations.h"

namespace trove {

// Owner: the class whose loop runs on the thread. It keeps the Mutex and the
// CondVar (they also guard and signal its own requests) and declares this
// member after them, so they outlive the join in the destructor.
// Thread safety: Start, Stop and running() from the owner's control thread;
// stopping() from any thread holding *mu (the loop, between its waits).
// Invariants:
//  1. The stop flag changes only under *mu, and Stop signals the CondVar
//     while holding it: a loop that reads stopping() and then waits under *mu
//     cannot miss the wake-up.
//  2. When Stop returns the thread is joined; a later Start runs a new one.
class BackgroundThread : NonCopyable {
 public:
  BackgroundThread(Mutex* mu, CondVar* cv) : mu_(mu), cv_(cv) {}
  ~BackgroundThread() { Stop(); }

  // Runs `loop` on a new thread; a no-op while one runs. REQUIRES: *mu not
  // held. The loop returns once it sees stopping().
  void Start(std::function<void()> loop) EXCLUDES(mu_);
  // Sets the stop flag, wakes the loop and joins it; a no-op when no thread
  // runs. REQUIRES: *mu not held.
  void Stop() EXCLUDES(mu_);
  bool running() const { return thread_.joinable(); }
  // REQUIRES: *mu held, so that a wait that follows cannot miss Stop's
  // signal (invariant 1). Not checked with AssertHeld: a CondVar wait does
  // not restore the Mutex's debug owner.
  bool stopping() const { return stop_.load(std::memory_order_relaxed); }

 private:
  Mutex* const mu_;
  CondVar* const cv_;
  // Written under *mu; read under it too, so relaxed (the lock orders it).
  // Atomic only because the analysis cannot see that the loop's lock is *mu.
  std::atomic<bool> stop_{false};
  std::thread thread_;  // owner's control thread only
};

}  // namespace trove
