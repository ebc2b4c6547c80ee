// LRU crawler: reclaims expired and flushed items on request; metadump.
#include "engine/crawler.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "engine/engine.h"
#include "engine_test_util.h"

namespace trove::engine {
namespace {

using testing::StatU;

class CrawlerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    EngineOptions o;
    o.lru_maintainer = false;
    o.slab_reassign = false;
    e_ = testing::MakeEngine(o, &clock_);
    ts_ = e_->NewThreadStats();
  }
  bool WaitIdle(uint64_t starts) {
    for (int i = 0; i < 500; ++i) {
      StatList s = e_->Stats();
      if (StatU(s, "lru_crawler_starts") >= starts && StatU(s, "lru_crawler_running") == 0) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }
  ManualClock clock_;
  std::unique_ptr<Engine> e_;
  ThreadStats* ts_ = nullptr;
};

TEST_F(CrawlerTest, ReclaimsExpiredItemsOnRequest) {
  for (int i = 0; i < 200; ++i) {
    ASSERT_EQ(e_->Store("e" + std::to_string(i), 0, 10, "v", {}, ts_), StoreResult::kStored);
    ASSERT_EQ(e_->Store("l" + std::to_string(i), 0, 0, "v", {}, ts_), StoreResult::kStored);
  }
  EXPECT_EQ(e_->CrawlerCrawl("all"), "ERROR lru crawler disabled");  // thread not started
  e_->Start();
  clock_.AdvanceSeconds(11);
  uint64_t starts = StatU(e_->Stats(), "lru_crawler_starts");
  ASSERT_EQ(e_->CrawlerCrawl("all"), "OK");
  ASSERT_TRUE(WaitIdle(starts + 1));
  EXPECT_EQ(StatU(e_->Stats(), "lru_crawler_starts"), starts + 1);  // no unrequested crawl
  EXPECT_EQ(e_->curr_items(), 200u);
  EXPECT_EQ(StatU(e_->Stats(), "crawler_reclaimed"), 200u);
  EXPECT_EQ(StatU(e_->ItemStats(), "items:1:crawler_reclaimed"), 200u);
  e_->Stop();
}

TEST_F(CrawlerTest, RejectsBadClassLists) {
  e_->Start();
  EXPECT_EQ(e_->CrawlerCrawl("abc"), "BADCLASS invalid class id");
  EXPECT_EQ(e_->CrawlerCrawl("1,99"), "BADCLASS invalid class id");
  EXPECT_EQ(e_->CrawlerCrawl("0"), "BADCLASS invalid class id");
  e_->Stop();
}

TEST_F(CrawlerTest, CrawlOfOtherClassLeavesItemsAlone) {
  ASSERT_EQ(e_->Store("e", 0, 10, "v", {}, ts_), StoreResult::kStored);
  e_->Start();
  clock_.AdvanceSeconds(11);
  uint64_t starts = StatU(e_->Stats(), "lru_crawler_starts");
  ASSERT_EQ(e_->CrawlerCrawl("5"), "OK");
  ASSERT_TRUE(WaitIdle(starts + 1));
  EXPECT_EQ(e_->curr_items(), 1u);
  e_->Stop();
}

TEST_F(CrawlerTest, MetaDumpListsLiveKeys) {
  const int64_t now = clock_.UnixSeconds();
  ASSERT_EQ(e_->Store("a", 5, 100, "vv", {}, ts_), StoreResult::kStored);
  ASSERT_EQ(e_->Store("b", 0, 0, "v", {}, ts_), StoreResult::kStored);
  ASSERT_EQ(e_->Store("dead", 0, -1, "v", {}, ts_), StoreResult::kStored);
  e_->Get("b", ts_);
  std::vector<DumpEntry> d = e_->MetaDump("all");
  ASSERT_EQ(d.size(), 2u);
  std::sort(d.begin(), d.end(), [](const DumpEntry& x, const DumpEntry& y) { return x.key < y.key; });
  EXPECT_EQ(d[0].key, "a");
  EXPECT_EQ(d[0].exp_unix, now + 100);
  EXPECT_EQ(d[0].flags, 5u);
  EXPECT_FALSE(d[0].fetched);
  EXPECT_EQ(d[0].slab_class, 1);
  EXPECT_EQ(d[1].key, "b");
  EXPECT_EQ(d[1].exp_unix, -1);
  EXPECT_TRUE(d[1].fetched);
  EXPECT_EQ(d[1].last_access_unix, now);
  EXPECT_TRUE(e_->MetaDump("2").empty());
}

}  // namespace
}  // namespace trove::engine
