// Debug lock-rank checking for Mutex (see mutex.h). Runs on every thread.
#include "common/mutex.h"

namespace trove::detail {

namespace {
constexpr int kMaxHeld = 64;
struct HeldRanks {
  int n = 0;
  LockRank r[kMaxHeld];
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
  CHECK(held.n < kMaxHeld);
  held.r[held.n++] = r;
}

void PopRank(LockRank r) {
  if (r == LockRank::kNone) return;
  // Locks may be released out of order; remove the newest matching entry.
  for (int i = held.n - 1; i >= 0; --i) {
    if (held.r[i] == r) {
      for (int j = i; j + 1 < held.n; ++j) held.r[j] = held.r[j + 1];
      --held.n;
      return;
    }
  }
}

}  // namespace trove::detail
