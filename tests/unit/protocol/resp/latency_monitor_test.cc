// LatencyMonitor: samples per second, LATEST/HISTORY/RESET, and the DOCTOR
// and GRAPH texts (compared with redis-server 7.0.15). Test thread only.
#include "protocol/resp/services/latency_monitor.h"

#include <gtest/gtest.h>
#include <string>
#include <vector>

namespace trove::resp {
namespace {

constexpr int64_t kNow = 1700000000;

TEST(LatencyMonitorTest, KeepsTheWorstSampleOfEachSecond) {
  LatencyMonitor m;
  m.AddSample("command", 20, kNow);
  m.AddSample("command", 30, kNow);
  m.AddSample("command", 10, kNow);
  m.AddSample("command", 5, kNow + 1);
  std::vector<LatencySample> v;
  ASSERT_TRUE(m.History("command", &v));
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0].unix_time, kNow);
  EXPECT_EQ(v[0].ms, 30u);
  EXPECT_EQ(v[1].ms, 5u);
  std::vector<LatencyLatest> l = m.Latest();
  ASSERT_EQ(l.size(), 1u);
  EXPECT_EQ(l[0].event, "command");
  EXPECT_EQ(l[0].unix_time, kNow + 1);
  EXPECT_EQ(l[0].ms, 5);
  EXPECT_EQ(l[0].max_ms, 30);
  EXPECT_FALSE(m.History("Command", &v));  // exact names, as Redis's dict
}

TEST(LatencyMonitorTest, KeepsTheLast160Seconds) {
  LatencyMonitor m;
  for (int i = 0; i < 200; ++i) m.AddSample("command", i, kNow + i);
  std::vector<LatencySample> v;
  ASSERT_TRUE(m.History("command", &v));
  ASSERT_EQ(v.size(), 160u);
  EXPECT_EQ(v.front().ms, 40u);
  EXPECT_EQ(v.back().ms, 199u);
}

TEST(LatencyMonitorTest, ResetForgetsEventsCaseInsensitively) {
  LatencyMonitor m;
  m.AddSample("command", 1, kNow);
  m.AddSample("fast-command", 1, kNow);
  EXPECT_EQ(m.Reset("nosuch"), 0);
  EXPECT_EQ(m.Reset("COMMAND"), 1);
  EXPECT_EQ(m.Latest().size(), 1u);
  EXPECT_EQ(m.ResetAll(), 1);
  EXPECT_EQ(m.ResetAll(), 0);
}

TEST(LatencyMonitorTest, DoctorWithoutEvents) {
  LatencyMonitor m;
  EXPECT_EQ(m.Doctor({10000, 0}, kNow).rfind("I'm sorry, Dave, I can't do that.", 0), 0u);
  EXPECT_EQ(m.Doctor({10000, 5}, kNow),
            "Dave, no latency spike was observed during the lifetime of this Redis instance, not "
            "in the slightest bit. I honestly think you ought to sit down calmly, take a stress "
            "pill, and think things over.\n");
}

TEST(LatencyMonitorTest, DoctorAdvisesOnCommandEvents) {
  LatencyMonitor m;
  m.AddSample("command", 30, kNow);
  // redis-server 7.0.15, one 30 ms DEBUG SLEEP at threshold 5 and the default slowlog.
  const std::string want =
      "Dave, I have observed latency spikes in this Redis instance. You don't mind talking about "
      "it, do you Dave?\n\n1. command: 1 latency spikes (average 30ms, mean deviation 0ms, period "
      "1.00 sec). Worst all time event 30ms.\n\nI have a few advices for you:\n\n- Your current "
      "Slow Log configuration only logs events that are slower than your configured latency "
      "monitor threshold. Please use 'CONFIG SET slowlog-log-slower-than 5000'.\n- Check your "
      "Slow Log to understand what are the commands you are running which are too slow to "
      "execute. Please check https://redis.io/commands/slowlog for more information.\n- Deleting, "
      "expiring or evicting (because of maxmemory policy) large objects is a blocking operation. "
      "If you have very large objects that are often deleted, expired, or evicted, try to "
      "fragment those objects into multiple smaller objects.\n";
  EXPECT_EQ(m.Doctor({10000, 5}, kNow), want);
  const std::string off = m.Doctor({-1, 0}, kNow);
  EXPECT_NE(off.find("Try to enable the Slow Log Redis feature using the command 'CONFIG SET "
                     "slowlog-log-slower-than 0'."),
            std::string::npos);
  m.AddSample("command", 10, kNow + 3);
  EXPECT_NE(m.Doctor({0, 5}, kNow + 3)
                .find("2 latency spikes (average 20ms, mean deviation 10ms, period 1.50 sec)"),
            std::string::npos);
}

TEST(LatencyMonitorTest, DoctorAdvisesOnFastCommandEvents) {
  LatencyMonitor m;
  m.AddSample("fast-command", 7, kNow);
  const std::string r = m.Doctor({0, 5}, kNow);
  EXPECT_NE(r.find("1. fast-command: 1 latency spikes"), std::string::npos);
  EXPECT_NE(r.find("  4) Check with 'redis-cli --intrinsic-latency 100'"), std::string::npos);
  EXPECT_EQ(r.find("Slow Log"), std::string::npos);
}

TEST(LatencyMonitorTest, GraphIsRedisSparkline) {
  LatencyMonitor m;
  std::string g;
  EXPECT_FALSE(m.Graph("command", kNow, &g));
  m.AddSample("command", 20, kNow);
  ASSERT_TRUE(m.Graph("command", kNow, &g));
  // redis-server 7.0.15 for one 20 ms sample, read at once.
  EXPECT_EQ(g, "command - high 20 ms, low 20 ms (all time high 20 ms)\n" + std::string(80, '-') +
                   "\n \n \n \n_\n \n0\ns\n");
  m.AddSample("command", 10, kNow + 75);
  m.AddSample("command", 40, kNow + 80);
  ASSERT_TRUE(m.Graph("command", kNow + 80, &g));
  const std::string body = g.substr(g.find("-\n") + 2);
  // Steps 4, 0 and 11 of 12 over four rows; labels 80 s, 5 s and 0 s ago.
  EXPECT_EQ(body, "  #\n  |\no |\n|_|\n   \n150\nmss\n");
}

}  // namespace
}  // namespace trove::resp
