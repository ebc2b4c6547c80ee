// ProtectedMode: see protected_mode.h.
#include "protocol/resp/core/protected_mode.h"

#include <netinet/in.h>

#include <cstring>

namespace trove::resp {

std::string_view ProtectedMode::Reply() {
  // Redis 7's text (networking.c, clientAcceptHandler), so clients and
  // operators see the same advice.
  static constexpr std::string_view kReply =
      "-DENIED Redis is running in protected mode because protected mode is enabled and no "
      "password is set for the default user. In this mode connections are only accepted from "
      "the loopback interface. If you want to connect from external computers to Redis you may "
      "adopt one of the following solutions: 1) Just disable protected mode sending the command "
      "'CONFIG SET protected-mode no' from the loopback interface by connecting to Redis from "
      "the same host the server is running, however MAKE SURE Redis is not publicly accessible "
      "from internet if you do so. Use CONFIG REWRITE to make this change permanent. 2) "
      "Alternatively you can just disable the protected mode by editing the Redis configuration "
      "file, and setting the protected mode option to 'no', and then restarting the server. 3) "
      "If you started the server manually just for testing, restart it with the "
      "'--protected-mode no' option. 4) Set up an authentication password for the default "
      "user. NOTE: You only need to do one of the above things in order for the server to start "
      "accepting connections from the outside.\r\n";
  return kReply;
}

bool ProtectedMode::IsLoopback(const sockaddr* peer, socklen_t len) {
  if (peer->sa_family == AF_INET && len >= static_cast<socklen_t>(sizeof(sockaddr_in))) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(peer);
    return (ntohl(a->sin_addr.s_addr) >> 24) == 127;
  }
  if (peer->sa_family == AF_INET6 && len >= static_cast<socklen_t>(sizeof(sockaddr_in6))) {
    const in6_addr& a = reinterpret_cast<const sockaddr_in6*>(peer)->sin6_addr;
    if (IN6_IS_ADDR_LOOPBACK(&a)) return true;
    // An IPv4 client on a dual-stack socket: ::ffff:127.x.y.z.
    return IN6_IS_ADDR_V4MAPPED(&a) && a.s6_addr[12] == 127;
  }
  return false;
}

bool ProtectedMode::Refuse(const sockaddr* peer, socklen_t len, bool is_unix,
                           std::string_view* reply) {
  if (is_unix || !enabled() || !acl_->default_nopass()) return false;
  if (IsLoopback(peer, len)) return false;
  refused_.fetch_add(1, std::memory_order_relaxed);
  *reply = Reply();
  return true;
}

}  // namespace trove::resp
