// SlowLog and SlowLogArgv: trimming, redaction, ids, max-len. Test thread only.
#include "protocol/resp/services/slowlog.h"

#include <gtest/gtest.h>
#include <string>
#include <string_view>
#include <vector>

namespace trove::resp {
namespace {

std::vector<std::string> Argv(std::initializer_list<std::string_view> words) {
  std::vector<std::string_view> v(words);
  return SlowLogArgv(v);
}

SlowLogEntry Entry(std::string cmd) {
  SlowLogEntry e;
  e.argv = {std::move(cmd)};
  return e;
}

TEST(SlowLogArgvTest, KeepsShortCommandsAsSent) {
  EXPECT_EQ(Argv({"SET", "k", "v"}), (std::vector<std::string>{"SET", "k", "v"}));
}

TEST(SlowLogArgvTest, KeepsThirtyTwoArgumentsAndCountsTheRest) {
  std::vector<std::string> words;
  std::vector<std::string_view> v;
  words.push_back("sadd");
  for (int i = 0; i < 32; ++i) words.push_back(std::to_string(i));
  for (const auto& w : words) v.push_back(w);  // 33 arguments
  std::vector<std::string> out = SlowLogArgv(v);
  ASSERT_EQ(out.size(), 32u);
  EXPECT_EQ(out[30], "29");
  EXPECT_EQ(out[31], "... (2 more arguments)");

  v.resize(32);  // exactly 32: nothing trimmed
  out = SlowLogArgv(v);
  ASSERT_EQ(out.size(), 32u);
  EXPECT_EQ(out[31], "30");
}

TEST(SlowLogArgvTest, CutsLongArgumentsAt128Bytes) {
  const std::string big(129, 'A');
  const std::string exact(128, 'B');
  std::vector<std::string> out = Argv({"set", big, exact});
  EXPECT_EQ(out[1], std::string(128, 'A') + "... (1 more bytes)");
  EXPECT_EQ(out[2], exact);
}

TEST(SlowLogArgvTest, RedactsSecrets) {
  EXPECT_EQ(Argv({"AUTH", "pw"}), (std::vector<std::string>{"AUTH", "(redacted)"}));
  EXPECT_EQ(Argv({"auth", "user", "pw"}),
            (std::vector<std::string>{"auth", "(redacted)", "(redacted)"}));
  EXPECT_EQ(
      Argv({"hello", "3", "SETNAME", "n", "auth", "u", "p"}),
      (std::vector<std::string>{"hello", "3", "SETNAME", "n", "auth", "(redacted)", "(redacted)"}));
  // Redis stops at the first bad HELLO option.
  EXPECT_EQ(Argv({"hello", "3", "bogus", "auth", "u", "p"}),
            (std::vector<std::string>{"hello", "3", "bogus", "auth", "u", "p"}));
  EXPECT_EQ(
      Argv({"config", "set", "maxclients", "10", "REQUIREPASS", "s3cret"}),
      (std::vector<std::string>{"config", "set", "maxclients", "10", "REQUIREPASS", "(redacted)"}));
  EXPECT_EQ(Argv({"config", "get", "requirepass"}),
            (std::vector<std::string>{"config", "get", "requirepass"}));
}

TEST(SlowLogTest, NewestFirstWithIdsThatSurviveReset) {
  SlowLog log;
  log.Push(Entry("a"), 128);
  log.Push(Entry("b"), 128);
  std::vector<SlowLogEntry> v = log.Newest(10);
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0].argv[0], "b");
  EXPECT_EQ(v[0].id, 1);
  EXPECT_EQ(v[1].id, 0);
  EXPECT_EQ(log.Newest(1).size(), 1u);
  EXPECT_EQ(log.Newest(0).size(), 0u);
  log.Reset();
  EXPECT_EQ(log.Len(), 0u);
  log.Push(Entry("c"), 128);
  EXPECT_EQ(log.Newest(10)[0].id, 2);
}

TEST(SlowLogTest, MaxLenDropsTheOldest) {
  SlowLog log;
  for (int i = 0; i < 5; ++i) log.Push(Entry(std::to_string(i)), 3);
  std::vector<SlowLogEntry> v = log.Newest(10);
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[0].argv[0], "4");
  EXPECT_EQ(v[2].argv[0], "2");
  log.Trim(1);
  EXPECT_EQ(log.Len(), 1u);
  EXPECT_EQ(log.Newest(10)[0].argv[0], "4");
}

TEST(SlowLogTest, ZeroMaxLenKeepsNothingButUsesIds) {
  SlowLog log;
  log.Push(Entry("a"), 0);
  EXPECT_EQ(log.Len(), 0u);
  log.Push(Entry("b"), 10);
  EXPECT_EQ(log.Newest(1)[0].id, 1);
}

}  // namespace
}  // namespace trove::resp
