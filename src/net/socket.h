// Socket helpers: listening sockets (TCP v4/v6, unix), address parsing and
// formatting. Called by server wiring at startup and by the acceptor thread.
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "common/status.h"

namespace trove::net {

// A host and port from "-l": "1.2.3.4", "1.2.3.4:11211", "[::1]", "[::1]:11211",
// "::1" (a bare IPv6 address has no port), "localhost", "*" or "" (any).
struct ListenAddr {
  std::string host;   // "" = any address (both families)
  int port = -1;      // -1 = use the default port for this listener
};
// Parses one address; false on malformed input (unbalanced brackets, bad port).
bool ParseListenAddr(std::string_view s, ListenAddr* out);

// A bound, listening, non-blocking socket.
struct Listener {
  int fd = -1;
  bool is_unix = false;
  int port = 0;             // the bound port (TCP)
  std::string name;         // "tcp:0.0.0.0:11211", "tcp6:[::1]:6379", "unix:/path"
};

// Binds every address `host` resolves to (all interfaces when empty) on `port`
// (0 = ephemeral; when several sockets are bound for one ephemeral request,
// they share the port the first one got). SO_REUSEADDR, IPV6_V6ONLY on v6.
Result<std::vector<Listener>> ListenTcp(const std::string& host, int port, int backlog);
// Binds a unix socket at `path` (a stale socket file is removed first) and
// chmods it to `mask` (memcached's -a, e.g. 0700).
Result<Listener> ListenUnix(const std::string& path, int mask, int backlog);

// "127.0.0.1:5555", "[::1]:5555" or the unix path, for a sockaddr.
std::string FormatSockaddr(const sockaddr* sa, socklen_t len);

Status SetNonBlocking(int fd);
// TCP_NODELAY; ignored failures on non-TCP sockets are the caller's choice.
Status SetNoDelay(int fd);

}  // namespace trove::net
