// HashTable: the hash function, lookups, growth while other threads work,
// and a scan cursor that survives growth.
#include "engine/hash_table.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "engine/engine.h"
#include "engine_test_util.h"

namespace trove::engine {
namespace {

TEST(HashTableTest, HashKeyMatchesXxh64ReferenceVectors) {
  // XXH64 with seed 0 (published test values).
  EXPECT_EQ(HashKey(""), 0xEF46DB3751D8E999ull);
  EXPECT_EQ(HashKey("a"), 0xD24EC4F1A98C6E5Bull);
  EXPECT_EQ(HashKey("abc"), 0x44BC2CF5AD770999ull);
}

TEST(HashTableTest, HashKeySpreadsNearbyKeys) {
  std::set<uint64_t> low_bits;
  for (int i = 0; i < 4096; ++i) low_bits.insert(HashKey("key:" + std::to_string(i)) & 0xffff);
  EXPECT_GT(low_bits.size(), 3900u);
}

TEST(HashTableTest, GrowsWhileWritersAndReadersWork) {
  ManualClock clock;
  EngineOptions o;
  o.hashpower_init = 10;
  o.item_lock_power = 6;
  auto e = testing::MakeEngine(o, &clock);
  e->Start();
  constexpr int kThreads = 4, kPerThread = 20000;
  std::atomic<int> bad{0};
  std::vector<std::thread> th;
  for (int t = 0; t < kThreads; ++t) {
    th.emplace_back([&, t] {
      ThreadStats* ts = e->NewThreadStats();
      for (int i = 0; i < kPerThread; ++i) {
        std::string k = "t" + std::to_string(t) + ":" + std::to_string(i);
        if (e->Store(k, 0, 0, k, StoreArgs{}, ts) != StoreResult::kStored) ++bad;
        // Re-read an earlier key of ours: growth must never lose it.
        std::string old = "t" + std::to_string(t) + ":" + std::to_string(i / 2);
        ItemRef r = e->Get(old, ts);
        if (!r || r.value() != old) ++bad;
      }
    });
  }
  for (auto& t : th) t.join();
  EXPECT_EQ(bad.load(), 0);
  StatList s = e->Stats();
  EXPECT_GE(testing::StatU(s, "hash_power_level"), 16u);
  EXPECT_EQ(e->curr_items(), uint64_t{kThreads} * kPerThread);
  ThreadStats* ts = e->NewThreadStats();
  for (int t = 0; t < kThreads; ++t) {
    for (int i = 0; i < kPerThread; i += 97) {
      std::string k = "t" + std::to_string(t) + ":" + std::to_string(i);
      EXPECT_TRUE(e->Get(k, ts)) << k;
    }
  }
  e->Stop();
}

// PrefetchHead reads bucket slots without a stripe while the table doubles
// and writers insert: under TSan this shows the slot accesses are atomic, and
// under ASan that a replaced bucket array is never freed under a reader.
TEST(HashTableTest, PrefetchIsSafeWhileTheTableGrows) {
  ManualClock clock;
  EngineOptions o;
  o.hashpower_init = 8;
  o.item_lock_power = 4;
  auto e = testing::MakeEngine(o, &clock);
  e->Start();
  std::atomic<bool> done{false};
  std::thread prefetcher([&] {
    uint64_t i = 0;
    while (!done.load(std::memory_order_relaxed)) {
      uint64_t hv = Engine::KeyHash("p" + std::to_string(i++ % 5000));
      e->PrefetchKey(hv);
      e->PrefetchItem(hv);
    }
  });
  ThreadStats* ts = e->NewThreadStats();
  for (int i = 0; i < 20000; ++i) {
    std::string k = "p" + std::to_string(i);
    ASSERT_EQ(e->Store(k, 0, 0, k, StoreArgs{}, ts), StoreResult::kStored);
  }
  // 20000 items pass 1.5 per bucket up to 2^14 buckets: six doublings.
  auto grown = [&] {
    StatList st = e->Stats();
    return testing::StatU(st, "hash_power_level") >= 14 &&
           testing::StatU(st, "hash_is_expanding") == 0;
  };
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!grown() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  done = true;
  prefetcher.join();
  EXPECT_TRUE(grown());
  for (int i = 0; i < 20000; i += 997) {
    std::string k = "p" + std::to_string(i);
    ItemRef r = e->Get(k, ts);
    ASSERT_TRUE(r);
    EXPECT_EQ(r.value(), k);
  }
}

TEST(HashTableTest, ScanCursorSurvivesGrowth) {
  ManualClock clock;
  EngineOptions o;
  o.hashpower_init = 8;
  o.item_lock_power = 4;
  auto e = testing::MakeEngine(o, &clock);
  ThreadStats* ts = e->NewThreadStats();
  std::set<std::string> initial;
  for (int i = 0; i < 300; ++i) {
    std::string k = "a" + std::to_string(i);
    ASSERT_EQ(e->Store(k, 0, 0, "v", StoreArgs{}, ts), StoreResult::kStored);
    initial.insert(k);
  }
  e->Start();
  std::set<std::string> seen;
  uint64_t cursor = 0;
  int round = 0;
  do {
    cursor = e->Scan(cursor, 10, [&](const ItemRef& r) { seen.insert(std::string(r.key())); });
    // Add keys early on so the table grows between scan calls.
    for (int i = 0; round < 40 && i < 200; ++i) {
      std::string k = "b" + std::to_string(round) + "_" + std::to_string(i);
      ASSERT_EQ(e->Store(k, 0, 0, "v", StoreArgs{}, ts), StoreResult::kStored);
    }
    ++round;
  } while (cursor != 0);
  e->Stop();
  EXPECT_GT(testing::StatU(e->Stats(), "hash_power_level"), 8u);
  for (const std::string& k : initial) EXPECT_TRUE(seen.count(k)) << k;
}

}  // namespace
}  // namespace trove::engine
