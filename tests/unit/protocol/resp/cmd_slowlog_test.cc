// SLOWLOG, LATENCY and their CONFIG parameters through a Session over the
// fake engine. The ManualClock stands still, so every command takes 0 µs:
// slowlog-log-slower-than 0 logs all of them. Test thread only.
#include <gtest/gtest.h>
#include <string>

#include "session_test_util.h"

namespace trove::resp {
namespace {

class CmdSlowlogTest : public ::testing::Test {
 protected:
  SessionHarness h_;
};

TEST_F(CmdSlowlogTest, StartsEmptyWithRedisDefaults) {
  EXPECT_EQ(h_.Cmd({"SLOWLOG", "GET"}), "*0\r\n");
  EXPECT_EQ(h_.Cmd({"SLOWLOG", "LEN"}), ":0\r\n");
  EXPECT_EQ(h_.Cmd({"CONFIG", "GET", "slowlog-*"}),
            "*4\r\n$23\r\nslowlog-log-slower-than\r\n$5\r\n10000\r\n"
            "$15\r\nslowlog-max-len\r\n$3\r\n128\r\n");
  EXPECT_EQ(h_.Cmd({"CONFIG", "GET", "latency-*"}),
            "*4\r\n$25\r\nlatency-monitor-threshold\r\n$1\r\n0\r\n"
            "$16\r\nlatency-tracking\r\n$3\r\nyes\r\n");
  EXPECT_EQ(h_.Cmd({"SLOWLOG", "LEN"}), ":0\r\n");  // 0 µs < 10000
}

TEST_F(CmdSlowlogTest, EntryHasSixFieldsNewestFirst) {
  EXPECT_EQ(h_.Cmd({"CONFIG", "SET", "slowlog-log-slower-than", "0"}), "+OK\r\n");
  EXPECT_EQ(h_.Cmd({"CLIENT", "SETNAME", "bob"}), "+OK\r\n");
  EXPECT_EQ(h_.Cmd({"SET", "k", "v"}), "+OK\r\n");
  // The CONFIG SET itself is logged (id 0): it ends after the change.
  EXPECT_EQ(h_.Cmd({"SLOWLOG", "GET", "1"}),
            "*1\r\n*6\r\n:2\r\n:1700000000\r\n:0\r\n*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n"
            "$14\r\n127.0.0.1:1234\r\n$3\r\nbob\r\n");
  EXPECT_EQ(h_.Cmd({"SLOWLOG", "LEN"}), ":4\r\n");
  const std::string all = h_.Cmd({"SLOWLOG", "GET", "-1"});
  EXPECT_EQ(all.rfind("*5\r\n*6\r\n:4\r\n", 0), 0u) << all;
  EXPECT_EQ(h_.Cmd({"SLOWLOG", "GET", "0"}), "*0\r\n");
  EXPECT_EQ(h_.Cmd({"SLOWLOG", "RESET"}), "+OK\r\n");
  EXPECT_EQ(h_.Cmd({"SLOWLOG", "LEN"}), ":1\r\n");  // the RESET
}

TEST_F(CmdSlowlogTest, ExecIsNotLoggedItsCommandsAre) {
  EXPECT_EQ(h_.Cmd({"CONFIG", "SET", "slowlog-log-slower-than", "0"}), "+OK\r\n");
  EXPECT_EQ(h_.Cmd({"MULTI"}), "+OK\r\n");
  EXPECT_EQ(h_.Cmd({"PING"}), "+QUEUED\r\n");
  EXPECT_EQ(h_.Cmd({"EXEC"}), "*1\r\n+PONG\r\n");
  EXPECT_EQ(h_.Cmd({"CONFIG", "SET", "slowlog-log-slower-than", "-1"}), "+OK\r\n");
  const std::string r = h_.Cmd({"SLOWLOG", "GET"});
  EXPECT_EQ(r.find("EXEC"), std::string::npos) << r;
  EXPECT_NE(r.find("PING"), std::string::npos) << r;
  EXPECT_NE(r.find("MULTI"), std::string::npos) << r;
  // CONFIG SET, MULTI, PING; the last CONFIG SET ends with the log disabled.
  EXPECT_EQ(h_.Cmd({"SLOWLOG", "LEN"}), ":3\r\n");
}

TEST_F(CmdSlowlogTest, RedactsConfigSetRequirepass) {
  EXPECT_EQ(h_.Cmd({"CONFIG", "SET", "slowlog-log-slower-than", "0"}), "+OK\r\n");
  EXPECT_EQ(h_.Cmd({"CONFIG", "SET", "requirepass", ""}), "+OK\r\n");
  EXPECT_EQ(h_.Cmd({"SLOWLOG", "GET", "1"}).find("(redacted)") != std::string::npos, true);
}

TEST_F(CmdSlowlogTest, MaxLenTrimsAtOnceAndZeroKeepsNothing) {
  EXPECT_EQ(h_.Cmd({"CONFIG", "SET", "slowlog-log-slower-than", "0"}), "+OK\r\n");
  for (int i = 0; i < 20; ++i) EXPECT_EQ(h_.Cmd({"PING"}), "+PONG\r\n");
  EXPECT_EQ(h_.Cmd({"CONFIG", "SET", "slowlog-max-len", "5"}), "+OK\r\n");
  EXPECT_EQ(h_.Cmd({"SLOWLOG", "LEN"}), ":5\r\n");
  EXPECT_EQ(h_.Cmd({"CONFIG", "SET", "slowlog-max-len", "0"}), "+OK\r\n");
  EXPECT_EQ(h_.Cmd({"PING"}), "+PONG\r\n");
  EXPECT_EQ(h_.Cmd({"SLOWLOG", "LEN"}), ":0\r\n");
}

TEST_F(CmdSlowlogTest, ArgumentErrorsAreRedis) {
  EXPECT_EQ(h_.Cmd({"SLOWLOG", "GET", "-2"}),
            "-ERR count should be greater than or equal to -1\r\n");
  EXPECT_EQ(h_.Cmd({"SLOWLOG", "GET", "x"}),
            "-ERR count should be greater than or equal to -1\r\n");
  EXPECT_EQ(
      h_.Cmd({"SLOWLOG", "get", "1", "2"}),
      "-ERR unknown subcommand or wrong number of arguments for 'get'. Try SLOWLOG HELP.\r\n");
  EXPECT_EQ(h_.Cmd({"SLOWLOG", "LEN", "x"}),
            "-ERR wrong number of arguments for 'slowlog|len' command\r\n");
  EXPECT_EQ(h_.Cmd({"SLOWLOG", "foo"}), "-ERR unknown subcommand 'foo'. Try SLOWLOG HELP.\r\n");
  EXPECT_EQ(h_.Cmd({"SLOWLOG"}), "-ERR wrong number of arguments for 'slowlog' command\r\n");
  EXPECT_EQ(h_.Cmd({"LATENCY", "HELP", "x"}),
            "-ERR wrong number of arguments for 'latency|help' command\r\n");
  EXPECT_EQ(h_.Cmd({"LATENCY", "HISTORY"}),
            "-ERR wrong number of arguments for 'latency|history' command\r\n");
  EXPECT_EQ(h_.Cmd({"LATENCY", "foo"}), "-ERR unknown subcommand 'foo'. Try LATENCY HELP.\r\n");
  EXPECT_EQ(h_.Cmd({"LATENCY", "GRAPH", "nosuch"}),
            "-ERR No samples available for event 'nosuch'\r\n");
  EXPECT_EQ(h_.Cmd({"LATENCY", "HISTORY", "nosuch"}), "*0\r\n");
  EXPECT_EQ(h_.Cmd({"LATENCY", "LATEST"}), "*0\r\n");
  EXPECT_EQ(h_.Cmd({"LATENCY", "RESET", "nosuch"}), ":0\r\n");
  const std::string help = h_.Cmd({"SLOWLOG", "HELP"});
  EXPECT_EQ(
      help.rfind("*12\r\n+SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:", 0),
      0u);
  EXPECT_NE(help.find("+    Prints this help.\r\n"), std::string::npos);
  EXPECT_EQ(h_.Cmd({"LATENCY", "HELP"}).rfind("*17\r\n", 0), 0u);
}

TEST_F(CmdSlowlogTest, ConfigSetChecksRangesAsRedis) {
  EXPECT_EQ(h_.Cmd({"CONFIG", "SET", "slowlog-log-slower-than", "-2"}),
            "-ERR CONFIG SET failed (possibly related to argument 'slowlog-log-slower-than') - "
            "argument must be between -1 and 9223372036854775807 inclusive\r\n");
  EXPECT_EQ(h_.Cmd({"CONFIG", "SET", "slowlog-max-len", "-1"}),
            "-ERR CONFIG SET failed (possibly related to argument 'slowlog-max-len') - argument "
            "must be between 0 and 9223372036854775807 inclusive\r\n");
  EXPECT_EQ(h_.Cmd({"CONFIG", "SET", "latency-monitor-threshold", "-1"}),
            "-ERR CONFIG SET failed (possibly related to argument 'latency-monitor-threshold') - "
            "argument must be between 0 and 9223372036854775807 inclusive\r\n");
  EXPECT_EQ(h_.Cmd({"CONFIG", "SET", "latency-tracking", "maybe"}),
            "-ERR CONFIG SET failed (possibly related to argument 'latency-tracking') - argument "
            "must be 'yes' or 'no'\r\n");
  EXPECT_EQ(h_.Cmd({"CONFIG", "SET", "latency-monitor-threshold", "100"}), "+OK\r\n");
  EXPECT_EQ(h_.Cmd({"CONFIG", "GET", "latency-monitor-threshold"}),
            "*2\r\n$25\r\nlatency-monitor-threshold\r\n$3\r\n100\r\n");
}

TEST_F(CmdSlowlogTest, HistogramPerCommandAndSubcommand) {
  EXPECT_EQ(h_.Cmd({"CONFIG", "RESETSTAT"}), "+OK\r\n");
  EXPECT_EQ(h_.Cmd({"LATENCY", "HISTOGRAM"}),
            "*2\r\n$16\r\nconfig|resetstat\r\n*4\r\n$5\r\ncalls\r\n:1\r\n$14\r\nhistogram_usec\r\n"
            "*2\r\n:1\r\n:1\r\n");
  EXPECT_EQ(h_.Cmd({"SET", "a", "1"}), "+OK\r\n");
  EXPECT_EQ(h_.Cmd({"SET", "a", "2"}), "+OK\r\n");
  EXPECT_EQ(h_.Cmd({"CLIENT", "ID"}), ":1\r\n");
  EXPECT_EQ(h_.Cmd({"CLIENT", "nosuch"}).substr(0, 24), "-ERR unknown subcommand ");
  EXPECT_EQ(h_.Cmd({"HELLO", "3"}).substr(0, 2), "%7");
  EXPECT_EQ(
      h_.Cmd({"LATENCY", "HISTOGRAM", "set", "client", "nosuch", "get"}),
      "%2\r\n$3\r\nset\r\n%2\r\n$5\r\ncalls\r\n:2\r\n$14\r\nhistogram_usec\r\n%1\r\n:1\r\n:2\r\n"
      "$9\r\nclient|id\r\n%2\r\n$5\r\ncalls\r\n:1\r\n$14\r\nhistogram_usec\r\n%1\r\n:1\r\n"
      ":1\r\n");
  EXPECT_EQ(h_.Cmd({"CONFIG", "SET", "latency-tracking", "no"}), "+OK\r\n");
  EXPECT_EQ(h_.Cmd({"SET", "a", "3"}), "+OK\r\n");
  EXPECT_EQ(h_.Cmd({"LATENCY", "HISTOGRAM", "set"}),
            "%1\r\n$3\r\nset\r\n%2\r\n$5\r\ncalls\r\n:2\r\n$14\r\nhistogram_usec\r\n%1\r\n:1\r\n"
            ":2\r\n");
}

}  // namespace
}  // namespace trove::resp
