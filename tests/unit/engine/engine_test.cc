// Engine operations: store modes, expiry, CAS, flush_all, incr/decr, chunked
// values, eviction under a tiny -m, -M, heap values, locked access, scan.
#include "engine/engine.h"

#include <gtest/gtest.h>

#include <chrono>
#include <set>
#include <thread>
#include <string>
#include <vector>

#include "engine_test_util.h"

namespace trove::engine {
namespace {

using testing::MakeEngine;
using testing::StatU;
using testing::ValueOf;

class EngineTest : public ::testing::Test {
 protected:
  void SetUp() override { Reset(EngineOptions{}); }
  void Reset(EngineOptions o) {
    e_.reset();
    e_ = MakeEngine(o, &clock_);
    ts_ = e_->NewThreadStats();
  }
  StoreResult Set(std::string_view k, std::string_view v, int64_t exp = 0, uint32_t flags = 0) {
    return e_->Store(k, flags, exp, v, StoreArgs{}, ts_);
  }
  StoreResult StoreMode_(StoreMode m, std::string_view k, std::string_view v, uint64_t cas = 0) {
    StoreArgs a;
    a.mode = m;
    if (m == StoreMode::kCas || cas != 0) a.compare_cas = cas;
    return e_->Store(k, 0, 0, v, a, ts_);
  }
  std::string GetV(std::string_view k) {
    ItemRef r = e_->Get(k, ts_);
    return r ? ValueOf(r) : "<miss>";
  }
  ArithOutput Incr(std::string_view k, uint64_t d, bool incr = true) {
    ArithArgs a;
    a.incr = incr;
    a.delta = d;
    return e_->Arith(k, a, ts_);
  }

