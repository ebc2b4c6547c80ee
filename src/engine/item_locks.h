// ItemLocks: the fixed table of item (stripe) locks, indexed by key hash, and
// the thread_local record of which stripes this thread holds. Any thread.
#pragma once

#include <cstdint>
#include <memory>

#include "common/mutex.h"

namespace trove::engine {

// LOCKS — the one statement of the engine's lock order (the rules around it:
// docs/THREADS.md, "Lock rules"):
//
//   item stripe  ->  LRU segment  ->  slabs  ->  stats (leaf)
//
//  * A thread holding a stripe may take an LRU lock, then the slabs lock.
//    Several stripes are taken only in ascending stripe order (KeyLockSet,
//    hash-table expansion), never while holding an LRU or slabs lock.
//  * The only reverse step is LRU -> stripe *try*-lock: the eviction tail walk,
//    the LRU maintainer and the crawler hold an LRU lock and try-lock each
//    candidate's stripe, skipping it when busy or when this thread already
//    holds it (HeldByMe: allocating inside Arith/append or a KeyLockSet).
//  * Background control locks (LockRank::kBackground) come before stripes.
//  * Stats counters are relaxed atomics; the stats registry lock is a leaf.
// Debug builds check the ranks (common/mutex.h) and that a stripe is held
// where a *Locked function requires it (AssertHeld).
//
// Thread safety: all methods are thread-safe. Invariant: a stripe appears in
// this thread's held record exactly while this thread holds it.
class ItemLocks {
 public:
  explicit ItemLocks(int power);
  ItemLocks(const ItemLocks&) = delete;
  ItemLocks& operator=(const ItemLocks&) = delete;

  uint32_t StripeOf(uint64_t hv) const { return static_cast<uint32_t>(hv) & mask_; }
  uint32_t count() const { return mask_ + 1; }
  int power() const { return power_; }

  // Striped locks cannot be named in annotations: callers document
  // "REQUIRES: stripe(hv) held" and debug builds check it (AssertHeld).
  void Lock(uint32_t stripe) NO_THREAD_SAFETY_ANALYSIS;
  void Unlock(uint32_t stripe) NO_THREAD_SAFETY_ANALYSIS;
  // Never waits. False when busy or already held by this thread.
  bool TryLock(uint32_t stripe) NO_THREAD_SAFETY_ANALYSIS;
  bool HeldByMe(uint32_t stripe) const;
  // A hint: brings the stripe's lock into this core's cache, for writing.
  void Prefetch(uint32_t stripe) const { __builtin_prefetch(&locks_[stripe], 1); }
  void AssertHeld(uint32_t stripe) const;
  // Every stripe in ascending order: a barrier against all table users.
  void LockAll() NO_THREAD_SAFETY_ANALYSIS;
  void UnlockAll() NO_THREAD_SAFETY_ANALYSIS;

 private:
  struct alignas(64) Padded {
    Mutex mu{LockRank::kItemStripe};
  };
  int power_;
  uint32_t mask_;
  std::unique_ptr<Padded[]> locks_;
};

// RAII stripe lock for one key.
class StripeLock {
 public:
  StripeLock(ItemLocks* locks, uint32_t stripe) : locks_(locks), stripe_(stripe) {
    locks_->Lock(stripe_);
  }
  ~StripeLock() { locks_->Unlock(stripe_); }
  StripeLock(const StripeLock&) = delete;
  StripeLock& operator=(const StripeLock&) = delete;

 private:
  ItemLocks* locks_;
  uint32_t stripe_;
};

}  // namespace trove::engine
