// ItemLocks: try-lock skips stripes this thread holds; KeyLockSet locks in
// ascending order and deduplicates.
#include "engine/item_locks.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "engine/engine.h"
#include "engine_test_util.h"

namespace trove::engine {
namespace {

TEST(ItemLocksTest, TryLockFailsOnStripeHeldByThisThread) {
  ItemLocks locks(4);
  locks.Lock(3);
  EXPECT_TRUE(locks.HeldByMe(3));
  EXPECT_FALSE(locks.TryLock(3));
  EXPECT_TRUE(locks.TryLock(4));
  EXPECT_TRUE(locks.HeldByMe(4));
  locks.Unlock(4);
  locks.Unlock(3);
  EXPECT_FALSE(locks.HeldByMe(3));
  EXPECT_TRUE(locks.TryLock(3));
  locks.Unlock(3);
}

TEST(ItemLocksTest, TryLockFailsWhenAnotherThreadHolds) {
  ItemLocks locks(2);
  std::atomic<bool> held{false}, release{false};
  std::thread t([&] {
    locks.Lock(1);
    held = true;
    while (!release) std::this_thread::yield();
    locks.Unlock(1);
  });
  while (!held) std::this_thread::yield();
  EXPECT_FALSE(locks.HeldByMe(1));
  EXPECT_FALSE(locks.TryLock(1));
  release = true;
  t.join();
  EXPECT_TRUE(locks.TryLock(1));
  locks.Unlock(1);
}

TEST(ItemLocksTest, StripeMasksHash) {
  ItemLocks locks(4);
  EXPECT_EQ(locks.count(), 16u);
  EXPECT_EQ(locks.StripeOf(0x1234567f), 0xfu);
}

TEST(ItemLocksTest, KeyLockSetsOnOverlappingKeysDoNotDeadlock) {
  ManualClock clock;
  EngineOptions o;
  o.item_lock_power = 4;
  auto e = testing::MakeEngine(o, &clock);
  std::atomic<int> done{0};
  auto worker = [&](bool reverse) {
    ThreadStats* ts = e->NewThreadStats();
    for (int i = 0; i < 2000; ++i) {
      std::string a = "a" + std::to_string(i % 50), b = "b" + std::to_string(i % 37);
      std::vector<std::string_view> keys = reverse ? std::vector<std::string_view>{b, a, b}
                                                   : std::vector<std::string_view>{a, b};
      KeyLockSet lock(e.get(), keys);
      // Read-modify-write both keys atomically.
      ItemRef ra = e->GetLocked(a, ts);
      AllocOutput n = e->Allocate(a, 0, 0, 1, ts);
      n.item.writable_value()[0] = 'x';
      EXPECT_EQ(e->StoreItemLocked(n.item, StoreArgs{}, ts), StoreResult::kStored);
    }
    ++done;
  };
  std::thread t1(worker, false), t2(worker, true);
  t1.join();
  t2.join();
  EXPECT_EQ(done.load(), 2);
}

}  // namespace
}  // namespace trove::engine
