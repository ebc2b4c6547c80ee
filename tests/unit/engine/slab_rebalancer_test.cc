// Slab rebalancer: slabs reassign replies, moving a page evicts what lived
// in it, and automove 2 feeds a page to an evicting class.
#include "engine/slab_rebalancer.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "engine/engine.h"
#include "engine/item_observer.h"
#include "common/mutex.h"
#include <vector>
#include "engine_test_util.h"

namespace trove::engine {
namespace {

using testing::StatU;

class SlabRebalancerTest : public ::testing::Test {
 protected:
  void Make(int automove) {
    EngineOptions o;
    o.mem_limit = 2 << 20;
    o.item_size_max = 64 * 1024;  // 64 KiB pages: 32 of them
    o.slab_automove = automove;
    o.lru_crawler = false;
    e_ = testing::MakeEngine(o, &clock_);
    ts_ = e_->NewThreadStats();
  }
  int ClassOfSize(size_t value_len) {
    std::string key = "probe" + std::to_string(value_len);
    EXPECT_EQ(e_->Store(key, 0, 0, std::string(value_len, 'p'), {}, ts_), StoreResult::kStored);
    // Smallest class whose chunks fit the item (header 56 + key + value + 2).
    size_t need = 56 + key.size() + value_len + 2;
    StatList s = e_->SlabStats();
    for (int c = 1; c < 64; ++c) {
      std::string v = testing::Stat(s, std::to_string(c) + ":chunk_size");
      if (v[0] != '<' && std::stoull(v) >= need) return c;
    }
    return 0;
  }
  uint64_t Pages(int cls) {
    std::string v = testing::Stat(e_->SlabStats(), std::to_string(cls) + ":total_pages");
    return v[0] == '<' ? 0 : std::stoull(v);
  }
  template <typename F>
  bool WaitFor(F pred, int ms = 5000) {
    for (int i = 0; i < ms / 10; ++i) {
      if (pred()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return pred();
  }
  ManualClock clock_;
  std::unique_ptr<Engine> e_;
  ThreadStats* ts_ = nullptr;
};

TEST_F(SlabRebalancerTest, ReassignReplies) {
  Make(0);
  e_->Start();
  int a = ClassOfSize(100);
  EXPECT_EQ(e_->SlabsReassign(a, a), "SAME src and dst class are identical");
  EXPECT_EQ(e_->SlabsReassign(a, 99), "BADCLASS invalid src or dst class id");
  EXPECT_EQ(e_->SlabsReassign(0, a), "BADCLASS invalid src or dst class id");
  EXPECT_EQ(e_->SlabsReassign(a, a + 1), "NOSPARE source class has no spare pages");
  e_->Stop();
}

TEST_F(SlabRebalancerTest, ReassignMovesAPageAndEvictsItsItems) {
  Make(0);
  e_->Start();
  int a = ClassOfSize(1000);
  int b = ClassOfSize(5000);
  std::string v(1000, 'x');
  for (int i = 0; i < 400; ++i) ASSERT_EQ(e_->Store("a" + std::to_string(i), 0, 0, v, {}, ts_), StoreResult::kStored);
  uint64_t pa = Pages(a), pb = Pages(b);
  ASSERT_GE(pa, 2u);
  uint64_t items_before = e_->curr_items();
  ASSERT_EQ(e_->SlabsReassign(a, b), "OK");
  ASSERT_TRUE(WaitFor([&] { return StatU(e_->Stats(), "slabs_moved") == 1; }));
  EXPECT_EQ(Pages(a), pa - 1);
  EXPECT_EQ(Pages(b), pb + 1);
  StatList st = e_->Stats();
  // Items of the moved page were rescued into free chunks, for which the
  // mover made room by ordinary LRU eviction (memory is full).
  EXPECT_GT(StatU(st, "slab_reassign_rescues"), 0u);
  EXPECT_EQ(e_->curr_items(), items_before - StatU(st, "evictions"));
  // What is left is intact.
  int ok = 0;
  for (int i = 0; i < 400; ++i) {
    ItemRef r = e_->Get("a" + std::to_string(i), ts_);
    if (r) {
      EXPECT_EQ(r.value(), v);
      ++ok;
    }
  }
  EXPECT_GT(ok, 0);
  e_->Stop();
}

TEST_F(SlabRebalancerTest, ReassignRescuesItemsWhenTheClassHasFreeChunks) {
  Make(0);
  e_->Start();
  int a = ClassOfSize(1000);
  std::string v(1000, 'x');
  for (int i = 0; i < 400; ++i) ASSERT_EQ(e_->Store("a" + std::to_string(i), 0, 0, v, {}, ts_), StoreResult::kStored);
  // Free most chunks: the survivors of the moved page fit elsewhere.
  for (int i = 0; i < 400; i += 2) ASSERT_EQ(e_->Delete("a" + std::to_string(i), {}, ts_), DeleteResult::kDeleted);
  const uint64_t before = e_->curr_items();
  ASSERT_EQ(e_->SlabsReassign(a, 0), "OK");
  ASSERT_TRUE(WaitFor([&] { return StatU(e_->Stats(), "slabs_moved") == 1; }));
  EXPECT_GT(StatU(e_->Stats(), "slab_reassign_rescues"), 0u);
  EXPECT_EQ(StatU(e_->Stats(), "slab_reassign_busy_nomem"), 0u);
  EXPECT_EQ(e_->curr_items(), before);
  for (int i = 1; i < 400; i += 2) {
    ItemRef r = e_->Get("a" + std::to_string(i), ts_);
    ASSERT_TRUE(r) << i;
    EXPECT_EQ(r.value(), v);
  }
  e_->Stop();
}

// A rescued item keeps what its flags say about it: a base64 key (meta b)
// and a millisecond expiry (RESP PX) move with it.
TEST_F(SlabRebalancerTest, RescuedItemsKeepBinaryKeysAndMillisecondExpiry) {
  Make(0);
  e_->Start();
  int a = ClassOfSize(1000);
  std::string v(1000, 'x');
  const int64_t expire_ms = clock_.UnixMicros() / 1000 + 100000250;
  for (int i = 0; i < 400; ++i) {
    std::string k = "a" + std::to_string(i);
    StoreArgs args;
    args.key_binary = i % 4 == 1;
    ASSERT_EQ(e_->Store(k, 0, 0, v, args, ts_), StoreResult::kStored);
    if (i % 4 == 3) {
      KeyLockSet lock(e_.get(), k);
      ASSERT_TRUE(e_->SetExpiryMsLocked(k, expire_ms, ts_));
    }
  }
  for (int i = 0; i < 400; i += 2) ASSERT_EQ(e_->Delete("a" + std::to_string(i), {}, ts_), DeleteResult::kDeleted);
  ASSERT_EQ(e_->SlabsReassign(a, 0), "OK");
  ASSERT_TRUE(WaitFor([&] { return StatU(e_->Stats(), "slabs_moved") == 1; }));
  ASSERT_GT(StatU(e_->Stats(), "slab_reassign_rescues"), 0u);
  for (int i = 1; i < 400; i += 2) {
    ItemRef r = e_->Get("a" + std::to_string(i), ts_);
    ASSERT_TRUE(r) << i;
    EXPECT_EQ(r.key_is_binary(), i % 4 == 1) << i;
    EXPECT_EQ(r.expires_at_unix_ms(), i % 4 == 3 ? expire_ms : 0) << i;
    EXPECT_EQ(r.client_flags(), 0u) << i;
  }
  e_->Stop();
}

TEST_F(SlabRebalancerTest, ReassignToGlobalPoolThenReuse) {
  Make(0);
  e_->Start();
  int a = ClassOfSize(1000);
  std::string v(1000, 'x');
  for (int i = 0; i < 400; ++i) ASSERT_EQ(e_->Store("a" + std::to_string(i), 0, 0, v, {}, ts_), StoreResult::kStored);
  ASSERT_EQ(e_->SlabsReassign(a, 0), "OK");
  ASSERT_TRUE(WaitFor([&] { return StatU(e_->Stats(), "slab_global_page_pool") == 1; }));
  int b = ClassOfSize(3000);
  EXPECT_GE(Pages(b), 1u);
  EXPECT_EQ(StatU(e_->Stats(), "slab_global_page_pool"), 0u);
  e_->Stop();
}

// Records the slab mover's sysevents (read after Stop joins the thread).
class SysRecorder final : public ItemObserver {
 public:
  bool WantsRemovals() const override { return false; }
  void OnRemoved(const ItemRemoval&) override {}
  bool WantsSysEvents() const override { return true; }
  void OnSysEvent(const SysEvent& e) override {
    MutexLock l(&mu);
    seen.push_back(e);
  }
  size_t count() {
    MutexLock l(&mu);
    return seen.size();
  }
  Mutex mu{LockRank::kNone};
  std::vector<SysEvent> seen;
};

TEST_F(SlabRebalancerTest, AggressiveAutomoveFeedsEvictingClass) {
  SysRecorder rec;
  Make(2);
  e_->AddObserver(&rec);
  int a = ClassOfSize(1000);
  std::string va(1000, 'a');
  // Class a takes all memory.
  for (int i = 0; i < 3000; ++i) ASSERT_EQ(e_->Store("a" + std::to_string(i), 0, 0, va, {}, ts_), StoreResult::kStored);
  int b = ClassOfSize(8000);
  uint64_t pb = Pages(b);
  e_->Start();
  std::string vb(8000, 'b');
  ASSERT_TRUE(WaitFor([&] {
    for (int i = 0; i < 50; ++i) {
      EXPECT_EQ(e_->Store("b" + std::to_string(i), 0, 0, vb, {}, ts_), StoreResult::kStored);
    }
    return Pages(b) > pb;
  }, 8000));
  EXPECT_GE(StatU(e_->Stats(), "slabs_moved"), 1u);
  e_->Stop();
  // Each automove decision is a sysevent (memcached's type=slab_move).
  ASSERT_GE(rec.count(), 1u);
  bool fed_b = false;
  for (const SysEvent& ev : rec.seen) {
    EXPECT_EQ(ev.kind, SysEvent::Kind::kSlabMove);
    if (ev.dst == b && ev.ok) fed_b = true;
  }
  EXPECT_TRUE(fed_b);
  (void)a;
}

// CLIENT PAUSE holds expiry and, with it, automove's page moves (a move
// evicts what it cannot rescue): nothing moves until the hold ends.
TEST_F(SlabRebalancerTest, AutomoveWaitsWhileExpiryIsHeld) {
  Make(2);
  std::string va(1000, 'a');
  for (int i = 0; i < 3000; ++i) ASSERT_EQ(e_->Store("a" + std::to_string(i), 0, 0, va, {}, ts_), StoreResult::kStored);
  int b = ClassOfSize(8000);
  e_->HoldExpiryUntil(clock_.MonoNanos() + int64_t{3600} * 1000000000);
  e_->Start();
  std::string vb(8000, 'b');
  auto store_b = [&] {
    for (int i = 0; i < 50; ++i) {
      EXPECT_EQ(e_->Store("b" + std::to_string(i), 0, 0, vb, {}, ts_), StoreResult::kStored);
    }
  };
  // Automove looks once a second: two and a half looks find a move to make
  // (AggressiveAutomoveFeedsEvictingClass) but make none while held.
  for (int i = 0; i < 25; ++i) {
    store_b();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(StatU(e_->Stats(), "slabs_moved"), 0u);
  e_->HoldExpiryUntil(0);
  EXPECT_TRUE(WaitFor([&] {
    store_b();
    return StatU(e_->Stats(), "slabs_moved") >= 1;
  }, 8000));
  e_->Stop();
  (void)b;
}


// Chunked values: moving a page of the parts' class copies live parts into
// free chunks and relinks their neighbours; moving a page of the heads'
// class copies heads and repoints their parts. Every value reads back.
TEST(SlabRebalancerChunkTest, ReassignRescuesChunkPartsAndHeads) {
  ManualClock clock;
  EngineOptions o;
  o.mem_limit = 32 << 20;
  o.item_size_max = 64 * 1024;
  o.slab_chunk_max = 4 * 1024;  // 64 KiB values take 16+ parts
  o.lru_crawler = false;
  std::unique_ptr<Engine> e = testing::MakeEngine(o, &clock);
  ThreadStats* ts = e->NewThreadStats();
  e->Start();
  auto value = [](int i, size_t n) {
    std::string v;
    while (v.size() < n) v += std::to_string(i) + ":" + std::to_string(v.size()) + ",";
    v.resize(n);
    return v;
  };
  const int kItems = 1600;
  for (int i = 0; i < kItems; ++i) {
    ASSERT_EQ(e->Store("c" + std::to_string(i), 0, 0, value(i, 9000 + i), {}, ts),
              StoreResult::kStored);
  }
  // Free chunks in both classes, so rescues find room without evicting.
  for (int i = 0; i < kItems; i += 2) e->Delete("c" + std::to_string(i), DeleteArgs{}, ts);
  StatList slabs = e->SlabStats();
  int part_cls = 0, head_cls = 0;
  for (int c = 1; c < 64; ++c) {
    std::string v = testing::Stat(slabs, std::to_string(c) + ":chunk_size");
    if (v[0] == '<') continue;
    if (std::stoull(v) == 4096) part_cls = c;
    if (head_cls == 0 && std::stoull(v) >= 56 + 8 + 5 + 8) head_cls = c;
  }
  ASSERT_NE(part_cls, 0);
  ASSERT_NE(head_cls, 0);
  auto moved = [&](uint64_t n) {
    for (int i = 0; i < 500; ++i) {
      if (StatU(e->Stats(), "slabs_moved") >= n) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  };
  ASSERT_EQ(e->SlabsReassign(part_cls, 0), "OK");
  ASSERT_TRUE(moved(1));
  EXPECT_GT(StatU(e->Stats(), "slab_reassign_chunk_rescues"), 0u);
  std::string head_pages = testing::Stat(e->SlabStats(), std::to_string(head_cls) + ":total_pages");
  ASSERT_NE(head_pages[0], '<');
  ASSERT_GE(std::stoull(head_pages), 2u);  // 1,600 heads of ~80 bytes
  ASSERT_EQ(e->SlabsReassign(head_cls, 0), "OK");
  ASSERT_TRUE(moved(2));
  EXPECT_GT(StatU(e->Stats(), "slab_reassign_rescues"), 0u);
  int hits = 0;
  for (int i = 1; i < kItems; i += 2) {
    ItemRef r = e->Get("c" + std::to_string(i), ts);
    ASSERT_TRUE(r) << i;  // nothing was evicted: there was room
    std::string got;
    r.CopyValue(&got);
    ASSERT_EQ(got, value(i, 9000 + i)) << i;
    ++hits;
  }
  EXPECT_EQ(hits, kItems / 2);
  EXPECT_EQ(StatU(e->Stats(), "evictions"), 0u);
  e->Stop();
}

// Automove 1's window (memcached's slab_automove.c): free pages go back to
// the global pool only once memory is full and the class's last `window`
// seconds saw no evictions; below 2.5 pages of free chunks, only the
// freeratio top-up of the pool (at least 2 pages) gives one back.
class AutomoveWindowTest : public ::testing::Test {
 protected:
  void SetUp() override {
    EngineOptions o;
    o.mem_limit = 2 << 20;
    o.item_size_max = 64 * 1024;
    o.slab_automove = 1;
    o.slab_automove_window = 3;
    o.lru_crawler = false;
    e_ = testing::MakeEngine(o, &clock_);
    ts_ = e_->NewThreadStats();
  }
  // Fills memory with 1,000-byte values until it evicts; returns the count.
  int Fill() {
    const std::string v(1000, 'v');
    int i = 0;
    while (StatU(e_->Stats(), "evictions") == 0) {
      EXPECT_EQ(e_->Store("f" + std::to_string(i++), 0, 0, v, {}, ts_), StoreResult::kStored);
    }
    return i;
  }
  bool Reclaims(int* src) {
    int s = 0, d = -1;
    const bool yes = e_->AutomoveDecideForTest(&s, &d);
    clock_.AdvanceSeconds(1);
    *src = s;
    return yes && d == 0;
  }
  ManualClock clock_;
  std::unique_ptr<Engine> e_;
  ThreadStats* ts_ = nullptr;
};

TEST_F(AutomoveWindowTest, FreePagesReturnOnlyAfterAQuietWindow) {
  int src = 0;
  EXPECT_FALSE(Reclaims(&src));  // the first look only takes the baseline
  const int n = Fill();
  for (int i = 0; i < n; ++i) e_->Delete("f" + std::to_string(i), DeleteArgs{}, ts_);
  // The second that saw evictions makes the window dirty for 3 seconds.
  EXPECT_FALSE(Reclaims(&src));
  EXPECT_FALSE(Reclaims(&src));
  EXPECT_FALSE(Reclaims(&src));
  ASSERT_TRUE(Reclaims(&src));
  EXPECT_GT(src, 0);
}

TEST_F(AutomoveWindowTest, FreeratioTopsUpThePoolFromAClassWithAPageToSpare) {
  int src = 0;
  EXPECT_FALSE(Reclaims(&src));
  const int n = Fill();
  // About 1.5 pages' worth of free chunks: under the 2.5-page rule, so only
  // the pool's watermark (max(2, freeratio of all pages)) asks for a page.
  for (int i = 0; i < 90; ++i) e_->Delete("f" + std::to_string(n - 1 - i), DeleteArgs{}, ts_);
  for (int t = 0; t < 3; ++t) EXPECT_FALSE(Reclaims(&src));  // dirty window
  EXPECT_TRUE(Reclaims(&src));
}

}  // namespace
}  // namespace trove::engine
