// BackgroundThread: start and stop of an owner's background loop. Runs on the
// owner's control thread.
#include "common/background_thread.h"

#include <utility>

namespace trove {

void BackgroundThread::Start(std::function<void()> loop) {
  if (thread_.joinable()) return;
  {
    MutexLock l(mu_);
    stop_.store(false, std::memory_order_relaxed);
  }
  thread_ = std::thread(std::move(loop));
}

void BackgroundThread::Stop() {
  if (!thread_.joinable()) return;
  {
    MutexLock l(mu_);
    stop_.store(true, std::memory_order_relaxed);
    cv_->SignalAll();
  }
  thread_.join();
}

}  // namespace trove
