// ItemObserver: the engine reports expiry found by reads and by the crawler,
// and eviction, with the item's details; nothing while nobody listens.
#include "engine/item_observer.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "engine/engine.h"
#include "engine_test_util.h"

namespace trove::engine {
namespace {

struct Seen {
  RemovalCause cause;
  std::string key;
  uint32_t bytes;
  int64_t ttl;
  bool fetched;
};

class Recorder final : public ItemObserver {
 public:
  bool WantsRemovals() const override { return on; }
  void OnRemoved(const ItemRemoval& r) override {
    seen.push_back({r.cause, std::string(r.key), r.value_bytes, r.ttl, r.fetched});
  }
  bool on = true;
  std::vector<Seen> seen;
};

using testing::StatU;

EngineOptions Small() {
  EngineOptions o;
  o.lru_maintainer = false;
  o.lru_crawler = false;
  o.slab_reassign = false;
  return o;
}

TEST(ItemObserverTest, ExpiryFoundByAReadIsReported) {
  ManualClock clock;
  Recorder rec;
  auto e = testing::MakeEngine(Small(), &clock);
  e->AddObserver(&rec);
  ThreadStats* ts = e->NewThreadStats();
  ASSERT_EQ(e->Store("k", 0, 5, "value", {}, ts), StoreResult::kStored);
  ASSERT_EQ(e->Store("forever", 0, 0, "v", {}, ts), StoreResult::kStored);
  clock.AdvanceSeconds(6);
  EXPECT_FALSE(e->Get("k", ts));
  EXPECT_TRUE(e->Get("forever", ts));
  ASSERT_EQ(rec.seen.size(), 1u);
  EXPECT_EQ(rec.seen[0].cause, RemovalCause::kExpired);
  EXPECT_EQ(rec.seen[0].key, "k");
  EXPECT_EQ(rec.seen[0].bytes, 5u);
  EXPECT_EQ(rec.seen[0].ttl, 0);
  EXPECT_FALSE(rec.seen[0].fetched);
}

TEST(ItemObserverTest, ExpiryFoundByTheCrawlerIsReported) {
  ManualClock clock;
  Recorder rec;
  EngineOptions o = Small();
  o.lru_crawler = true;
  auto e = testing::MakeEngine(o, &clock);
  e->AddObserver(&rec);
  ThreadStats* ts = e->NewThreadStats();
  ASSERT_EQ(e->Store("crawled", 0, 5, "abc", {}, ts), StoreResult::kStored);
  e->Start();
  clock.AdvanceSeconds(6);
  ASSERT_EQ(e->CrawlerCrawl("all"), "OK");
  for (int i = 0; i < 500 && e->curr_items() != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  e->Stop();  // joins the crawler: rec is read by this thread only from here
  ASSERT_EQ(rec.seen.size(), 1u);
  EXPECT_EQ(rec.seen[0].cause, RemovalCause::kExpired);
  EXPECT_EQ(rec.seen[0].key, "crawled");
  EXPECT_EQ(rec.seen[0].bytes, 3u);
}

TEST(ItemObserverTest, FlushedItemsAreNotReported) {
  ManualClock clock;
  Recorder rec;
  auto e = testing::MakeEngine(Small(), &clock);
  e->AddObserver(&rec);
  ThreadStats* ts = e->NewThreadStats();
  ASSERT_EQ(e->Store("k", 0, 0, "v", {}, ts), StoreResult::kStored);
  e->FlushAll(0);
  EXPECT_FALSE(e->Get("k", ts));
  EXPECT_TRUE(rec.seen.empty());
}

TEST(ItemObserverTest, EvictionIsReportedAndSilentWhenNotWanted) {
  ManualClock clock;
  Recorder rec;
  EngineOptions o = Small();
  o.mem_limit = 2u << 20;
  auto e = testing::MakeEngine(o, &clock);
  e->AddObserver(&rec);
  ThreadStats* ts = e->NewThreadStats();
  const std::string value(1000, 'x');
  rec.on = false;
  int i = 0;
  for (; i < 20000 && StatU(e->Stats(), "evictions") == 0; ++i) {
    ASSERT_EQ(e->Store("key" + std::to_string(i), 0, 0, value, {}, ts), StoreResult::kStored);
  }
  ASSERT_GT(StatU(e->Stats(), "evictions"), 0u);
  EXPECT_TRUE(rec.seen.empty());
  rec.on = true;
  for (int j = 0; j < 100; ++j, ++i) {
    ASSERT_EQ(e->Store("key" + std::to_string(i), 0, 0, value, {}, ts), StoreResult::kStored);
  }
  ASSERT_FALSE(rec.seen.empty());
  EXPECT_EQ(rec.seen[0].cause, RemovalCause::kEvicted);
  EXPECT_EQ(rec.seen[0].bytes, 1000u);
  EXPECT_EQ(rec.seen[0].ttl, -1);
  EXPECT_EQ(rec.seen[0].key.rfind("key", 0), 0u);
}

class SysEvents final : public ItemObserver {
 public:
  bool WantsRemovals() const override { return false; }
  void OnRemoved(const ItemRemoval&) override {}
  bool WantsSysEvents() const override { return on; }
  void OnSysEvent(const SysEvent& e) override { seen.push_back(e); }
  bool on = true;
  std::vector<SysEvent> seen;
};

TEST(ItemObserverTest, AutomaticCrawlReportsEachClassItExamined) {
  ManualClock clock;
  SysEvents rec;
  auto e = testing::MakeEngine(Small(), &clock);
  e->AddObserver(&rec);
  ThreadStats* ts = e->NewThreadStats();
  for (int i = 0; i < 10; ++i) {
    ASSERT_EQ(e->Store("s" + std::to_string(i), 0, i < 4 ? 5 : 0, "v", {}, ts),
              StoreResult::kStored);
  }
  ASSERT_EQ(e->Store("big", 0, 0, std::string(5000, 'b'), {}, ts), StoreResult::kStored);
  clock.AdvanceSeconds(6);
  e->CrawlerAutoCrawlForTest();
  ASSERT_EQ(rec.seen.size(), 2u);  // the small items' class and the big one's
  uint64_t examined = 0, reclaimed = 0;
  for (const SysEvent& ev : rec.seen) {
    EXPECT_EQ(ev.kind, SysEvent::Kind::kCrawlerStatus);
    EXPECT_GT(ev.clsid, 0);
    EXPECT_EQ(ev.since_run, 0u);  // first automatic crawl
    EXPECT_EQ(ev.next_run, 60);
    examined += ev.examined;
    reclaimed += ev.reclaimed;
  }
  EXPECT_EQ(examined, 11u);
  EXPECT_EQ(reclaimed, 4u);
  EXPECT_NE(rec.seen[0].clsid, rec.seen[1].clsid);
  // The next one knows when the last ran; nobody listening: nothing built.
  clock.AdvanceSeconds(30);
  rec.seen.clear();
  e->CrawlerAutoCrawlForTest();
  ASSERT_EQ(rec.seen.size(), 2u);
  EXPECT_EQ(rec.seen[0].since_run, 30u);
  rec.on = false;
  rec.seen.clear();
  e->CrawlerAutoCrawlForTest();
  EXPECT_TRUE(rec.seen.empty());
}

}  // namespace
}  // namespace trove::engine
