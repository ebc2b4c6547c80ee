// Meta protocol semantics: mg win/stale/recache tokens (W/X/Z), N vivify,
// h/l/t, ms I invalidation and md I/T/x.
#include <gtest/gtest.h>

#include "engine/engine.h"
#include "engine_test_util.h"

namespace trove::engine {
namespace {

class EngineMetaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    e_ = testing::MakeEngine(EngineOptions{}, &clock_);
    ts_ = e_->NewThreadStats();
  }
  uint64_t Set(std::string_view k, std::string_view v, int64_t exp = 0) {
    uint64_t cas = 0;
    EXPECT_EQ(e_->Store(k, 0, exp, v, StoreArgs{}, ts_, &cas), StoreResult::kStored);
    return cas;
  }
  ManualClock clock_;
  std::unique_ptr<Engine> e_;
  ThreadStats* ts_ = nullptr;
};

TEST_F(EngineMetaTest, MissWithoutVivifyReturnsNothing) {
  MetaGetOutput o = e_->MetaGet("k", MetaGetArgs{}, ts_);
  EXPECT_FALSE(o.item);
  EXPECT_FALSE(o.win);
}

TEST_F(EngineMetaTest, VivifyWinsOnceThenOthersSeeZ) {
  MetaGetArgs a;
  a.vivify_exptime = 30;
  MetaGetOutput first = e_->MetaGet("k", a, ts_);
  ASSERT_TRUE(first.item);
  EXPECT_TRUE(first.vivified);
  EXPECT_TRUE(first.win);
  EXPECT_FALSE(first.already_won);
  EXPECT_EQ(first.item.value_length(), 0u);
  EXPECT_EQ(first.ttl, 30);
  MetaGetOutput second = e_->MetaGet("k", a, ts_);
  ASSERT_TRUE(second.item);
  EXPECT_FALSE(second.vivified);
  EXPECT_FALSE(second.win);
  EXPECT_TRUE(second.already_won);
  // The winner's set replaces the placeholder and clears the token.
  Set("k", "real");
  MetaGetOutput third = e_->MetaGet("k", a, ts_);
  EXPECT_FALSE(third.win);
  EXPECT_FALSE(third.already_won);
  EXPECT_EQ(testing::ValueOf(third.item), "real");
}

TEST_F(EngineMetaTest, RecacheWinsWhenTtlBelowThreshold) {
  Set("k", "v", 100);
  MetaGetArgs a;
  a.recache_ttl = 30;
  EXPECT_FALSE(e_->MetaGet("k", a, ts_).win);  // 100s left
  clock_.AdvanceSeconds(80);
  MetaGetOutput o = e_->MetaGet("k", a, ts_);
  EXPECT_TRUE(o.win);  // 20s left < 30
  EXPECT_EQ(o.ttl, 20);
  MetaGetOutput o2 = e_->MetaGet("k", a, ts_);
  EXPECT_FALSE(o2.win);
  EXPECT_TRUE(o2.already_won);
}

TEST_F(EngineMetaTest, RecacheNeverWinsOnItemsWithoutExpiry) {
  Set("k", "v", 0);
  MetaGetArgs a;
  a.recache_ttl = 30;
  EXPECT_FALSE(e_->MetaGet("k", a, ts_).win);
}

TEST_F(EngineMetaTest, HitBeforeAndLastAccessReportPreRequestState) {
  Set("k", "v");
  clock_.AdvanceSeconds(7);
  MetaGetOutput o = e_->MetaGet("k", MetaGetArgs{}, ts_);
  EXPECT_FALSE(o.hit_before);
  EXPECT_EQ(o.last_access_ago, 7u);
  clock_.AdvanceSeconds(2);
  o = e_->MetaGet("k", MetaGetArgs{}, ts_);
  EXPECT_TRUE(o.hit_before);
  EXPECT_EQ(o.last_access_ago, 2u);
}

TEST_F(EngineMetaTest, NoBumpLeavesFetchedUnset) {
  Set("k", "v");
  MetaGetArgs a;
  a.bump = false;
  e_->MetaGet("k", a, ts_);
  EXPECT_FALSE(e_->MetaGet("k", a, ts_).hit_before);
}

