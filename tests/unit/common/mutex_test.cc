#include "common/mutex.h"

#include <gtest/gtest.h>

#include <memory>
#include <thread>
#include <vector>

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

// The wait gives the mutex up; another thread takes and releases it (which
// cleared the debug owner before the fix); after the wait the waiter holds
// it again and AssertHeld must say so.
TEST(MutexTest, HeldAgainAfterACondVarWaitThatAnotherThreadInterrupted) {
  Mutex mu(LockRank::kLeaf);
  CondVar cv(&mu);
  bool ready = false;
  mu.Lock();
  std::thread t([&] {
    mu.Lock();
    ready = true;
    cv.Signal();
    mu.Unlock();
  });
  while (!ready) cv.WaitFor(1000);
  mu.AssertHeld();
  mu.Unlock();
  t.join();
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

namespace trove {
namespace {

// Hash-table growth locks every item stripe at once (ItemLocks::LockAll):
// thousands of one rank. The debug rank record used to overflow at 64.
TEST(MutexTest, ManyLocksOfOneRankThenAHigherRank) {
  std::vector<std::unique_ptr<Mutex>> stripes;
  for (int i = 0; i < 5000; ++i) stripes.push_back(std::make_unique<Mutex>(LockRank::kItemStripe));
  for (auto& m : stripes) m->Lock();
  Mutex lru(LockRank::kLru);
  lru.Lock();  // still above every held stripe
  lru.Unlock();
  for (auto& m : stripes) m->Unlock();
  Mutex slabs(LockRank::kSlabs), item(LockRank::kItemStripe);
  slabs.Lock();  // nothing is left held: any order is fine again
  slabs.Unlock();
  item.Lock();
  item.Unlock();
}

}  // namespace
}  // namespace trove
