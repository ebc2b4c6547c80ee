#include "common/background_thread.h"

#include <atomic>
#include <gtest/gtest.h>

namespace trove {
namespace {

// The owner's side, as the engine's background threads use it: a loop that
// sleeps on the owner's CondVar until stopping().
struct Looper {
  void Loop() {
    MutexLock l(&mu);
    while (!bg.stopping()) {
      passes.fetch_add(1, std::memory_order_relaxed);
      cv.WaitFor(60 * 1000);  // only Stop (or a spurious wake-up) ends a wait
    }
  }
  Mutex mu{LockRank::kBackground};
  CondVar cv{&mu};
  std::atomic<int> passes{0};
  BackgroundThread bg{&mu, &cv};
};

TEST(BackgroundThreadTest, StopWakesTheLoopAndJoins) {
  Looper o;
  EXPECT_FALSE(o.bg.running());
  o.bg.Start([&o] { o.Loop(); });
  EXPECT_TRUE(o.bg.running());
  o.bg.Stop();
  EXPECT_FALSE(o.bg.running());
}

TEST(BackgroundThreadTest, StartWhileRunningIsANoOp) {
  Looper o;
  std::atomic<int> started{0};
  o.bg.Start([&] {
    started.fetch_add(1);
    o.Loop();
  });
  o.bg.Start([&] {
    started.fetch_add(1);
    o.Loop();
  });
  o.bg.Stop();
  EXPECT_EQ(started.load(), 1);
}

TEST(BackgroundThreadTest, RestartsAfterStop) {
  Looper o;
  o.bg.Start([&o] { o.Loop(); });
  o.bg.Stop();
  o.bg.Start([&o] { o.Loop(); });
  EXPECT_TRUE(o.bg.running());
  o.bg.Stop();
  EXPECT_FALSE(o.bg.running());
}

TEST(BackgroundThreadTest, StopWithoutStartIsANoOp) {
  Looper o;
  o.bg.Stop();
  EXPECT_FALSE(o.bg.running());
}

}  // namespace
}  // namespace trove