TEST_F(EngineMetaTest, TouchInMetaGetSetsTtl) {
  Set("k", "v", 10);
  MetaGetArgs a;
  a.touch_exptime = 500;
  EXPECT_EQ(e_->MetaGet("k", a, ts_).ttl, 500);
  EXPECT_EQ(testing::StatU(e_->Stats(), "touch_hits"), 1u);
}

TEST_F(EngineMetaTest, DeleteInvalidateMarksStaleAndNextReaderWins) {
  uint64_t cas = Set("k", "v", 100);
  DeleteArgs d;
  d.invalidate = true;
  d.stale_exptime = 30;
  EXPECT_EQ(e_->Delete("k", d, ts_), DeleteResult::kDeleted);
  MetaGetOutput o = e_->MetaGet("k", MetaGetArgs{}, ts_);
  ASSERT_TRUE(o.item);
  EXPECT_TRUE(o.stale);
  EXPECT_TRUE(o.win);
  EXPECT_EQ(o.ttl, 30);
  EXPECT_GT(o.item.cas(), cas);
  MetaGetOutput o2 = e_->MetaGet("k", MetaGetArgs{}, ts_);
  EXPECT_TRUE(o2.stale);
  EXPECT_FALSE(o2.win);
  EXPECT_TRUE(o2.already_won);
}

TEST_F(EngineMetaTest, SetWithOlderCasUnderInvalidateStoresStale) {
  uint64_t old_cas = Set("k", "v1");
  DeleteArgs d;
  d.invalidate = true;
  ASSERT_EQ(e_->Delete("k", d, ts_), DeleteResult::kDeleted);
  uint64_t stale_cas = e_->Get("k", ts_).cas();
  StoreArgs a;
  a.compare_cas = old_cas;
  EXPECT_EQ(e_->Store("k", 0, 0, "v2", a, ts_), StoreResult::kExists);
  a.invalidate = true;
  EXPECT_EQ(e_->Store("k", 0, 0, "v2", a, ts_), StoreResult::kStored);
  MetaGetOutput o = e_->MetaGet("k", MetaGetArgs{}, ts_);
  EXPECT_EQ(testing::ValueOf(o.item), "v2");
  EXPECT_TRUE(o.stale);
  EXPECT_EQ(o.item.cas(), stale_cas);
  // A matching CAS stores a fresh value.
  a.compare_cas = stale_cas;
  a.invalidate = false;
  EXPECT_EQ(e_->Store("k", 0, 0, "v3", a, ts_), StoreResult::kStored);
  EXPECT_FALSE(e_->MetaGet("k", MetaGetArgs{}, ts_).stale);
}

TEST_F(EngineMetaTest, DeleteRemoveValueKeepsEmptyItem) {
  ASSERT_EQ(e_->Store("k", 9, 0, "value", StoreArgs{}, ts_), StoreResult::kStored);
  DeleteArgs d;
  d.remove_value = true;
  EXPECT_EQ(e_->Delete("k", d, ts_), DeleteResult::kDeleted);
  ItemRef r = e_->Get("k", ts_);
  ASSERT_TRUE(r);
  EXPECT_EQ(r.value_length(), 0u);
  EXPECT_EQ(r.client_flags(), 0u);
}

TEST_F(EngineMetaTest, ExplicitCasIsUsed) {
  StoreArgs a;
  a.explicit_cas = 777;
  uint64_t cas = 0;
  ASSERT_EQ(e_->Store("k", 0, 0, "v", a, ts_, &cas), StoreResult::kStored);
  EXPECT_EQ(cas, 777u);
  EXPECT_EQ(e_->Get("k", ts_).cas(), 777u);
}

TEST_F(EngineMetaTest, AppendVivifyCreatesOnMiss) {
  StoreArgs a;
  a.mode = StoreMode::kAppend;
  EXPECT_EQ(e_->Store("k", 0, 0, "x", a, ts_), StoreResult::kNotStored);
  a.vivify_exptime = 60;
  EXPECT_EQ(e_->Store("k", 0, 0, "x", a, ts_), StoreResult::kStored);
  ItemRef r = e_->Get("k", ts_);
  EXPECT_EQ(r.value(), "x");
  EXPECT_EQ(e_->TtlSeconds(r), 60);
}

}  // namespace
}  // namespace trove::engine
