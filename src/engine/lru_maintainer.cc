// LruMaintainer thread: juggles each class's segments, sleeping longer
// while there is nothing to move (1 ms to 1 s, as memcached).
#include "engine/lru_maintainer.h"

#include <algorithm>

#include "engine/engine_impl.h"

namespace trove::engine {

void LruMaintainer::Start() {
  if (thread_.joinable()) return;
  {
    MutexLock l(&mu_);
    stop_ = false;
  }
  thread_ = std::thread([this] { Loop(); });
}

void LruMaintainer::Stop() {
  if (!thread_.joinable()) return;
  {
    MutexLock l(&mu_);
    stop_ = true;
    cv_.SignalAll();
  }
  thread_.join();
}

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
      if (stop_) return;
      cv_.WaitFor(sleep_ms);
      if (stop_) return;
    }
    int did = RunOnce();
    sleep_ms = did > 0 ? 1 : std::min<int64_t>(sleep_ms * 2, 1000);
  }
}

}  // namespace trove::engine
