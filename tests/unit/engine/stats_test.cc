// Stats: memcached's names and formats, per-thread sums, stats reset and
// per-prefix detail.
#include "engine/stats.h"

#include <gtest/gtest.h>

#include <thread>

#include "engine/engine.h"
#include "engine_test_util.h"

namespace trove::engine {
namespace {

using testing::Stat;
using testing::StatU;

TEST(StatsTest, EngineStatsCarryMemcachedNames) {
  ManualClock clock;
  auto e = testing::MakeEngine(EngineOptions{}, &clock);
  StatList s = e->Stats();
  for (const char* n : {"get_hits", "get_misses", "get_expired", "get_flushed", "cmd_get", "cmd_set",
                        "cmd_touch", "cas_misses", "cas_hits", "cas_badval", "incr_misses",
                        "incr_hits", "decr_misses", "decr_hits", "delete_misses", "delete_hits",
                        "touch_hits", "touch_misses", "evictions", "reclaimed", "expired_unfetched",
                        "evicted_unfetched", "total_items", "curr_items", "bytes", "limit_maxbytes",
                        "hash_power_level", "hash_bytes", "hash_is_expanding",
                        "slab_reassign_running", "slabs_moved", "lru_crawler_running",
                        "lru_crawler_starts"}) {
    EXPECT_NE(Stat(s, n)[0], '<') << n;
  }
  EXPECT_EQ(StatU(s, "limit_maxbytes"), 64u << 20);
  EXPECT_EQ(StatU(s, "hash_power_level"), 16u);
  EXPECT_EQ(StatU(s, "hash_bytes"), 8u << 16);
}

TEST(StatsTest, CountersSumAcrossThreadsAndReset) {
  ManualClock clock;
  auto e = testing::MakeEngine(EngineOptions{}, &clock);
  auto work = [&] {
    ThreadStats* ts = e->NewThreadStats();
    for (int i = 0; i < 1000; ++i) {
      std::string k = "k" + std::to_string(i);
      EXPECT_EQ(e->Store(k, 0, 0, "v", {}, ts), StoreResult::kStored);
      e->Get(k, ts);
      e->Get("missing", ts);
    }
  };
  std::thread a(work), b(work);
  a.join();
  b.join();
  StatList s = e->Stats();
  EXPECT_EQ(StatU(s, "cmd_set"), 2000u);
  EXPECT_EQ(StatU(s, "get_hits"), 2000u);
  EXPECT_EQ(StatU(s, "get_misses"), 2000u);
  EXPECT_EQ(StatU(s, "cmd_get"), 4000u);
  EXPECT_EQ(StatU(s, "curr_items"), 1000u);
  EXPECT_EQ(StatU(s, "total_items"), 2000u);
  EXPECT_GT(StatU(s, "bytes"), 1000u * 60);
  e->ResetStats();
  s = e->Stats();
  EXPECT_EQ(StatU(s, "cmd_set"), 0u);
  EXPECT_EQ(StatU(s, "get_hits"), 0u);
  EXPECT_EQ(StatU(s, "curr_items"), 1000u);  // state, not a counter
}

TEST(StatsTest, ItemAndSlabStatsUseClassPrefixes) {
  ManualClock clock;
  auto e = testing::MakeEngine(EngineOptions{}, &clock);
  ThreadStats* ts = e->NewThreadStats();
  ASSERT_EQ(e->Store("k", 0, 0, "v", {}, ts), StoreResult::kStored);
  e->Get("k", ts);
  StatList items = e->ItemStats();
  EXPECT_EQ(StatU(items, "items:1:number"), 1u);
  EXPECT_NE(Stat(items, "items:1:evicted")[0], '<');
  StatList slabs = e->SlabStats();
  EXPECT_EQ(StatU(slabs, "1:chunk_size"), 96u);
  EXPECT_EQ(StatU(slabs, "1:used_chunks"), 1u);
  EXPECT_EQ(StatU(slabs, "1:get_hits"), 1u);
  EXPECT_EQ(StatU(slabs, "1:cmd_set"), 1u);
  EXPECT_EQ(StatU(slabs, "active_slabs"), 1u);
  EXPECT_EQ(StatU(slabs, "total_malloced"), 1u << 20);
  EXPECT_EQ(Stat(e->SizeStats(), "sizes_status"), "disabled");
}

TEST(StatsTest, PrefixDetailDump) {
  ManualClock clock;
  auto e = testing::MakeEngine(EngineOptions{}, &clock);
  ThreadStats* ts = e->NewThreadStats();
  EXPECT_EQ(e->DetailDump(), "END\r\n");
  e->SetDetailEnabled(true);
  ASSERT_EQ(e->Store("user:1", 0, 0, "v", {}, ts), StoreResult::kStored);
  e->Get("user:1", ts);
  e->Get("user:2", ts);
  e->Delete("user:1", {}, ts);
  e->Get("noprefix", ts);
  EXPECT_EQ(e->DetailDump(), "PREFIX user get 2 hit 1 set 1 del 1\r\nEND\r\n");
}

TEST(StatsTest, SettingsStats) {
  ManualClock clock;
  auto e = testing::MakeEngine(EngineOptions{}, &clock);
  StatList s = e->SettingsStats();
  EXPECT_EQ(Stat(s, "growth_factor"), "1.25");
  EXPECT_EQ(Stat(s, "cas_enabled"), "yes");
  EXPECT_EQ(StatU(s, "item_size_max"), 1u << 20);
  EXPECT_EQ(StatU(s, "slab_chunk_max"), 512u * 1024);
}

}  // namespace
}  // namespace trove::engine
