// Segmented LRU: new items enter HOT, the maintainer drains HOT to COLD by
// size, rescues active items into WARM, and eviction takes COLD first.
#include "engine/lru.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "engine/engine.h"
#include "engine_test_util.h"

namespace trove::engine {
namespace {

using testing::Stat;
using testing::StatU;

class LruTest : public ::testing::Test {
 protected:
  void Make(EngineOptions o) {
    o.lru_crawler = false;
    o.slab_reassign = false;
    e_ = testing::MakeEngine(o, &clock_);
    ts_ = e_->NewThreadStats();
  }
  // Polls `pred` for up to 5 s (background thread at work).
  template <typename F>
  bool WaitFor(F pred) {
    for (int i = 0; i < 500; ++i) {
      if (pred()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return pred();
  }
  ManualClock clock_;
  std::unique_ptr<Engine> e_;
  ThreadStats* ts_ = nullptr;
};

TEST_F(LruTest, NewItemsEnterHot) {
  Make(EngineOptions{});
  for (int i = 0; i < 50; ++i) ASSERT_EQ(e_->Store("k" + std::to_string(i), 0, 0, "v", {}, ts_), StoreResult::kStored);
  StatList s = e_->ItemStats();
  EXPECT_EQ(StatU(s, "items:1:number"), 50u);
  EXPECT_EQ(StatU(s, "items:1:number_hot"), 50u);
  EXPECT_EQ(StatU(s, "items:1:number_cold"), 0u);
}

TEST_F(LruTest, MaintainerDrainsHotToColdBySize) {
  Make(EngineOptions{});
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(e_->Store("k" + std::to_string(i), 0, 0, "v", {}, ts_), StoreResult::kStored);
  e_->Start();
  ASSERT_TRUE(WaitFor([&] { return StatU(e_->ItemStats(), "items:1:number_hot") <= 200; }));
  e_->Stop();
  StatList s = e_->ItemStats();
  EXPECT_GE(StatU(s, "items:1:number_cold"), 790u);
  EXPECT_GT(StatU(e_->Stats(), "moves_to_cold"), 700u);
}

TEST_F(LruTest, ActiveItemsAreRescuedIntoWarm) {
  Make(EngineOptions{});
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(e_->Store("k" + std::to_string(i), 0, 0, "v", {}, ts_), StoreResult::kStored);
  // Two hits make an item ACTIVE.
  for (int i = 0; i < 100; ++i) {
    e_->Get("k" + std::to_string(i), ts_);
    e_->Get("k" + std::to_string(i), ts_);
  }
  e_->Start();
  ASSERT_TRUE(WaitFor([&] { return StatU(e_->ItemStats(), "items:1:number_warm") >= 100; }));
  e_->Stop();
  EXPECT_GE(StatU(e_->Stats(), "moves_to_warm"), 100u);
}

TEST_F(LruTest, EvictionTakesColdBeforeWarm) {
  EngineOptions o;
  o.mem_limit = 1 << 20;
  o.item_size_max = 64 * 1024;
  Make(o);
  std::string v(500, 'v');
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(e_->Store("k" + std::to_string(i), 0, 0, v, {}, ts_), StoreResult::kStored);
  for (int i = 0; i < 50; ++i) {
    e_->Get("k" + std::to_string(i), ts_);
    e_->Get("k" + std::to_string(i), ts_);
  }
  e_->Start();
  ASSERT_TRUE(WaitFor([&] { return StatU(e_->Stats(), "moves_to_warm") >= 50; }));
  e_->Stop();
  // Now overflow memory: the warm (active) keys must survive.
  for (int i = 1000; i < 4000; ++i) ASSERT_EQ(e_->Store("k" + std::to_string(i), 0, 0, v, {}, ts_), StoreResult::kStored);
  EXPECT_GT(StatU(e_->Stats(), "evictions"), 1000u);
  int survivors = 0;
  for (int i = 0; i < 50; ++i) survivors += e_->Get("k" + std::to_string(i), ts_) ? 1 : 0;
  EXPECT_EQ(survivors, 50);
  EXPECT_FALSE(e_->Get("k500", ts_));
}

TEST_F(LruTest, ShortTtlItemsUseTempLru) {
  EngineOptions o;
  o.temp_lru = true;
  Make(o);
  ASSERT_EQ(e_->Store("short", 0, 30, "v", {}, ts_), StoreResult::kStored);
  ASSERT_EQ(e_->Store("long", 0, 3600, "v", {}, ts_), StoreResult::kStored);
  StatList s = e_->ItemStats();
  EXPECT_EQ(StatU(s, "items:1:number_temp"), 1u);
  EXPECT_EQ(StatU(s, "items:1:number_hot"), 1u);
}

}  // namespace
}  // namespace trove::engine
