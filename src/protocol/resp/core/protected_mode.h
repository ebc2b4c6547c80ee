// ProtectedMode: Redis's protected mode for the RESP ports, as an accept gate.
// With protected-mode yes (the default) and no password on the default user,
// a connection that does not come from a loopback address (127.0.0.0/8, ::1,
// ::ffff:127.0.0.0/104) or a unix socket is sent Redis's -DENIED reply and
// closed before it reaches a worker. As in Redis 7, an explicit bind address
// does not turn it off: only a password, `protected-mode no`, or a loopback
// peer does. The memcached port has no such rule (memcached has none).
#pragma once

#include <atomic>
#include <cstdint>
#include <string_view>

#include "net/connection.h"
#include "protocol/resp/services/acl_store.h"

namespace trove::resp {

// Thread safety: Refuse runs on the acceptor thread; enabled is set by
// CONFIG SET on any worker; the default user's password state is read from
// the AclStore's atomic. Relaxed: a connection racing a change may be judged
// by either rule, as a connection racing CONFIG SET in Redis.
class ProtectedMode final : public net::AcceptGate {
 public:
  explicit ProtectedMode(const acl::AclStore* acl) : acl_(acl) {}

  bool Refuse(const sockaddr* peer, socklen_t len, bool is_unix,
              std::string_view* reply) override;

  bool enabled() const { return enabled_.load(std::memory_order_relaxed); }
  void set_enabled(bool on) { enabled_.store(on, std::memory_order_relaxed); }
  // Connections refused so far (INFO rejected_connections counts them).
  uint64_t refused() const { return refused_.load(std::memory_order_relaxed); }

  // True for a loopback peer address (exposed for tests).
  static bool IsLoopback(const sockaddr* peer, socklen_t len);
  // Redis's reply, word for word.
  static std::string_view Reply();

 private:
  const acl::AclStore* acl_;
  std::atomic<bool> enabled_{true};
  std::atomic<uint64_t> refused_{0};
};

}  // namespace trove::resp
