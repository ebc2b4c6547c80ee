#include "net/socket.h"

#include <gtest/gtest.h>
#include <unistd.h>

namespace trove::net {
namespace {

TEST(SocketTest, ParsesListenAddresses) {
  ListenAddr a;
  ASSERT_TRUE(ParseListenAddr("127.0.0.1", &a));
  EXPECT_EQ(a.host, "127.0.0.1");
  EXPECT_EQ(a.port, -1);
  ASSERT_TRUE(ParseListenAddr("10.0.0.1:11222", &a));
  EXPECT_EQ(a.host, "10.0.0.1");
  EXPECT_EQ(a.port, 11222);
  ASSERT_TRUE(ParseListenAddr("[::1]", &a));
  EXPECT_EQ(a.host, "::1");
  EXPECT_EQ(a.port, -1);
  ASSERT_TRUE(ParseListenAddr("[::1]:6380", &a));
  EXPECT_EQ(a.host, "::1");
  EXPECT_EQ(a.port, 6380);
  ASSERT_TRUE(ParseListenAddr("fe80::1", &a));  // bare v6: no port
  EXPECT_EQ(a.host, "fe80::1");
  EXPECT_EQ(a.port, -1);
  ASSERT_TRUE(ParseListenAddr("*", &a));
  EXPECT_EQ(a.host, "");
}

TEST(SocketTest, RejectsMalformedAddresses) {
  ListenAddr a;
  EXPECT_FALSE(ParseListenAddr("[::1", &a));
  EXPECT_FALSE(ParseListenAddr("[::1]x", &a));
  EXPECT_FALSE(ParseListenAddr("[::1]:", &a));
  EXPECT_FALSE(ParseListenAddr("1.2.3.4:", &a));
  EXPECT_FALSE(ParseListenAddr("1.2.3.4:99999", &a));
  EXPECT_FALSE(ParseListenAddr("1.2.3.4:ab", &a));
  EXPECT_FALSE(ParseListenAddr("[]:80", &a));
}

TEST(SocketTest, EphemeralPortIsReported) {
  auto ls = ListenTcp("127.0.0.1", 0, 16);
  ASSERT_TRUE(ls.ok()) << ls.status().ToString();
  ASSERT_EQ(ls.value().size(), 1u);
  EXPECT_GT(ls.value()[0].port, 0);
  EXPECT_EQ(ls.value()[0].name, "tcp:127.0.0.1:" + std::to_string(ls.value()[0].port));
  // The same port again is taken.
  auto again = ListenTcp("127.0.0.1", ls.value()[0].port, 16);
  EXPECT_FALSE(again.ok());
  ::close(ls.value()[0].fd);
}

TEST(SocketTest, BadHostIsAnError) {
  auto ls = ListenTcp("no.such.host.invalid", 0, 16);
  EXPECT_FALSE(ls.ok());
}

}  // namespace
}  // namespace trove::net
