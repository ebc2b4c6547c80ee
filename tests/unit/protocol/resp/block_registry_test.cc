// BlockRegistry: arrival order of a key's waiters and the hand-over of a key
// whose first waiter another worker is serving. Test thread only.
#include "protocol/resp/services/block_registry.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

namespace trove::resp {
namespace {

std::shared_ptr<Waiter> MakeWaiter(uint64_t id, int64_t arrival,
                                   std::vector<std::string> keys) {
  auto w = std::make_shared<Waiter>();
  w->conn_id = id;
  w->token = 1;
  w->arrival_ns = arrival;
  w->wait_keys = keys;
  w->lock_keys = std::move(keys);
  return w;
}

TEST(BlockRegistryTest, QueuesByArrivalNotByRegistration) {
  BlockRegistry r;
  r.Add(MakeWaiter(2, 200, {"k"}));
  r.Add(MakeWaiter(1, 100, {"k"}));  // reached the server first, registered second
  std::shared_ptr<Waiter> w = r.ClaimHead("k");
  ASSERT_TRUE(w);
  EXPECT_EQ(w->conn_id, 1u);
}

// The head is being served by one worker when another worker's push serves
// the same key: the second must not hand the data to the client behind it
// (the head, finding none, would stay blocked for ever); the key goes back
// to the first serve, which then reaches the next client.
TEST(BlockRegistryTest, ServingHeadHoldsItsQueueAndGetsTheKeyBack) {
  BlockRegistry r;
  r.Add(MakeWaiter(1, 100, {"src"}));
  r.Add(MakeWaiter(2, 200, {"src"}));
  std::shared_ptr<Waiter> a = r.ClaimHead("src");  // worker 0
  ASSERT_TRUE(a);
  EXPECT_EQ(a->conn_id, 1u);
  EXPECT_EQ(r.ClaimHead("src"), nullptr);  // worker 1: a is still in its turn
  EXPECT_EQ(r.ClaimHead("src"), nullptr);  // asked twice, recorded once
  std::vector<std::string> recheck;
  EXPECT_EQ(r.FinishServe(a, /*served=*/true, &recheck), Waiter::Cancel::kNone);
  EXPECT_EQ(recheck, std::vector<std::string>{"src"});
  std::shared_ptr<Waiter> b = r.ClaimHead("src");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->conn_id, 2u);
  recheck.clear();
  EXPECT_EQ(r.FinishServe(b, true, &recheck), Waiter::Cancel::kNone);
  EXPECT_TRUE(recheck.empty());
  EXPECT_EQ(r.blocked_clients(), 0);
  EXPECT_EQ(r.blocking_keys(), 0);
}

// A waiter on two keys served through the first: a push to the second key
// on another worker leaves that key to it, and the key comes back even when
// the serve found no data (the waiter waits again).
TEST(BlockRegistryTest, KeyOfAWaiterServedThroughAnotherKeyComesBack) {
  BlockRegistry r;
  r.Add(MakeWaiter(1, 100, {"k1", "k2"}));
  r.Add(MakeWaiter(2, 200, {"k2"}));
  std::shared_ptr<Waiter> a = r.ClaimHead("k1");
  ASSERT_TRUE(a);
  EXPECT_EQ(r.ClaimHead("k2"), nullptr);
  std::vector<std::string> recheck;
  EXPECT_EQ(r.FinishServe(a, /*served=*/false, &recheck), Waiter::Cancel::kNone);
  EXPECT_EQ(recheck, std::vector<std::string>{"k2"});
  std::shared_ptr<Waiter> again = r.ClaimHead("k2");  // a is first on k2 too
  ASSERT_TRUE(again);
  EXPECT_EQ(again->conn_id, 1u);
  recheck.clear();
  EXPECT_EQ(r.FinishServe(again, true, &recheck), Waiter::Cancel::kNone);
  std::shared_ptr<Waiter> b = r.ClaimHead("k2");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->conn_id, 2u);
}

// A time-out during a serve that found no data ends the block with that
// reason, and still returns the keys left to the serve.
TEST(BlockRegistryTest, CancelDuringServeIsAnsweredByTheServe) {
  BlockRegistry r;
  std::shared_ptr<Waiter> w0 = MakeWaiter(1, 100, {"k"});
  r.Add(w0);
  std::shared_ptr<Waiter> a = r.ClaimHead("k");
  EXPECT_EQ(r.CancelWaiter(a, Waiter::Cancel::kTimeout), BlockRegistry::CancelResult::kDeferred);
  EXPECT_EQ(r.ClaimHead("k"), nullptr);
  std::vector<std::string> recheck;
  EXPECT_EQ(r.FinishServe(a, false, &recheck), Waiter::Cancel::kTimeout);
  EXPECT_EQ(recheck, std::vector<std::string>{"k"});
  EXPECT_EQ(r.ClaimHead("k"), nullptr);
  EXPECT_EQ(r.blocked_clients(), 0);
}

}  // namespace
}  // namespace trove::resp
