// Debug lock-rank checking for Mutex (see mutex.h). Runs on every thread.
#include "common/mutex.h"

namespace trove::detail {

namespace {
// Held ranks, run-length encoded: LockAll takes every item stripe (thousands
// of locks of one rank) during hash-table growth, which overflowed a plain
// 64-entry stack. Distinct ranks held at once stay few.
constexpr int kMaxHeld = 64;
struct HeldRanks {
  int n = 0;
  LockRank r[kMaxHeld];
  uint32_t count[kMaxHeld];
};
thread_local HeldRanks held;
}  // namespace

void PushRank(LockRank r, bool is_try) {
  if (r == LockRank::kNone) return;
  // A blocking lock must rank strictly above every ranked lock already held;
  // equal ranks (two item stripes) are allowed only by try-lock, or in
  // ascending stripe order, which the caller guarantees and CHECKs itself.
  if (!is_try && held.n > 0) {
    LockRank top = held.r[held.n - 1];
    if (static_cast<int>(r) < static_cast<int>(top)) {
      std::fprintf(stderr, "lock order violation: taking rank %d while holding %d\n",
                   static_cast<int>(r), static_cast<int>(top));
      std::abort();
    }
  }
  if (held.n > 0 && held.r[held.n - 1] == r) {
    ++held.count[held.n - 1];
    return;
  }
  CHECK(held.n < kMaxHeld);
  held.r[held.n] = r;
  held.count[held.n] = 1;
  ++held.n;
}

void PopRank(LockRank r) {
  if (r == LockRank::kNone) return;
  // Locks may be released out of order; remove from the newest matching entry.
  for (int i = held.n - 1; i >= 0; --i) {
    if (held.r[i] == r) {
      if (--held.count[i] > 0) return;
      for (int j = i; j + 1 < held.n; ++j) {
        held.r[j] = held.r[j + 1];
        held.count[j] = held.count[j + 1];
      }
      --held.n;
      // Two runs of one rank may now touch: merge them.
      if (i > 0 && i < held.n && held.r[i - 1] == held.r[i]) {
        held.count[i - 1] += held.count[i];
        for (int j = i; j + 1 < held.n; ++j) {
          held.r[j] = held.r[j + 1];
          held.count[j] = held.count[j + 1];
        }
        --held.n;
      }
      return;
    }
  }
}

}  // namespace trove::detail