  ManualClock clock_;
  std::unique_ptr<Engine> e_;
  ThreadStats* ts_ = nullptr;
};

TEST_F(EngineTest, SetThenGetReturnsValueFlagsAndCrlf) {
  ASSERT_EQ(Set("k", "hello", 0, 42), StoreResult::kStored);
  ItemRef r = e_->Get("k", ts_);
  ASSERT_TRUE(r);
  EXPECT_EQ(r.key(), "k");
  EXPECT_EQ(r.value(), "hello");
  EXPECT_EQ(r.client_flags(), 42u);
  EXPECT_EQ(r.value_length(), 5u);
  iovec iov[4];
  ASSERT_EQ(r.ValueSpans(iov, 4, true), 1);
  EXPECT_EQ(std::string(static_cast<char*>(iov[0].iov_base), iov[0].iov_len), "hello\r\n");
  EXPECT_NE(r.cas(), 0u);
}

TEST_F(EngineTest, AddReplaceAppendPrependFollowMemcached) {
  EXPECT_EQ(StoreMode_(StoreMode::kReplace, "k", "x"), StoreResult::kNotStored);
  EXPECT_EQ(StoreMode_(StoreMode::kAppend, "k", "x"), StoreResult::kNotStored);
  EXPECT_EQ(StoreMode_(StoreMode::kAdd, "k", "mid"), StoreResult::kStored);
  EXPECT_EQ(StoreMode_(StoreMode::kAdd, "k", "other"), StoreResult::kNotStored);
  EXPECT_EQ(StoreMode_(StoreMode::kAppend, "k", "-end"), StoreResult::kStored);
  EXPECT_EQ(StoreMode_(StoreMode::kPrepend, "k", "start-"), StoreResult::kStored);
  EXPECT_EQ(GetV("k"), "start-mid-end");
  EXPECT_EQ(StoreMode_(StoreMode::kReplace, "k", "new"), StoreResult::kStored);
  EXPECT_EQ(GetV("k"), "new");
}

TEST_F(EngineTest, AppendKeepsFlagsAndExpiry) {
  ASSERT_EQ(Set("k", "a", 100, 7), StoreResult::kStored);
  ASSERT_EQ(StoreMode_(StoreMode::kAppend, "k", "b"), StoreResult::kStored);
  ItemRef r = e_->Get("k", ts_);
  ASSERT_TRUE(r);
  EXPECT_EQ(r.client_flags(), 7u);
  EXPECT_EQ(e_->TtlSeconds(r), 100);
}

TEST_F(EngineTest, CasMissingKeyIsNotFoundAndMismatchIsExists) {
  EXPECT_EQ(StoreMode_(StoreMode::kCas, "k", "v", 12345), StoreResult::kNotFound);
  uint64_t cas = 0;
  ASSERT_EQ(e_->Store("k", 0, 0, "v1", StoreArgs{}, ts_, &cas), StoreResult::kStored);
  EXPECT_EQ(StoreMode_(StoreMode::kCas, "k", "v2", cas + 1), StoreResult::kExists);
  EXPECT_EQ(StoreMode_(StoreMode::kCas, "k", "v2", 0), StoreResult::kExists);
  EXPECT_EQ(StoreMode_(StoreMode::kCas, "k", "v2", cas), StoreResult::kStored);
  EXPECT_EQ(GetV("k"), "v2");
  // The CAS moved: the old token no longer works.
  EXPECT_EQ(StoreMode_(StoreMode::kCas, "k", "v3", cas), StoreResult::kExists);
  StatList s = e_->Stats();
  EXPECT_EQ(StatU(s, "cas_misses"), 1u);
  EXPECT_EQ(StatU(s, "cas_hits"), 1u);
  EXPECT_EQ(StatU(s, "cas_badval"), 3u);
}

TEST_F(EngineTest, CasBumpsOnEveryModification) {
  uint64_t c1 = 0, c2 = 0;
  ASSERT_EQ(e_->Store("k", 0, 0, "1", StoreArgs{}, ts_, &c1), StoreResult::kStored);
  ASSERT_EQ(e_->Store("k", 0, 0, "2", StoreArgs{}, ts_, &c2), StoreResult::kStored);
  EXPECT_GT(c2, c1);
  ArithOutput a = Incr("k", 1);
  EXPECT_GT(a.cas, c2);
}

TEST_F(EngineTest, CasOffGivesZeroCas) {
  EngineOptions o;
  o.use_cas = false;
  Reset(o);
  ASSERT_EQ(Set("k", "v"), StoreResult::kStored);
  EXPECT_EQ(e_->Get("k", ts_).cas(), 0u);
}

TEST_F(EngineTest, ExpiryRelativeAbsoluteNegativeAndZero) {
  const int64_t now = clock_.UnixSeconds();
  ASSERT_EQ(Set("never", "v", 0), StoreResult::kStored);
  ASSERT_EQ(Set("rel", "v", 10), StoreResult::kStored);
  ASSERT_EQ(Set("abs", "v", now + 20), StoreResult::kStored);
  ASSERT_EQ(Set("neg", "v", -1), StoreResult::kStored);
  ASSERT_EQ(Set("past", "v", now - 5), StoreResult::kStored);
  ASSERT_EQ(Set("maxrel", "v", 60 * 60 * 24 * 30), StoreResult::kStored);
  EXPECT_EQ(GetV("neg"), "<miss>");
  EXPECT_EQ(GetV("past"), "<miss>");
  EXPECT_EQ(GetV("rel"), "v");
  clock_.AdvanceSeconds(9);
  EXPECT_EQ(GetV("rel"), "v");
  clock_.AdvanceSeconds(1);
  EXPECT_EQ(GetV("rel"), "<miss>");  // expires at exactly +10
  EXPECT_EQ(GetV("abs"), "v");
  clock_.AdvanceSeconds(10);
  EXPECT_EQ(GetV("abs"), "<miss>");
  // 30 days exactly is still relative, so it is alive.
  EXPECT_EQ(GetV("maxrel"), "v");
  clock_.AdvanceSeconds(1000000);
  EXPECT_EQ(GetV("never"), "v");
  EXPECT_GE(StatU(e_->Stats(), "get_expired"), 3u);
}

TEST_F(EngineTest, ExpiresAtUnixAndTtl) {
  const int64_t now = clock_.UnixSeconds();
  ASSERT_EQ(Set("k", "v", 100), StoreResult::kStored);
  ItemRef r = e_->Get("k", ts_);
  EXPECT_EQ(r.expires_at_unix(), now + 100);
  EXPECT_EQ(e_->TtlSeconds(r), 100);
  ASSERT_EQ(Set("n", "v", 0), StoreResult::kStored);
  ItemRef n = e_->Get("n", ts_);
  EXPECT_EQ(n.expires_at_unix(), 0);
  EXPECT_EQ(e_->TtlSeconds(n), -1);
}

TEST_F(EngineTest, TouchAndGetAndTouchChangeExpiry) {
  ASSERT_EQ(Set("k", "v", 5), StoreResult::kStored);
  EXPECT_TRUE(e_->Touch("k", 100, ts_));
  EXPECT_FALSE(e_->Touch("missing", 100, ts_));
  clock_.AdvanceSeconds(50);
  EXPECT_EQ(GetV("k"), "v");
  ItemRef r = e_->GetAndTouch("k", 10, ts_);
  ASSERT_TRUE(r);
  EXPECT_EQ(e_->TtlSeconds(r), 10);
  r.Reset();
  clock_.AdvanceSeconds(11);
  EXPECT_EQ(GetV("k"), "<miss>");
  StatList s = e_->Stats();
  EXPECT_EQ(StatU(s, "touch_hits"), 2u);
  EXPECT_EQ(StatU(s, "touch_misses"), 1u);
  EXPECT_EQ(StatU(s, "cmd_touch"), 3u);
}

TEST_F(EngineTest, FlushAllImmediateHidesOlderItemsOnly) {
  ASSERT_EQ(Set("a", "1"), StoreResult::kStored);
  e_->FlushAll(0);
  EXPECT_EQ(GetV("a"), "<miss>");
  ASSERT_EQ(Set("b", "2"), StoreResult::kStored);
  EXPECT_EQ(GetV("b"), "2");
  EXPECT_EQ(StatU(e_->Stats(), "get_flushed"), 1u);
}

TEST_F(EngineTest, FlushAllWithDelayTakesEffectLater) {
  ASSERT_EQ(Set("a", "1"), StoreResult::kStored);
  e_->FlushAll(10);
  EXPECT_EQ(GetV("a"), "1");
  clock_.AdvanceSeconds(5);
  ASSERT_EQ(Set("b", "2"), StoreResult::kStored);
  clock_.AdvanceSeconds(3);
  EXPECT_EQ(GetV("a"), "1");
  EXPECT_EQ(GetV("b"), "2");
  // memcached's deadline is the second before now + delay.
  clock_.AdvanceSeconds(2);
  EXPECT_EQ(GetV("a"), "<miss>");
  EXPECT_EQ(GetV("b"), "<miss>");  // stored before the deadline
  ASSERT_EQ(Set("c", "3"), StoreResult::kStored);
  EXPECT_EQ(GetV("c"), "3");
}

// OBJECT IDLETIME and RESTORE ... IDLETIME (Engine::IdleSeconds,
// SetIdleSecondsLocked): dated back at most to the engine's time 0, and
// never to or before a flush_all, which would make the item dead.
TEST_F(EngineTest, IdleSecondsFollowAccessAndCanBeDatedBack) {
  clock_.AdvanceSeconds(100);
  ASSERT_EQ(Set("a", "1"), StoreResult::kStored);
  clock_.AdvanceSeconds(7);
  {
    KeyLockSet l(e_.get(), "a");
    ItemRef r = e_->GetLocked("a", ts_, false);
    ASSERT_TRUE(r);
    EXPECT_EQ(e_->IdleSeconds(r), 7);
    e_->SetIdleSecondsLocked(r, 50);
    EXPECT_EQ(e_->IdleSeconds(r), 50);
    e_->SetIdleSecondsLocked(r, 1000000);
    EXPECT_EQ(e_->IdleSeconds(r), 109);  // the engine's clock starts 2 s before it
  }
  {
    KeyLockSet l(e_.get(), "a");
    ItemRef r = e_->GetLocked("a", ts_);  // a bumping read renews it
    EXPECT_EQ(e_->IdleSeconds(r), 0);
  }
  e_->FlushAll(0);
  clock_.AdvanceSeconds(1);
  ASSERT_EQ(Set("b", "2"), StoreResult::kStored);
  clock_.AdvanceSeconds(5);
  {
    KeyLockSet l(e_.get(), "b");
    ItemRef r = e_->GetLocked("b", ts_, false);
    e_->SetIdleSecondsLocked(r, 1000);
    EXPECT_GE(e_->IdleSeconds(r), 5);
    EXPECT_LE(e_->IdleSeconds(r), 6);
  }
  EXPECT_EQ(GetV("b"), "2");
}

TEST_F(EngineTest, IncrDecrEdgeCases) {
  ASSERT_EQ(Set("n", "10"), StoreResult::kStored);
  ArithOutput a = Incr("n", 5);
  EXPECT_EQ(a.result, ArithResult::kOk);
  EXPECT_EQ(a.value, 15u);
  EXPECT_EQ(GetV("n"), "15");
  a.item.Reset();  // our reference would force a copy
  a = Incr("n", 100, false);
  EXPECT_EQ(a.value, 0u);  // decr floors at 0
  EXPECT_EQ(GetV("n"), "0 ");  // rewritten in place, space padded (memcached)
  ASSERT_EQ(Set("max", "18446744073709551615"), StoreResult::kStored);
  a = Incr("max", 2);
  EXPECT_EQ(a.value, 1u);  // wraps at 2^64
  ASSERT_EQ(Set("g", "99"), StoreResult::kStored);
  a = Incr("g", 1);
  EXPECT_EQ(a.value, 100u);
  EXPECT_EQ(GetV("g"), "100");  // grew: a new item
  ASSERT_EQ(Set("txt", "abc"), StoreResult::kStored);
  EXPECT_EQ(Incr("txt", 1).result, ArithResult::kNonNumeric);
  ASSERT_EQ(Set("neg", "-5"), StoreResult::kStored);
  EXPECT_EQ(Incr("neg", 1).result, ArithResult::kNonNumeric);
  ASSERT_EQ(Set("empty", ""), StoreResult::kStored);
  EXPECT_EQ(Incr("empty", 1).result, ArithResult::kNonNumeric);
  ASSERT_EQ(Set("big", "99999999999999999999"), StoreResult::kStored);
  EXPECT_EQ(Incr("big", 1).result, ArithResult::kNonNumeric);
  ASSERT_EQ(Set("sp", " 7 "), StoreResult::kStored);
  EXPECT_EQ(Incr("sp", 1).value, 8u);
  EXPECT_EQ(Incr("missing", 1).result, ArithResult::kNotFound);
  EXPECT_EQ(Incr("missing", 1, false).result, ArithResult::kNotFound);
  StatList s = e_->Stats();
  EXPECT_EQ(StatU(s, "incr_misses"), 1u);
  EXPECT_EQ(StatU(s, "decr_misses"), 1u);
  EXPECT_EQ(StatU(s, "decr_hits"), 1u);
}

TEST_F(EngineTest, IncrWhileReaderHoldsValueAllocatesNewItem) {
  ASSERT_EQ(Set("n", "5"), StoreResult::kStored);
  ItemRef reader = e_->Get("n", ts_);
  ArithOutput a = Incr("n", 1);
  EXPECT_EQ(a.value, 6u);
  EXPECT_EQ(reader.value(), "5");  // the reader's bytes never change under it
  EXPECT_EQ(GetV("n"), "6");
}

TEST_F(EngineTest, ArithVivifyCompareAndTouch) {
  ArithArgs a;
  a.vivify_exptime = 0;
  a.initial = 40;
  ArithOutput o = e_->Arith("v", a, ts_);
  EXPECT_EQ(o.result, ArithResult::kOk);
  EXPECT_EQ(o.value, 40u);
  EXPECT_TRUE(o.vivified);
  a.vivify_exptime.reset();
  a.compare_cas = o.cas + 100;
  EXPECT_EQ(e_->Arith("v", a, ts_).result, ArithResult::kExists);
  a.compare_cas = o.cas;
  a.touch_exptime = 30;
  o = e_->Arith("v", a, ts_);
  EXPECT_EQ(o.value, 41u);
  EXPECT_FALSE(o.vivified);
  EXPECT_EQ(o.ttl, 30);
}

TEST_F(EngineTest, DeleteAndDeleteWithCas) {
  uint64_t cas = 0;
  ASSERT_EQ(e_->Store("k", 0, 0, "v", StoreArgs{}, ts_, &cas), StoreResult::kStored);
  DeleteArgs d;
  d.compare_cas = cas + 1;
  EXPECT_EQ(e_->Delete("k", d, ts_), DeleteResult::kExists);
  d.compare_cas = cas;
  EXPECT_EQ(e_->Delete("k", d, ts_), DeleteResult::kDeleted);
  EXPECT_EQ(e_->Delete("k", DeleteArgs{}, ts_), DeleteResult::kNotFound);
  EXPECT_EQ(GetV("k"), "<miss>");
  EXPECT_EQ(e_->curr_items(), 0u);
}

TEST_F(EngineTest, CompareAgainstCasZeroNeverStores) {
  // memcached: a zero unique is "no CAS", so a compared store with it fails,
  // with CAS on or off; a compared set turns into a cas.
  for (bool use_cas : {true, false}) {
    EngineOptions o;
    o.use_cas = use_cas;
    Reset(o);
    ASSERT_EQ(Set("k", "v"), StoreResult::kStored);
    EXPECT_EQ(StoreMode_(StoreMode::kCas, "k", "x", 0), StoreResult::kExists);
    StoreArgs a;
    a.compare_cas = 0;  // ms k C0 (mode S)
    EXPECT_EQ(e_->Store("k", 0, 0, "x", a, ts_), StoreResult::kExists);
    a.compare_cas = 12345;  // a compared set on a missing key is a cas miss
    EXPECT_EQ(e_->Store("absent", 0, 0, "x", a, ts_), StoreResult::kNotFound);
    EXPECT_EQ(GetV("k"), "v");
  }
}

TEST_F(EngineTest, DeleteCompareIsPlainEquality) {
  // md C0: never matches with CAS on; matches the CAS-less item with -C.
  ASSERT_EQ(Set("k", "v"), StoreResult::kStored);
  DeleteArgs d;
  d.compare_cas = 0;
  EXPECT_EQ(e_->Delete("k", d, ts_), DeleteResult::kExists);
  EngineOptions o;
  o.use_cas = false;
  Reset(o);
  ASSERT_EQ(Set("k", "v"), StoreResult::kStored);
  EXPECT_EQ(e_->Delete("k", d, ts_), DeleteResult::kDeleted);
  EXPECT_EQ(GetV("k"), "<miss>");
}

TEST_F(EngineTest, ChunkedValuesAroundSlabChunkMax) {
  const size_t chunk_max = EngineOptions{}.item_size_max / 2;
  for (size_t len : {chunk_max - 100, chunk_max - 60, chunk_max, chunk_max + 1, chunk_max * 2 - 200,
                     EngineOptions{}.item_size_max - 200}) {
    std::string v(len, 'x');
    for (size_t i = 0; i < len; ++i) v[i] = static_cast<char>('a' + (i * 7 + len) % 26);
    std::string key = "big" + std::to_string(len);
    ASSERT_EQ(Set(key, v), StoreResult::kStored) << len;
    ItemRef r = e_->Get(key, ts_);
    ASSERT_TRUE(r);
    EXPECT_EQ(ValueOf(r), v) << len;
    EXPECT_EQ(r.value_length(), len);
    iovec iov[16];
    int n = r.ValueSpans(iov, 16, true);
    std::string joined;
    for (int i = 0; i < n; ++i) joined.append(static_cast<char*>(iov[i].iov_base), iov[i].iov_len);
    EXPECT_EQ(joined, v + "\r\n") << len;
    if (len > chunk_max) {
      EXPECT_TRUE(r.is_chunked()) << len;
    }
  }
}

TEST_F(EngineTest, ValueAtItemSizeMaxIsTooLarge) {
  std::string v(EngineOptions{}.item_size_max, 'x');
  ASSERT_EQ(Set("k", "old"), StoreResult::kStored);
  EXPECT_EQ(Set("k", v), StoreResult::kTooLarge);
  // A failed set drops the old value (memcached).
  EXPECT_EQ(GetV("k"), "<miss>");
  EXPECT_EQ(StatU(e_->Stats(), "store_too_large"), 1u);
}

TEST_F(EngineTest, AppendToChunkedValue) {
  std::string v(700 * 1024, 'q');
  ASSERT_EQ(Set("k", v), StoreResult::kStored);
  ASSERT_EQ(StoreMode_(StoreMode::kAppend, "k", "tail"), StoreResult::kStored);
  EXPECT_EQ(GetV("k"), v + "tail");
}

TEST_F(EngineTest, AllocateFillStoreTwoStep) {
  AllocOutput a = e_->Allocate("k", 3, 0, 5, ts_);
  ASSERT_EQ(a.status, AllocStatus::kOk);
  std::memcpy(a.item.writable_value(), "abcde", 5);
  ASSERT_EQ(e_->StoreItem(a.item, StoreArgs{}, ts_), StoreResult::kStored);
  EXPECT_EQ(a.item.value(), "abcde");
  EXPECT_EQ(GetV("k"), "abcde");
}

TEST_F(EngineTest, EvictsUnderTinyMemoryLimit) {
  EngineOptions o;
  o.mem_limit = 2 << 20;
  o.item_size_max = 64 * 1024;
  Reset(o);
  std::string v(1000, 'v');
  for (int i = 0; i < 10000; ++i) {
    ASSERT_EQ(Set("key" + std::to_string(i), v), StoreResult::kStored) << i;
  }
  StatList s = e_->Stats();
  EXPECT_GT(StatU(s, "evictions"), 5000u);
  EXPECT_LT(e_->curr_items(), 2100u);
  EXPECT_EQ(GetV("key9999"), v);  // the newest survives
  EXPECT_EQ(GetV("key0"), "<miss>");
}

TEST_F(EngineTest, NoEvictModeReturnsNoMemory) {
  EngineOptions o;
  o.mem_limit = 1 << 20;
  o.item_size_max = 64 * 1024;
  o.evict_to_free = false;
  Reset(o);
  std::string v(1000, 'v');
  int stored = 0;
  StoreResult last = StoreResult::kStored;
  for (int i = 0; i < 5000 && last == StoreResult::kStored; ++i) {
    last = Set("key" + std::to_string(i), v);
    if (last == StoreResult::kStored) ++stored;
  }
  EXPECT_EQ(last, StoreResult::kNoMemory);
  EXPECT_GT(stored, 500);
  EXPECT_EQ(GetV("key0"), v);  // nothing was evicted
  EXPECT_EQ(StatU(e_->Stats(), "evictions"), 0u);
}

TEST_F(EngineTest, ExpiredItemsAreReclaimedBeforeEviction) {
  EngineOptions o;
  o.mem_limit = 1 << 20;
  o.item_size_max = 64 * 1024;
  o.evict_to_free = false;
  Reset(o);
  std::string v(1000, 'v');
  int i = 0;
  while (Set("old" + std::to_string(i), v, 5) == StoreResult::kStored) ++i;
  clock_.AdvanceSeconds(10);
  // With -M, only reclaiming expired items makes room.
  for (int j = 0; j < 100; ++j) ASSERT_EQ(Set("new" + std::to_string(j), v), StoreResult::kStored);
  EXPECT_GE(StatU(e_->Stats(), "reclaimed"), 100u);
}

TEST_F(EngineTest, HeldItemIsNotEvicted) {
  EngineOptions o;
  o.mem_limit = 1 << 20;
  o.item_size_max = 64 * 1024;
  Reset(o);
  std::string v(1000, 'v');
  ASSERT_EQ(Set("pinned", v), StoreResult::kStored);
  ItemRef pin = e_->Get("pinned", ts_);
  for (int i = 0; i < 5000; ++i) ASSERT_EQ(Set("k" + std::to_string(i), v), StoreResult::kStored);
  // Evicted or not, the held memory still holds our bytes.
  EXPECT_EQ(pin.value(), v);
  EXPECT_GT(StatU(e_->Stats(), "lrutail_reflocked"), 0u);
}

class TestHeap : public HeapValue {
 public:
  explicit TestHeap(size_t n, int* deleted) : n_(n), deleted_(deleted) {}
  ~TestHeap() override { ++*deleted_; }
  size_t MemoryUsage() const override { return n_; }

