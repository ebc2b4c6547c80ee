// client-output-buffer-limit: the rule, the CONFIG syntax, and a Session
// enforcing it for normal and pub/sub clients. Test thread only.
#include "protocol/resp/services/output_limits.h"

#include <gtest/gtest.h>
#include <string>

#include "session_test_util.h"

namespace trove::resp {
namespace {

constexpr int64_t kSec = 1000000000;

TEST(ObufOverLimitTest, ZeroLimitsNeverCut) {
  ObufSoftState st;
  EXPECT_FALSE(ObufOverLimit({0, 0, 0}, 1ull << 40, 0, &st));
  EXPECT_FALSE(st.reached);
}

TEST(ObufOverLimitTest, HardLimitCutsAtOnceFromItsValue) {
  ObufSoftState st;
  EXPECT_FALSE(ObufOverLimit({1000, 0, 0}, 999, 0, &st));
  EXPECT_TRUE(ObufOverLimit({1000, 0, 0}, 1000, 0, &st));  // Redis: used >= hard
}

TEST(ObufOverLimitTest, SoftLimitCutsOnlyAfterItsSecondsContinuously) {
  const ObufLimit l{0, 100, 3};
  ObufSoftState st;
  EXPECT_FALSE(ObufOverLimit(l, 100, 10 * kSec, &st));  // first sighting starts the clock
  EXPECT_TRUE(st.reached);
  EXPECT_FALSE(ObufOverLimit(l, 5000, 12 * kSec, &st));
  EXPECT_FALSE(ObufOverLimit(l, 5000, 13 * kSec, &st));  // exactly soft_seconds: not yet
  EXPECT_TRUE(ObufOverLimit(l, 5000, 13 * kSec + 1, &st));
}

TEST(ObufOverLimitTest, DroppingBelowSoftRestartsTheClock) {
  const ObufLimit l{0, 100, 3};
  ObufSoftState st;
  EXPECT_FALSE(ObufOverLimit(l, 200, 0, &st));
  EXPECT_FALSE(ObufOverLimit(l, 50, 2 * kSec, &st));
  EXPECT_FALSE(st.reached);
  EXPECT_FALSE(ObufOverLimit(l, 200, 3 * kSec, &st));
  EXPECT_FALSE(ObufOverLimit(l, 200, 6 * kSec, &st));
  EXPECT_TRUE(ObufOverLimit(l, 200, 6 * kSec + 1, &st));
}

TEST(ParseMemoryUnitsTest, RedisUnits) {
  int64_t v = -1;
  EXPECT_TRUE(ParseMemoryUnits("0", &v));
  EXPECT_EQ(v, 0);
  EXPECT_TRUE(ParseMemoryUnits("1k", &v));
  EXPECT_EQ(v, 1000);
  EXPECT_TRUE(ParseMemoryUnits("1KB", &v));
  EXPECT_EQ(v, 1024);
  EXPECT_TRUE(ParseMemoryUnits("1mb", &v));
  EXPECT_EQ(v, 1048576);
  EXPECT_TRUE(ParseMemoryUnits("2gb", &v));
  EXPECT_EQ(v, 2ll << 30);
  for (const char* bad : {"", "mb", "10mbs", "-1", "1.5mb", "x", "99999999999gb"})
    EXPECT_FALSE(ParseMemoryUnits(bad, &v)) << bad;
}

TEST(ObufLimitsTest, DefaultsAreRedis) {
  ObufLimits l;
  EXPECT_EQ(l.ToString(), "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60");
}

TEST(ObufLimitsTest, ApplySetsTheNamedClassesOnly) {
  ObufLimits l;
  std::string err;
  ASSERT_TRUE(l.Apply("normal 1mb 2mb 60 replica 3mb 4mb 70", &err)) << err;
  EXPECT_EQ(l.ToString(),
            "normal 1048576 2097152 60 slave 3145728 4194304 70 pubsub 33554432 "
            "8388608 60");
  ASSERT_TRUE(l.Apply("  SLAVE 1 2 3  ", &err)) << err;
  EXPECT_EQ(l.Get(ClientClass::kReplica).hard, 1);
  EXPECT_EQ(l.Get(ClientClass::kNormal).soft, 2097152);
  // The CONFIG GET form is accepted back unchanged.
  const std::string got = l.ToString();
  ASSERT_TRUE(l.Apply(got, &err)) << err;
  EXPECT_EQ(l.ToString(), got);
}

TEST(ObufLimitsTest, ApplyIsAllOrNothing) {
  ObufLimits l;
  const std::string before = l.ToString();
  std::string err;
  EXPECT_FALSE(l.Apply("normal 1 1 1 master 1 1 1", &err));
  EXPECT_EQ(err, "Invalid client class specified in buffer limit configuration.");
  EXPECT_FALSE(l.Apply("normal 1 1", &err));
  EXPECT_EQ(err, "Wrong number of arguments in buffer limit configuration.");
  EXPECT_FALSE(l.Apply("pubsub 1 1 1 normal 10mbs 1 1", &err));
  EXPECT_EQ(err, "Error in hard, soft or soft_seconds setting in buffer limit configuration.");
  EXPECT_FALSE(l.Apply("pubsub 1 1 60s", &err));
  EXPECT_FALSE(l.Apply("pubsub 1 1 -1", &err));
  EXPECT_EQ(l.ToString(), before);
}

// --- a Session enforcing the normal class ---

class SessionOutputLimitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int i = 0; i < 50; ++i) h_.Cmd({"RPUSH", "big", std::string(100, 'x')});
    ASSERT_EQ(h_.Cmd({"CONFIG", "SET", "client-output-buffer-limit", "normal 2000 0 0"}),
              "+OK\r\n");
  }
  int64_t Disconnections() {
    const std::string info = h_.Cmd({"INFO", "stats"});
    const std::string key = "client_output_buffer_limit_disconnections:";
    size_t at = info.find(key);
    return at == std::string::npos ? -1 : std::stoll(info.substr(at + key.size()));
  }
  SessionHarness h_;
};

