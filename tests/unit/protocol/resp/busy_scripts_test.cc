// BusyScripts: kill replies by kind and state, the kill/first-write order,
// which stripes hold up another worker, server stop. Test thread only.
#include "protocol/resp/services/busy_scripts.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace trove::resp {
namespace {

using KillResult = BusyScripts::KillResult;

BusyScripts::Entry Busy(int worker, bool is_eval, std::vector<uint32_t> stripes = {}) {
  BusyScripts::Entry e;
  e.worker = worker;
  e.is_eval = is_eval;
  e.name = is_eval ? "sha" : "fn";
  e.command = {is_eval ? "EVAL" : "FCALL", "x", "0"};
  e.stripes = std::move(stripes);
  return e;
}

TEST(BusyScriptsTest, KillRepliesByKindAndState) {
  BusyScripts b;
  EXPECT_FALSE(b.any());
  EXPECT_EQ(b.Kill(true), KillResult::kNotBusy);
  b.Enter(Busy(0, /*is_eval=*/false));
  EXPECT_TRUE(b.any());
  EXPECT_EQ(b.Kill(true), KillResult::kBusyFunction);  // SCRIPT KILL on a function
  EXPECT_FALSE(b.KillRequested(0));
  EXPECT_EQ(b.Kill(false), KillResult::kKilled);
  EXPECT_TRUE(b.KillRequested(0));
  b.Leave(0);
  EXPECT_FALSE(b.any());
  b.Enter(Busy(1, /*is_eval=*/true));
  EXPECT_EQ(b.Kill(false), KillResult::kBusyEval);
  b.Leave(1);
}

// Either the kill comes first and the write is refused, or the write does
// and the kill answers UNKILLABLE: never both.
TEST(BusyScriptsTest, KillAndFirstWriteAreOrdered) {
  BusyScripts b;
  b.Enter(Busy(0, true));
  EXPECT_TRUE(b.MayWrite(0));
  EXPECT_EQ(b.Kill(true), KillResult::kUnkillable);
  EXPECT_FALSE(b.KillRequested(0));
  b.Leave(0);
  b.Enter(Busy(0, true));
  EXPECT_EQ(b.Kill(true), KillResult::kKilled);
  EXPECT_FALSE(b.MayWrite(0));
  b.Leave(0);
  BusyScripts::Entry wrote = Busy(0, true);
  wrote.wrote = true;  // wrote before it became busy
  b.Enter(wrote);
  EXPECT_EQ(b.Kill(true), KillResult::kUnkillable);
}

TEST(BusyScriptsTest, HoldsOnlyItsStripesAndOnlyForOtherWorkers) {
  BusyScripts b;
  b.Enter(Busy(0, true, {7, 3}));
  bool is_eval = false;
  const std::vector<uint32_t> three = {3}, five = {5}, none;
  EXPECT_TRUE(b.Holds(1, three, false, &is_eval));
  EXPECT_TRUE(is_eval);
  EXPECT_FALSE(b.Holds(1, five, false, &is_eval));
  EXPECT_FALSE(b.Holds(0, three, false, &is_eval));  // its own worker is served nested
  EXPECT_TRUE(b.Holds(1, none, /*all_stripes=*/true, &is_eval));  // a keyspace walk
  b.AddStripe(0, 5);
  EXPECT_TRUE(b.Holds(1, five, false, &is_eval));
  EXPECT_TRUE(b.BusyElsewhere(1, &is_eval));
  EXPECT_FALSE(b.BusyElsewhere(0, &is_eval));
  b.Leave(0);
  BusyScripts::Entry all = Busy(2, false);
  all.all_stripes = true;  // an exclusive run
  b.Enter(all);
  EXPECT_TRUE(b.Holds(1, five, false, &is_eval));
  EXPECT_FALSE(is_eval);
  EXPECT_FALSE(b.Holds(1, none, false, &is_eval));  // a keyless command
  std::string name;
  std::vector<std::string> command;
  int64_t start = -1;
  ASSERT_TRUE(b.RunningFunction(&name, &command, &start));
  EXPECT_EQ(name, "fn");
  EXPECT_EQ(command, (std::vector<std::string>{"FCALL", "x", "0"}));
}

TEST(BusyScriptsTest, StopKillsEveryScriptEvenUnkillable) {
  BusyScripts b;
  BusyScripts::Entry wrote = Busy(0, true);
  wrote.wrote = true;
  b.Enter(wrote);
  EXPECT_FALSE(b.stopping());
  b.KillAll();
  EXPECT_TRUE(b.stopping());
  EXPECT_TRUE(b.KillRequested(0));
  b.Enter(Busy(1, false));  // one that becomes busy afterwards
  EXPECT_TRUE(b.KillRequested(1));
}

}  // namespace
}  // namespace trove::resp
