// Item header expiry: the near form (32-bit seconds plus milliseconds in the
// client-flags word) and the far form (kItemExpFar, 64-bit milliseconds in
// the same two words) that keeps every RESP expiry exact without growing the
// 48-byte header; then the same through the Engine API. Test thread only.
#include "engine/item.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <thread>

#include "engine/engine.h"
#include "engine_test_util.h"

namespace trove::engine {
namespace {

using testing::ValueOf;

// The header did not grow: the far form reuses exptime and client_flags.
static_assert(sizeof(Item) == 48, "far expiries must not grow the item header");

constexpr uint64_t kFirstFarMs = (uint64_t{kExpiryMaxSec} + 1) * 1000;

// --- the representation (item.h) ---

TEST(ItemExpiryTest, NearExpiryKeepsSecondsAndMillisecondsInTheirWords) {
  Item it{};
  StoreExpiryRelMs(&it, 5000 * 1000 + 123);
  EXPECT_EQ(it.exptime.load(), 5000u);
  EXPECT_EQ(it.client_flags.load(), 123u);
  EXPECT_TRUE(HasFlag(&it, kItemExpMs));
  EXPECT_FALSE(ExpiryIsFar(&it));
  EXPECT_EQ(ExpiryRelMs(&it), 5000u * 1000 + 123);
  EXPECT_EQ(ExpirySecOf(&it), 5000u);
  EXPECT_EQ(ExpiryMsPart(&it), 123u);
  EXPECT_EQ(ClientFlagsOf(&it), 0u);
}

TEST(ItemExpiryTest, TheLastNearSecondStaysNear) {
  Item it{};
  const uint64_t last = uint64_t{kExpiryMaxSec} * 1000 + 999;
  StoreExpiryRelMs(&it, last);
  EXPECT_FALSE(ExpiryIsFar(&it));
  EXPECT_EQ(it.exptime.load(), kExpiryMaxSec);
  EXPECT_EQ(ExpiryRelMs(&it), last);
}

TEST(ItemExpiryTest, FarExpiryRoundTripsToTheMillisecond) {
  for (uint64_t rel_ms : {kFirstFarMs, kFirstFarMs + 1, uint64_t{31477117420123},
                          uint64_t{INT64_MAX} - 1700000000000, uint64_t{INT64_MAX}}) {
    Item it{};
    StoreExpiryRelMs(&it, rel_ms);
    EXPECT_TRUE(ExpiryIsFar(&it)) << rel_ms;
    EXPECT_TRUE(HasFlag(&it, kItemExpMs)) << rel_ms;
    EXPECT_EQ(ExpiryRelMs(&it), rel_ms);
    EXPECT_EQ(ExpiryRelSec(&it), rel_ms / 1000);
    EXPECT_EQ(ExpiryMsPart(&it), rel_ms % 1000);
    // Code that compares with the 32-bit clock sees the farthest second, and
    // a test against 0 still reads "expires".
    EXPECT_EQ(ExpirySecOf(&it), kExpiryMaxSec);
    EXPECT_GE(it.exptime.load(), 1000u);
    EXPECT_EQ(ClientFlagsOf(&it), 0u);  // memcached still reads flags 0
    EXPECT_GT(ExpiryTtlSec(&it, 0), int64_t{kExpiryMaxSec});
  }
}

TEST(ItemExpiryTest, FarBecomesNearOrNeverAgain) {
  Item it{};
  StoreExpiryRelMs(&it, kFirstFarMs + 42);
  StoreExpiryRelMs(&it, 7000);
  EXPECT_FALSE(ExpiryIsFar(&it));
  EXPECT_EQ(ExpiryRelMs(&it), 7000u);
  EXPECT_EQ(it.exptime.load(), 7u);
  StoreExpiryRelMs(&it, kFirstFarMs + 42);
  StoreExpiryRelMs(&it, 0);
  EXPECT_FALSE(ExpiryIsFar(&it));
  EXPECT_EQ(ExpiryRelMs(&it), 0u);
  EXPECT_EQ(ExpiryTtlSec(&it, 100), -1);
}

TEST(ItemExpiryTest, MemcachedFlagsKeepTheSlotAndTheFarthestSecond) {
  Item it{};
  it.client_flags.store(7);
  StoreExpiryRelMs(&it, kFirstFarMs * 3);
  EXPECT_FALSE(ExpiryIsFar(&it));
  EXPECT_EQ(ClientFlagsOf(&it), 7u);
  EXPECT_EQ(it.exptime.load(), kExpiryMaxSec);
  // Rounding up at the top must not wrap to 0 ("never").
  StoreExpiry(&it, kExpiryMaxSec, 500);
  EXPECT_EQ(it.exptime.load(), kExpiryMaxSec);
  EXPECT_EQ(ClientFlagsOf(&it), 7u);
}

TEST(ItemExpiryTest, CopyAndTouchCarryTheFarForm) {
  Item from{};
  Item to{};
  StoreExpiryRelMs(&from, kFirstFarMs * 5 + 321);
  CopyExpiry(&to, &from);
  EXPECT_TRUE(ExpiryIsFar(&to));
  EXPECT_EQ(ExpiryRelMs(&to), kFirstFarMs * 5 + 321);
  // memcached's touch sets whole seconds and keeps the sub-second part.
  TouchExpiry(&to, 100);
  EXPECT_FALSE(ExpiryIsFar(&to));
  EXPECT_EQ(ExpiryRelMs(&to), 100u * 1000 + 321);
  // A copy onto an item with memcached flags of its own stays at the top.
  Item flagged{};
  flagged.client_flags.store(9);
  CopyExpiry(&flagged, &from);
  EXPECT_EQ(ExpirySecOf(&flagged), kExpiryMaxSec);
  EXPECT_EQ(ClientFlagsOf(&flagged), 9u);
}

// --- through the engine ---

class ItemFarExpiryTest : public ::testing::Test {
 protected:
  void SetUp() override { Make(EngineOptions{}); }
  void Make(EngineOptions o) {
    e_.reset();
    e_ = testing::MakeEngine(o, &clock_);
    ts_ = e_->NewThreadStats();
  }
  void Set(const std::string& k, std::string_view v, uint32_t flags = 0) {
    ASSERT_EQ(e_->Store(k, flags, 0, v, StoreArgs{}, ts_), StoreResult::kStored);
  }
  void ExpireAtMs(const std::string& k, int64_t unix_ms) {
    KeyLockSet lock(e_.get(), k);
    ASSERT_TRUE(e_->SetExpiryMsLocked(k, unix_ms, ts_));
  }
  int64_t ExpiresAtMs(const std::string& k) {
    ItemRef r = e_->Get(k, ts_);
    return r ? r.expires_at_unix_ms() : -2;
  }

