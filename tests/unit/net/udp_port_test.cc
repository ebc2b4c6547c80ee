// memcached's UDP framing: UdpFrames splits a reply into numbered datagrams;
// BindUdp binds one socket per worker on one port. Test thread only.
#include "net/udp_port.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

namespace trove::net {
namespace {

uint16_t Field(const std::string& d, size_t at) {
  return static_cast<uint16_t>((static_cast<unsigned char>(d[at]) << 8) |
                               static_cast<unsigned char>(d[at + 1]));
}

TEST(UdpFramesTest, OneDatagramForAShortReply) {
  auto f = UdpFrames(0x1234, "STORED\r\n");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(Field(f[0], 0), 0x1234);  // request id
  EXPECT_EQ(Field(f[0], 2), 0);       // sequence
  EXPECT_EQ(Field(f[0], 4), 1);       // datagrams in the message
  EXPECT_EQ(Field(f[0], 6), 0);       // reserved
  EXPECT_EQ(f[0].substr(kUdpHeader), "STORED\r\n");
}

TEST(UdpFramesTest, LongRepliesAreNumberedAndFull) {
  const size_t payload = kUdpMaxDatagram - kUdpHeader;
  std::string reply(payload * 3 + 10, 'x');
  reply[payload] = 'A';  // first byte of the second datagram
  auto f = UdpFrames(7, reply);
  ASSERT_EQ(f.size(), 4u);
  std::string whole;
  for (size_t i = 0; i < f.size(); ++i) {
    EXPECT_EQ(Field(f[i], 2), i);
    EXPECT_EQ(Field(f[i], 4), 4);
    EXPECT_LE(f[i].size(), kUdpMaxDatagram);
    whole += f[i].substr(kUdpHeader);
  }
  EXPECT_EQ(f[1][kUdpHeader], 'A');
  EXPECT_EQ(f[3].size(), kUdpHeader + 10);
  EXPECT_EQ(whole, reply);
}

TEST(BindUdpTest, SeveralSocketsShareOnePort) {
  int port = 0;
  auto fds = BindUdp("127.0.0.1", 0, 3, &port);
  ASSERT_TRUE(fds.ok());
  EXPECT_EQ(fds.value().size(), 3u);
  EXPECT_GT(port, 0);
  for (int fd : fds.value()) ::close(fd);
}

}  // namespace
}  // namespace trove::net
