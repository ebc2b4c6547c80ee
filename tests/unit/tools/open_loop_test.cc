// Tests for trove-bench's OpenLoopSchedule (tools/bench/open_loop.h), alone
// and with a ClientSession to show that a stalled server is charged for the
// whole wait (no coordinated omission).
#include "open_loop.h"

#include <gtest/gtest.h>
#include <string>

#include "session.h"
#include "value_gen.h"

namespace trove::bench {
namespace {

TEST(OpenLoopScheduleTest, DueTimesAreFixedInAdvance) {
  OpenLoopSchedule s(1000, 250);
  int64_t t;
  EXPECT_FALSE(s.TakeDue(999, &t));
  ASSERT_TRUE(s.TakeDue(1000, &t));
  EXPECT_EQ(t, 1000);
  EXPECT_FALSE(s.TakeDue(1100, &t));
  // Late callers get the intended times, not their own clock.
  ASSERT_TRUE(s.TakeDue(2000, &t));
  EXPECT_EQ(t, 1250);
  ASSERT_TRUE(s.TakeDue(2000, &t));
  EXPECT_EQ(t, 1500);
  EXPECT_EQ(s.next_due(), 1750);
}

TEST(OpenLoopScheduleTest, ZeroIntervalIsClampedToOne) {
  OpenLoopSchedule s(0, 0);
  int64_t t;
  ASSERT_TRUE(s.TakeDue(0, &t));
  EXPECT_EQ(s.next_due(), 1);
}

TEST(OpenLoopScheduleTest, StalledServerShowsUpAsLatency) {
  // One request per microsecond, pipeline window 1. The server answers the
  // first request only after 100 us; the requests due meanwhile wait for the
  // window and are charged from their intended times.
  ValueGen values("k:", 8, 8);
  ClientSession session(Protocol::kText, &values, 1, 1);
  OpenLoopSchedule sched(0, 1000);
  Stats stats;
  int64_t intended;
  uint64_t key = 1;
  ASSERT_TRUE(sched.TakeDue(0, &intended));
  session.IssueGet(&key, intended, true);
  session.Consumed(session.Output().size());  // "sent"
  std::string miss = "END\r\n";
  size_t used;
  ASSERT_TRUE(session.OnInput(miss.data(), miss.size(), 100000, &stats, &used));
  // Then the server is fast again: each backlogged request completes 0.5 us
  // after it is finally sent, so the backlog drains.
  int64_t now = 100000;
  while (sched.TakeDue(now, &intended)) {
    session.IssueGet(&key, intended, true);
    session.Consumed(session.Output().size());
    now += 500;
    ASSERT_TRUE(session.OnInput(miss.data(), miss.size(), now, &stats, &used));
  }
  // The first request waited 100 us, and the backlog behind it inherited the
  // wait: counted from the real send time they would all show 0.5 us.
  EXPECT_EQ(stats.all.max(), 100000u);
  EXPECT_GT(stats.all.Percentile(50), 50000u);
  EXPECT_EQ(stats.ops, stats.all.count());
  EXPECT_GE(stats.ops, 100u);
}

}  // namespace
}  // namespace trove::bench