 private:
  size_t n_;
  int* deleted_;
};

TEST_F(EngineTest, HeapValuesCountAgainstLimitAndAreDeleted) {
  int deleted = 0;
  AllocOutput a = e_->AllocateHeap("h", 0, ValueType::kHash,
                                   std::make_unique<TestHeap>(1000, &deleted), ts_);
  ASSERT_EQ(a.status, AllocStatus::kOk);
  {
    KeyLockSet lock(e_.get(), "h");
    ASSERT_EQ(e_->StoreItemLocked(a.item, StoreArgs{}, ts_), StoreResult::kStored);
    ItemRef r = e_->GetLocked("h", ts_);
    ASSERT_TRUE(r);
    EXPECT_TRUE(r.is_heap());
    EXPECT_EQ(r.type(), ValueType::kHash);
    EXPECT_EQ(r.heap()->MemoryUsage(), 1000u);
  }
  a.item.Reset();
  EXPECT_EQ(e_->Delete("h", DeleteArgs{}, ts_), DeleteResult::kDeleted);
  EXPECT_EQ(deleted, 1);
  // Over the limit: refused.
  AllocOutput big = e_->AllocateHeap("x", 0, ValueType::kList,
                                     std::make_unique<TestHeap>(size_t{1} << 40, &deleted), ts_);
  EXPECT_EQ(big.status, AllocStatus::kNoMemory);
}

TEST_F(EngineTest, LockedOperationsUnderKeyLockSet) {
  ASSERT_EQ(Set("a", "1", 0), StoreResult::kStored);
  ASSERT_EQ(Set("b", "2", 0), StoreResult::kStored);
  std::vector<std::string_view> keys = {"b", "a", "b", "c"};
  {
    KeyLockSet lock(e_.get(), keys);
    EXPECT_TRUE(e_->GetLocked("a", ts_));
    EXPECT_TRUE(e_->UnlinkLocked("a", ts_));
    EXPECT_FALSE(e_->UnlinkLocked("a", ts_));
    EXPECT_TRUE(e_->SetExpiryMsLocked("b", (clock_.UnixSeconds() + 50) * 1000, ts_));
    EXPECT_FALSE(e_->SetExpiryMsLocked("c", 0, ts_));
  }
  EXPECT_EQ(GetV("a"), "<miss>");
  ItemRef b = e_->Get("b", ts_);
  EXPECT_EQ(e_->TtlSeconds(b), 50);
}

// RESP expiries are kept to the millisecond (kItemExpMs): they fall exactly,
// memcached readers see client flags 0, and appends, KEEPTTL and page moves
// carry the milliseconds along.
TEST_F(EngineTest, MillisecondExpiryFallsOnTheMillisecond) {
  const int64_t now_ms = clock_.UnixMicros() / 1000;
  ASSERT_EQ(Set("k", "v", 0), StoreResult::kStored);
  {
    KeyLockSet lock(e_.get(), "k");
    ASSERT_TRUE(e_->SetExpiryMsLocked("k", now_ms + 2345, ts_));
  }
  {
    ItemRef r = e_->Get("k", ts_);
    ASSERT_TRUE(r);
    EXPECT_EQ(r.expires_at_unix_ms(), now_ms + 2345);
    EXPECT_EQ(r.client_flags(), 0u);  // the milliseconds are not flags
  }
  // An append keeps the expiry, milliseconds included.
  StoreArgs app;
  app.mode = StoreMode::kAppend;
  ASSERT_EQ(e_->Store("k", 0, 0, "w", app, ts_), StoreResult::kStored);
  EXPECT_EQ(e_->Get("k", ts_).expires_at_unix_ms(), now_ms + 2345);
  clock_.AdvanceMicros(2344 * 1000);
  EXPECT_EQ(GetV("k"), "vw");
  clock_.AdvanceMicros(1000);
  EXPECT_EQ(GetV("k"), "<miss>");
}

TEST_F(EngineTest, MillisecondExpiryOnANewItemAndKeepTtl) {
  const int64_t now_ms = clock_.UnixMicros() / 1000;
  AllocOutput a = e_->Allocate("n", 0, 0, 1, ts_);
  ASSERT_EQ(a.status, AllocStatus::kOk);
  a.item.writable_value()[0] = 'x';
  e_->SetNewItemExpiryMs(a.item, now_ms + 250);
  ASSERT_EQ(e_->StoreItem(a.item, StoreArgs{}, ts_), StoreResult::kStored);
  StoreArgs keep;
  keep.keep_ttl = true;
  ASSERT_EQ(e_->Store("n", 0, 0, "y", keep, ts_), StoreResult::kStored);
  EXPECT_EQ(e_->Get("n", ts_).expires_at_unix_ms(), now_ms + 250);
  clock_.AdvanceMicros(249 * 1000);
  EXPECT_EQ(GetV("n"), "y");
  clock_.AdvanceMicros(1000);
  EXPECT_EQ(GetV("n"), "<miss>");
}

TEST_F(EngineTest, MillisecondExpiryRoundsUpWhenMemcachedFlagsHoldTheSlot) {
  const int64_t now_ms = clock_.UnixMicros() / 1000;
  ASSERT_EQ(e_->Store("f", 7, 0, "v", StoreArgs{}, ts_), StoreResult::kStored);
  {
    KeyLockSet lock(e_.get(), "f");
    ASSERT_TRUE(e_->SetExpiryMsLocked("f", now_ms + 1500, ts_));
  }
  ItemRef r = e_->Get("f", ts_);
  EXPECT_EQ(r.client_flags(), 7u);
  EXPECT_EQ(r.expires_at_unix_ms(), (now_ms / 1000 + 2) * 1000);  // the next whole second
}

TEST_F(EngineTest, KeepTtlKeepsOldExpiry) {
  ASSERT_EQ(Set("k", "1", 100), StoreResult::kStored);
  StoreArgs a;
  a.keep_ttl = true;
  ASSERT_EQ(e_->Store("k", 0, 0, "2", a, ts_), StoreResult::kStored);
  EXPECT_EQ(e_->TtlSeconds(e_->Get("k", ts_)), 100);
}

TEST_F(EngineTest, ScanVisitsEveryKeyOnce) {
  std::set<std::string> want;
  for (int i = 0; i < 3000; ++i) {
    std::string k = "s" + std::to_string(i);
    ASSERT_EQ(Set(k, "v"), StoreResult::kStored);
    want.insert(k);
  }
  std::multiset<std::string> seen;
  uint64_t cursor = 0;
  do {
    cursor = e_->Scan(cursor, 100, [&](const ItemRef& r) { seen.insert(std::string(r.key())); });
  } while (cursor != 0);
  EXPECT_EQ(seen.size(), want.size());
  EXPECT_EQ(std::set<std::string>(seen.begin(), seen.end()), want);
}

TEST_F(EngineTest, CreateRejectsBadOptions) {
  EngineOptions o;
  o.factor = 1.0;
  EXPECT_FALSE(Engine::Create(o).ok());
  o = EngineOptions{};
  o.slab_chunk_max = 300 * 1024;  // does not divide 1 MiB
  EXPECT_FALSE(Engine::Create(o).ok());
  o = EngineOptions{};
  o.hashpower_init = 2;
  EXPECT_FALSE(Engine::Create(o).ok());
}

}  // namespace
}  // namespace trove::engine

