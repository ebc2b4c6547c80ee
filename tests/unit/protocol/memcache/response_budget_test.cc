// ResponseBudget (-o read_buf_mem_limit): equal shares per worker, refusals
// counted, given-back replies reusable, shares independent.
#include "protocol/memcache/response_budget.h"

#include <gtest/gtest.h>

namespace trove::memcache {
namespace {

TEST(ResponseBudgetTest, SplitsTheLimitIntoPerWorkerShares) {
  ResponseBudget b(1 << 20, 32);  // 1 MiB over 32 workers: 32 replies each
  EXPECT_EQ(b.per_worker(), 32);
  EXPECT_TRUE(b.Take(0, 30));
  EXPECT_TRUE(b.Take(0, 2));
  EXPECT_FALSE(b.Take(0, 1));
  EXPECT_EQ(b.oom(), 1u);
  // Another worker's share is untouched.
  EXPECT_TRUE(b.Take(1, 32));
  EXPECT_EQ(b.live(), 64u);
  b.Give(0, 32);
  EXPECT_TRUE(b.Take(0, 500 / 16));
  EXPECT_EQ(b.oom(), 1u);
}

TEST(ResponseBudgetTest, AShareHoldsAtLeastOneReply) {
  ResponseBudget b(100, 8);
  EXPECT_EQ(b.per_worker(), 1);
  EXPECT_TRUE(b.Take(7, 1));
  EXPECT_FALSE(b.Take(7, 1));
  EXPECT_FALSE(b.Take(3, 2));
  EXPECT_EQ(b.oom(), 2u);
}

}  // namespace
}  // namespace trove::memcache
