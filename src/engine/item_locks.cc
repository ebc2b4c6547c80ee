// ItemLocks: stripe mutexes plus the per-thread held-stripe record the
// eviction try-lock consults. Any thread.
#include "engine/item_locks.h"

#include <vector>

namespace trove::engine {

namespace {
struct Held {
  const ItemLocks* owner;
  uint32_t stripe;
};
// Usually 0 or 1 entries; KeyLockSet and expansion push more. The vector
// keeps its capacity, so steady-state locking allocates nothing.
thread_local std::vector<Held> t_held;
}  // namespace

ItemLocks::ItemLocks(int power)
    : power_(power), mask_((1u << power) - 1), locks_(new Padded[size_t{1} << power]) {}

void ItemLocks::Lock(uint32_t stripe) NO_THREAD_SAFETY_ANALYSIS {
  // Relocking our own stripe would deadlock: a caller holding a KeyLockSet
  // must use the *Locked operations for its keys.
  DCHECK(!HeldByMe(stripe));
  locks_[stripe].mu.Lock();
  t_held.push_back({this, stripe});
}

void ItemLocks::Unlock(uint32_t stripe) NO_THREAD_SAFETY_ANALYSIS {
  for (size_t i = t_held.size(); i-- > 0;) {
    if (t_held[i].owner == this && t_held[i].stripe == stripe) {
      t_held[i] = t_held.back();
      t_held.pop_back();
      break;
    }
  }
  locks_[stripe].mu.Unlock();
}

bool ItemLocks::HeldByMe(uint32_t stripe) const {
  for (const Held& h : t_held) {
    if (h.owner == this && h.stripe == stripe) return true;
  }
  return false;
}

bool ItemLocks::TryLock(uint32_t stripe) NO_THREAD_SAFETY_ANALYSIS {
  // try_lock on a mutex this thread already owns is undefined: check first.
  if (HeldByMe(stripe)) return false;
  if (!locks_[stripe].mu.TryLock()) return false;
  t_held.push_back({this, stripe});
  return true;
}

void ItemLocks::AssertHeld(uint32_t stripe) const {
  locks_[stripe].mu.AssertHeld();
}

void ItemLocks::LockAll() NO_THREAD_SAFETY_ANALYSIS {
  // Called holding none of these stripes (the expander, a script's or
  // SORT's exclusive rerun): checked once here, since Lock's per-stripe
  // check scans every stripe held so far and made this quadratic (about
  // 0.25 s for 8,192 stripes in a debug build).
  for ([[maybe_unused]] const Held& h : t_held) DCHECK(h.owner != this);
  t_held.reserve(t_held.size() + mask_ + 1);
  for (uint32_t i = 0; i <= mask_; ++i) {
    locks_[i].mu.Lock();
    t_held.push_back({this, i});
  }
}

void ItemLocks::UnlockAll() NO_THREAD_SAFETY_ANALYSIS {
  for (uint32_t i = mask_ + 1; i-- > 0;) Unlock(i);
}

}  // namespace trove::engine