namespace trove::engine {
namespace {

// With the system clock and Start(), time comes from the 100 ms ticker.
TEST(EngineClockTest, SystemClockExpiryWithTickerRunning) {
  auto r = Engine::Create(EngineOptions{});
  ASSERT_TRUE(r.ok());
  std::unique_ptr<Engine> e = std::move(r).value();
  e->Start();
  ThreadStats* ts = e->NewThreadStats();
  ASSERT_EQ(e->Store("k", 0, 1, "v", StoreArgs{}, ts), StoreResult::kStored);
  ASSERT_EQ(e->Store("keep", 0, 100, "v", StoreArgs{}, ts), StoreResult::kStored);
  EXPECT_TRUE(e->Get("k", ts));
  std::this_thread::sleep_for(std::chrono::milliseconds(2300));
  EXPECT_FALSE(e->Get("k", ts));
  ItemRef keep = e->Get("keep", ts);
  ASSERT_TRUE(keep);
  EXPECT_GE(e->TtlSeconds(keep), 97);
  EXPECT_LE(e->TtlSeconds(keep), 99);
  keep.Reset();
  e->Stop();
}

// CLIENT PAUSE: expired keys read as missing but stay, uncounted, until the
// hold ends; a write to a held key replaces it (the key is never linked twice).
TEST_F(EngineTest, HeldExpiryKeepsExpiredKeysUntilReleased) {
  ASSERT_EQ(Set("k", "v", 10), StoreResult::kStored);
  ASSERT_EQ(Set("w", "v", 10), StoreResult::kStored);
  e_->HoldExpiryUntil(clock_.MonoNanos() + int64_t{3600} * 1000000000);
  clock_.AdvanceSeconds(20);
  const uint64_t base = e_->ExpiredTotal();
  EXPECT_EQ(GetV("k"), "<miss>");
  EXPECT_EQ(e_->ExpiredTotal(), base);
  EXPECT_EQ(StatU(e_->Stats(), "curr_items"), 2u);
  ASSERT_EQ(Set("w", "new"), StoreResult::kStored);
  EXPECT_EQ(GetV("w"), "new");
  EXPECT_EQ(e_->ExpiredTotal(), base + 1);  // the replaced held item
  EXPECT_EQ(StatU(e_->Stats(), "curr_items"), 2u);
  e_->HoldExpiryUntil(0);
  EXPECT_EQ(GetV("k"), "<miss>");
  EXPECT_EQ(e_->ExpiredTotal(), base + 2);
  EXPECT_EQ(StatU(e_->Stats(), "curr_items"), 1u);
}

}  // namespace
}  // namespace trove::engine
