// WatchRegistry and INFO's watching_clients / total_watched_keys through
// Sessions. Test thread only.
#include "protocol/resp/services/watch_registry.h"

#include <gtest/gtest.h>
#include <string>
#include <vector>

#include "session_test_util.h"

namespace trove::resp {
namespace {

struct Key {
  std::string key;
};

TEST(WatchRegistryTest, CountsDistinctKeysAndClients) {
  WatchRegistry r;
  r.Add("a", true);
  r.Add("b", false);
  r.Add("a", true);  // a second client on the same key
  EXPECT_EQ(r.watching_clients(), 2u);
  EXPECT_EQ(r.total_watched_keys(), 2u);
  std::vector<Key> first = {{"a"}, {"b"}};
  r.RemoveClient(first.begin(), first.end());
  EXPECT_EQ(r.watching_clients(), 1u);
  EXPECT_EQ(r.total_watched_keys(), 1u);
  std::vector<Key> second = {{"a"}};
  r.RemoveClient(second.begin(), second.end());
  EXPECT_EQ(r.watching_clients(), 0u);
  EXPECT_EQ(r.total_watched_keys(), 0u);
}

class WatchInfoTest : public ::testing::Test {
 protected:
  std::string Counts() {
    const std::string info = h_.SendOn(observer_.get(), "INFO clients\r\n");
    auto field = [&](const std::string& k) {
      size_t at = info.find(k + ":");
      return at == std::string::npos
                 ? std::string("?")
                 : info.substr(at + k.size() + 1, info.find('\r', at) - at - k.size() - 1);
    };
    return field("watching_clients") + "/" + field("total_watched_keys");
  }
  SessionHarness h_;
  std::unique_ptr<net::ProtocolHandler> observer_ = h_.NewConn();
};

TEST_F(WatchInfoTest, FollowsWatchUnwatchExecDiscardResetAndClose) {
  EXPECT_EQ(Counts(), "0/0");
  EXPECT_EQ(h_.Send("WATCH k\r\nWATCH k\r\n"), "+OK\r\n+OK\r\n");
  EXPECT_EQ(Counts(), "1/1");
  auto b = h_.NewConn();
  EXPECT_EQ(h_.SendOn(b.get(), "WATCH k j\r\n"), "+OK\r\n");
  EXPECT_EQ(Counts(), "2/2");
  EXPECT_EQ(h_.Send("SELECT 1\r\nWATCH k\r\n"), "+OK\r\n+OK\r\n");  // another database's k
  EXPECT_EQ(Counts(), "2/3");
  EXPECT_EQ(h_.Send("UNWATCH\r\nUNWATCH\r\n"), "+OK\r\n+OK\r\n");
  EXPECT_EQ(Counts(), "1/2");
  EXPECT_EQ(h_.SendOn(b.get(), "MULTI\r\nEXEC\r\n"), "+OK\r\n*0\r\n");
  EXPECT_EQ(Counts(), "0/0");
  EXPECT_EQ(h_.Send("WATCH k\r\nMULTI\r\nDISCARD\r\n"), "+OK\r\n+OK\r\n+OK\r\n");
  EXPECT_EQ(Counts(), "0/0");
  EXPECT_EQ(h_.Send("WATCH k\r\nRESET\r\n"), "+OK\r\n+RESET\r\n");
  EXPECT_EQ(Counts(), "0/0");
  EXPECT_EQ(h_.SendOn(b.get(), "WATCH x\r\n"), "+OK\r\n");
  EXPECT_EQ(Counts(), "1/1");
  b.reset();  // the connection closes
  EXPECT_EQ(Counts(), "0/0");
}

}  // namespace
}  // namespace trove::resp
