// LruMaintainer: the background thread that moves items between the HOT,
// WARM and COLD segments of every slab class (memcached's LRU maintainer).
#pragma once

#include <atomic>

#include "common/background_thread.h"
#include "common/mutex.h"
#include "engine/engine.h"

namespace trove::engine {

// Owner: Engine::Impl. Thread safety: Start/Stop from the engine owner's
// thread; mu_ (kBackground) guards the sleep and stop flag. The thread takes
// LRU locks and try-locks stripes only (see item_locks.h).
class LruMaintainer {
 public:
  explicit LruMaintainer(Engine::Impl* impl) : impl_(impl) {}
  ~LruMaintainer() { Stop(); }
  void Start() {
    bg_.Start([this] { Loop(); });
  }
  void Stop() { bg_.Stop(); }
  // One pass over every class (also used by tests without the thread).
  int RunOnce();

 private:
  void Loop();
  Engine::Impl* impl_;
  Mutex mu_{LockRank::kBackground};
  CondVar cv_{&mu_};
  BackgroundThread bg_{&mu_, &cv_};  // last: joined before the rest goes
};

}  // namespace trove::engine
