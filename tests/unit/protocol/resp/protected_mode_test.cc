// ProtectedMode: which peers are loopback, and when the gate refuses (Redis's
// rule: protected-mode yes and a default user without password). Test thread.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>

#include <string>
#include <string_view>

#include "protocol/resp/services/acl_store.h"
#include "protocol/resp/core/protected_mode.h"

namespace trove::resp {
namespace {

sockaddr_in V4(const char* ip) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(40000);
  EXPECT_EQ(::inet_pton(AF_INET, ip, &a.sin_addr), 1) << ip;
  return a;
}

sockaddr_in6 V6(const char* ip) {
  sockaddr_in6 a{};
  a.sin6_family = AF_INET6;
  a.sin6_port = htons(40000);
  EXPECT_EQ(::inet_pton(AF_INET6, ip, &a.sin6_addr), 1) << ip;
  return a;
}

template <typename T>
bool Loopback(const T& a) {
  return ProtectedMode::IsLoopback(reinterpret_cast<const sockaddr*>(&a), sizeof(a));
}

template <typename T>
bool Refused(ProtectedMode& pm, const T& a, std::string_view* reply) {
  return pm.Refuse(reinterpret_cast<const sockaddr*>(&a), sizeof(a), false, reply);
}

TEST(ProtectedMode, LoopbackAddresses) {
  EXPECT_TRUE(Loopback(V4("127.0.0.1")));
  EXPECT_TRUE(Loopback(V4("127.255.1.2")));
  EXPECT_TRUE(Loopback(V6("::1")));
  EXPECT_TRUE(Loopback(V6("::ffff:127.0.0.1")));
  EXPECT_FALSE(Loopback(V4("10.0.0.1")));
  EXPECT_FALSE(Loopback(V4("128.0.0.1")));
  EXPECT_FALSE(Loopback(V4("0.0.0.0")));
  EXPECT_FALSE(Loopback(V6("::2")));
  EXPECT_FALSE(Loopback(V6("fe80::1")));
  EXPECT_FALSE(Loopback(V6("::ffff:10.0.0.1")));
  // A truncated address is not trusted.
  sockaddr_in a = V4("127.0.0.1");
  EXPECT_FALSE(ProtectedMode::IsLoopback(reinterpret_cast<const sockaddr*>(&a), 2));
}

TEST(ProtectedMode, RefusesRemotePeersOnlyWhileOnAndWithoutPassword) {
  acl::AclStore acl;
  ProtectedMode pm(&acl);
  std::string_view reply;
  EXPECT_TRUE(pm.enabled());
  EXPECT_FALSE(Refused(pm, V4("127.0.0.1"), &reply));
  EXPECT_FALSE(Refused(pm, V6("::1"), &reply));
  EXPECT_EQ(pm.refused(), 0u);
  ASSERT_TRUE(Refused(pm, V4("10.1.2.3"), &reply));
  EXPECT_EQ(reply, ProtectedMode::Reply());
  EXPECT_EQ(reply.substr(0, 43), "-DENIED Redis is running in protected mode ");
  EXPECT_EQ(reply.substr(reply.size() - 2), "\r\n");
  EXPECT_TRUE(Refused(pm, V6("fd00::2"), &reply));
  EXPECT_EQ(pm.refused(), 2u);
  // A unix socket is local.
  sockaddr_in far = V4("10.1.2.3");
  EXPECT_FALSE(pm.Refuse(reinterpret_cast<const sockaddr*>(&far), sizeof(far), true, &reply));

  // protected-mode no.
  pm.set_enabled(false);
  EXPECT_FALSE(Refused(pm, V4("10.1.2.3"), &reply));
  pm.set_enabled(true);

  // A password on the default user (requirepass, or ACL SETUSER).
  acl.SetRequirepass("secret");
  EXPECT_FALSE(acl.default_nopass());
  EXPECT_FALSE(Refused(pm, V4("10.1.2.3"), &reply));
  acl.SetRequirepass("");
  EXPECT_TRUE(acl.default_nopass());
  EXPECT_TRUE(Refused(pm, V4("10.1.2.3"), &reply));
  std::string_view rules[] = {">pw"};
  EXPECT_EQ(acl.SetUser("default", rules), "");
  EXPECT_FALSE(Refused(pm, V4("10.1.2.3"), &reply));
  EXPECT_EQ(pm.refused(), 3u);
}

}  // namespace
}  // namespace trove::resp