TEST_F(SessionOutputLimitTest, RepliesBelowTheLimit) {
  EXPECT_EQ(h_.Cmd({"LRANGE", "big", "0", "9"}).substr(0, 5), "*10\r\n");
  EXPECT_FALSE(h_.handler()->WantsClose());
  EXPECT_EQ(Disconnections(), 0);
}

TEST_F(SessionOutputLimitTest, OneHugeReplySendsNothingAndCloses) {
  EXPECT_EQ(h_.Cmd({"LRANGE", "big", "0", "-1"}), "");
  EXPECT_TRUE(h_.handler()->WantsClose());
  auto other = h_.NewConn();
  EXPECT_EQ(h_.SendOn(other.get(), "INFO stats\r\n")
                    .find("client_output_buffer_limit_disconnections:1\r\n") != std::string::npos,
            true);
}

TEST_F(SessionOutputLimitTest, PipelineStopsAtTheLimit) {
  std::string pipeline;
  for (int i = 0; i < 5; ++i) pipeline += "LRANGE big 0 9\r\n";  // ~5 KB in all
  pipeline += "SET after 1\r\n";
  EXPECT_EQ(h_.Send(pipeline), "");
  EXPECT_TRUE(h_.handler()->WantsClose());
  auto other = h_.NewConn();
  EXPECT_EQ(h_.SendOn(other.get(), "GET after\r\n"), "$-1\r\n");  // never ran
}

TEST_F(SessionOutputLimitTest, TransactionRunsWholeThenCloses) {
  EXPECT_EQ(h_.Send("MULTI\r\nSET k2 v2\r\nLRANGE big 0 -1\r\nSET k3 v3\r\n"),
            "+OK\r\n+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n");
  EXPECT_EQ(h_.Send("EXEC\r\n"), "");
  EXPECT_TRUE(h_.handler()->WantsClose());
  auto other = h_.NewConn();
  EXPECT_EQ(h_.SendOn(other.get(), "MGET k2 k3\r\n"), "*2\r\n$2\r\nv2\r\n$2\r\nv3\r\n");
}

TEST_F(SessionOutputLimitTest, KeysStopsAndCloses) {
  for (int i = 0; i < 100; ++i) h_.Cmd({"SET", std::string(60, 'k') + std::to_string(i), "v"});
  EXPECT_EQ(h_.Cmd({"KEYS", "*"}), "");
  EXPECT_TRUE(h_.handler()->WantsClose());
}

TEST_F(SessionOutputLimitTest, RandomRepeatsStopMidRun) {
  // A billion picks would be ~16 GB gathered first; at the limit they stop.
  EXPECT_EQ(h_.Cmd({"HSET", "h", "a", "b"}), ":1\r\n");
  EXPECT_EQ(h_.Cmd({"HRANDFIELD", "h", "-999999999", "WITHVALUES"}), "");
  EXPECT_TRUE(h_.handler()->WantsClose());
  auto other = h_.NewConn();
  EXPECT_EQ(h_.SendOn(other.get(), "SADD s m\r\nSRANDMEMBER s -999999999\r\n"),
            "");  // SADD's reply was unsent too
  EXPECT_TRUE(other->WantsClose());
  // Below the limit the repeats are all there.
  auto third = h_.NewConn();
  EXPECT_EQ(h_.SendOn(third.get(), "HRANDFIELD h -3\r\n"),
            "*3\r\n$1\r\na\r\n$1\r\na\r\n$1\r\na\r\n");
}

TEST_F(SessionOutputLimitTest, SubscribedClientsUseThePubsubClass) {
  // normal 2000 does not apply to a subscriber: pubsub's 32 MB does.
  EXPECT_EQ(h_.Cmd({"HELLO", "3"}).substr(0, 1), "%");
  EXPECT_EQ(h_.Cmd({"SUBSCRIBE", "c"}), ">3\r\n$9\r\nsubscribe\r\n$1\r\nc\r\n:1\r\n");
  EXPECT_EQ(h_.Cmd({"LRANGE", "big", "0", "-1"}).substr(0, 5), "*50\r\n");
  EXPECT_FALSE(h_.handler()->WantsClose());
  ASSERT_EQ(h_.Cmd({"CONFIG", "SET", "client-output-buffer-limit", "pubsub 2000 0 0"}), "+OK\r\n");
  EXPECT_EQ(h_.Cmd({"LRANGE", "big", "0", "-1"}), "");
  EXPECT_TRUE(h_.handler()->WantsClose());
}

}  // namespace
}  // namespace trove::resp