  ManualClock clock_;  // starts at unix 1700000000
  std::unique_ptr<Engine> e_;
  ThreadStats* ts_ = nullptr;
};

// The redis-py failure: EXPIREAT k 33177117420 read back 6091445510.
TEST_F(ItemFarExpiryTest, ExpireAtCenturiesAheadReadsBackExactly) {
  Set("k", "v");
  ExpireAtMs("k", 33177117420000);
  ItemRef r = e_->Get("k", ts_);
  ASSERT_TRUE(r);
  EXPECT_EQ(r.expires_at_unix_ms(), 33177117420000);
  EXPECT_EQ(r.expires_at_unix(), 33177117420);
  EXPECT_EQ(e_->TtlSeconds(r), 33177117420 - clock_.UnixSeconds());
  EXPECT_EQ(r.client_flags(), 0u);
}

TEST_F(ItemFarExpiryTest, EveryExpiryRedisAcceptsIsExact) {
  // The engine's second 0 is 2 s before its clock at creation (memcached's
  // process_started), so these sit on either side of the far form's edge.
  const int64_t started_ms = (clock_.UnixSeconds() - 2) * 1000;
  const int64_t cases[] = {
      started_ms + int64_t{kExpiryMaxSec} * 1000 + 999,  // the last near millisecond
      started_ms + static_cast<int64_t>(kFirstFarMs),     // the first far one
      33177117420123,
      INT64_MAX / 1000 * 1000,  // EXPIREAT's largest: 9223372036854775 s
      INT64_MAX,                // PEXPIREAT's largest
  };
  for (int64_t ms : cases) {
    Set("k", "v");
    ExpireAtMs("k", ms);
    EXPECT_EQ(ExpiresAtMs("k"), ms);
  }
}

TEST_F(ItemFarExpiryTest, FarExpiryDoesNotFallWhileTheClockRuns) {
  Set("k", "v");
  ExpireAtMs("k", INT64_MAX);
  clock_.AdvanceSeconds(int64_t{100} * 365 * 86400);  // a century, still inside 32 bits
  EXPECT_EQ(ExpiresAtMs("k"), INT64_MAX);
  ItemRef r = e_->Get("k", ts_);
  ASSERT_TRUE(r);
  EXPECT_EQ(e_->TtlSeconds(r), INT64_MAX / 1000 - clock_.UnixSeconds());
}

TEST_F(ItemFarExpiryTest, NearAgainAndPersistAfterFar) {
  Set("k", "v");
  ExpireAtMs("k", 33177117420000);
  const int64_t soon = clock_.UnixMicros() / 1000 + 1500;
  ExpireAtMs("k", soon);
  EXPECT_EQ(ExpiresAtMs("k"), soon);
  ExpireAtMs("k", 33177117420000);
  ExpireAtMs("k", 0);
  EXPECT_EQ(ExpiresAtMs("k"), 0);
}

TEST_F(ItemFarExpiryTest, PastOrNegativeTimesExpireAtOnce) {
  Set("k", "v");
  ExpireAtMs("k", INT64_MIN);
  EXPECT_EQ(ExpiresAtMs("k"), -2);
}

TEST_F(ItemFarExpiryTest, AppendKeepTtlAndArithCarryTheFarExpiry) {
  Set("k", "9");
  ExpireAtMs("k", 33177117420456);
  StoreArgs app;
  app.mode = StoreMode::kAppend;
  ASSERT_EQ(e_->Store("k", 0, 0, "9", app, ts_), StoreResult::kStored);
  EXPECT_EQ(ExpiresAtMs("k"), 33177117420456);
  ArithArgs incr;  // 99 -> 100 needs a longer item: a new one
  ASSERT_EQ(e_->Arith("k", incr, ts_).result, ArithResult::kOk);
  EXPECT_EQ(ValueOf(e_->Get("k", ts_)), "100");
  EXPECT_EQ(ExpiresAtMs("k"), 33177117420456);
  StoreArgs keep;
  keep.keep_ttl = true;
  ASSERT_EQ(e_->Store("k", 0, 0, "w", keep, ts_), StoreResult::kStored);
  EXPECT_EQ(ExpiresAtMs("k"), 33177117420456);
}

TEST_F(ItemFarExpiryTest, MemcachedSeesFlagsZeroAndItsTtl) {
  Set("k", "v");
  ExpireAtMs("k", 33177117420000);
  MetaGetOutput out = e_->MetaGet("k", MetaGetArgs{}, ts_);
  ASSERT_TRUE(out.item);
  EXPECT_EQ(out.item.client_flags(), 0u);
  EXPECT_EQ(out.ttl, 33177117420 - clock_.UnixSeconds());
  // touch brings it back into 32-bit seconds (sub-second part kept).
  ASSERT_TRUE(e_->Touch("k", 100, ts_));
  EXPECT_EQ(ExpiresAtMs("k"), (clock_.UnixSeconds() + 100) * 1000);
}

TEST_F(ItemFarExpiryTest, AKeyWithMemcachedFlagsStopsAtTheFarthestSecond) {
  Set("f", "v", 7);
  ExpireAtMs("f", 33177117420000);
  ItemRef r = e_->Get("f", ts_);
  ASSERT_TRUE(r);
  EXPECT_EQ(r.client_flags(), 7u);
  // About 136 years from the engine's start: not "never", not the far time.
  EXPECT_GE(r.expires_at_unix(), clock_.UnixSeconds() + int64_t{kExpiryMaxSec} - 2);
  EXPECT_LE(r.expires_at_unix(), clock_.UnixSeconds() + int64_t{kExpiryMaxSec});
}

// The slab mover copies the header word for word: the far form moves with it.
TEST_F(ItemFarExpiryTest, RescuedItemsKeepTheirFarExpiry) {
  EngineOptions o;
  o.mem_limit = 2 << 20;
  o.item_size_max = 64 * 1024;
  o.slab_automove = 0;
  o.lru_crawler = false;
  Make(o);
  e_->Start();
  const std::string v(1000, 'x');
  for (int i = 0; i < 400; ++i) Set("a" + std::to_string(i), v);
  for (int i = 1; i < 400; i += 2) ExpireAtMs("a" + std::to_string(i), INT64_MAX - i);
  for (int i = 0; i < 400; i += 2) {
    ASSERT_EQ(e_->Delete("a" + std::to_string(i), {}, ts_), DeleteResult::kDeleted);
  }
  const int cls = e_->Get("a1", ts_).slab_class();
  ASSERT_EQ(e_->SlabsReassign(cls, 0), "OK");
  bool moved = false;
  for (int i = 0; i < 500 && !moved; ++i) {
    moved = testing::StatU(e_->Stats(), "slabs_moved") == 1;
    if (!moved) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(moved);
  ASSERT_GT(testing::StatU(e_->Stats(), "slab_reassign_rescues"), 0u);
  for (int i = 1; i < 400; i += 2) {
    EXPECT_EQ(ExpiresAtMs("a" + std::to_string(i)), INT64_MAX - i) << i;
  }
  e_->Stop();
}

}  // namespace
}  // namespace trove::engine
