#include "common/mutex.h"

#include <gtest/gtest.h>

#include <thread>

namespace trove {
namespace {

TEST(MutexTest, LocksInRankOrder) {
  Mutex a(LockRank::kItemStripe), b(LockRank::kLru), c(LockRank::kSlabs);
  MutexLock la(&a);
  MutexLock lb(&b);
  MutexLock lc(&c);
  a.AssertHeld();
  c.AssertHeld();
}

TEST(MutexTest, TryLockMayGoAgainstOrder) {
  Mutex lru(LockRank::kLru), item(LockRank::kItemStripe);
  MutexLock l(&lru);
  ASSERT_TRUE(item.TryLock());
  item.Unlock();
}

TEST(MutexTest, TryLockFailsWhenHeldElsewhere) {
  Mutex m(LockRank::kItemStripe);
  m.Lock();
  bool got = true;
  std::thread t([&] { got = m.TryLock(); if (got) m.Unlock(); });
  t.join();
  EXPECT_FALSE(got);
  m.Unlock();
}

#if TROVE_DEBUG && !defined(TROVE_TSAN)
TEST(MutexDeathTest, AbortsOnLockOrderViolation) {
  auto wrong_order = [] {
    Mutex slabs(LockRank::kSlabs);
    Mutex lru(LockRank::kLru);
    MutexLock a(&slabs);
    MutexLock b(&lru);
  };
  EXPECT_DEATH(wrong_order(), "lock order violation");
}
#endif

}  // namespace
}  // namespace trove
