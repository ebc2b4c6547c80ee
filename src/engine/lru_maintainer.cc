// LruMaintainer thread: juggles each class's segments, sleeping longer
// while there is nothing to move (1 ms to 1 s, as memcached).
#include "engine/lru_maintainer.h"

#include <algorithm>

#include "engine/engine_impl.h"

namespace trove::engine {

int LruMaintainer::RunOnce() {
  int did = 0;
  for (int c = 1; c <= impl_->slabs.num_classes(); ++c) did += impl_->Juggle(c);
  impl_->maintainer_juggles.fetch_add(1, std::memory_order_relaxed);
  return did;
}

void LruMaintainer::Loop() {
  int64_t sleep_ms = 1;
  for (;;) {
    {
      MutexLock l(&mu_);
      if (bg_.stopping()) return;
      cv_.WaitFor(sleep_ms);
      if (bg_.stopping()) return;
    }
    int did = RunOnce();
    // memcached's back-off: an idle pass sleeps 1/8 longer (1 ms .. 1 s, so
    // about 9 s of idleness reach the maximum), a pass with moves halves it.
    // Doubling reached 1 s within 2 s, and items set just then stayed in HOT
    // for up to a second (`stats cachedump`, which shows COLD, missed them).
    if (did > 0) {
      sleep_ms = std::max<int64_t>(sleep_ms / 2, 1);
    } else {
      sleep_ms = std::min<int64_t>(sleep_ms + std::max<int64_t>(sleep_ms / 8, 1), 1000);
    }
  }
}

}  // namespace trove::engine
