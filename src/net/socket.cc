// Socket helpers. Startup (main thread) and the acceptor thread.
#include "net/socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/str_append.h"

namespace trove::net {

bool ParseListenAddr(std::string_view s, ListenAddr* out) {
  out->host.clear();
  out->port = -1;
  std::string_view host = s;
  std::string_view port;
  if (!s.empty() && s.front() == '[') {
    size_t close = s.find(']');
    if (close == std::string_view::npos) return false;
    host = s.substr(1, close - 1);
    std::string_view rest = s.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return false;
      port = rest.substr(1);
      if (port.empty()) return false;
    }
    if (host.empty()) return false;
  } else {
    size_t first = s.find(':');
    if (first != std::string_view::npos && s.find(':', first + 1) == std::string_view::npos) {
      host = s.substr(0, first);
      port = s.substr(first + 1);
      if (port.empty()) return false;
    }
    // Two or more colons without brackets: a bare IPv6 address, no port.
  }
  if (!port.empty()) {
    uint32_t p;
    if (!ParseU32(port, &p) || p > 65535) return false;
    out->port = static_cast<int>(p);
  }
  if (host == "*") host = {};
  out->host = std::string(host);
  return true;
}

std::string FormatSockaddr(const sockaddr* sa, socklen_t len) {
  char buf[INET6_ADDRSTRLEN + 1];
  std::string s;
  if (sa->sa_family == AF_INET) {
    auto* in = reinterpret_cast<const sockaddr_in*>(sa);
    inet_ntop(AF_INET, &in->sin_addr, buf, sizeof(buf));
    s = buf;
    s += ':';
    AppendU64(s, ntohs(in->sin_port));
  } else if (sa->sa_family == AF_INET6) {
    auto* in6 = reinterpret_cast<const sockaddr_in6*>(sa);
    inet_ntop(AF_INET6, &in6->sin6_addr, buf, sizeof(buf));
    s = "[";
    s += buf;
    s += "]:";
    AppendU64(s, ntohs(in6->sin6_port));
  } else if (sa->sa_family == AF_UNIX) {
    auto* un = reinterpret_cast<const sockaddr_un*>(sa);
    size_t max = len > offsetof(sockaddr_un, sun_path) ? len - offsetof(sockaddr_un, sun_path) : 0;
    s.assign(un->sun_path, strnlen(un->sun_path, max));
  }
  return s;
}

Status SetNonBlocking(int fd) {
  int fl = ::fcntl(fd, F_GETFL, 0);
  if (fl < 0 || ::fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0) return Status::FromErrno("fcntl");
  return Status::Ok();
}

Status SetNoDelay(int fd) {
  int one = 1;
  if (::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) < 0) {
    return Status::FromErrno("setsockopt(TCP_NODELAY)");
  }
  return Status::Ok();
}

namespace {

int BoundPort(int fd) {
  sockaddr_storage ss;
  socklen_t len = sizeof(ss);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) < 0) return -1;
  if (ss.ss_family == AF_INET) return ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  if (ss.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port);
  return -1;
}

}  // namespace

Result<std::vector<Listener>> ListenTcp(const std::string& host, int port, int backlog) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  std::string port_s = std::to_string(port);
  int rc = ::getaddrinfo(host.empty() ? nullptr : host.c_str(), port_s.c_str(), &hints, &res);
  if (rc != 0) {
    return Status::Invalid(std::string("getaddrinfo(") + host + "): " + gai_strerror(rc));
  }
  std::vector<Listener> out;
  Status last_err = Status::Ok();
  int chosen_port = port;
  for (addrinfo* ai = res; ai; ai = ai->ai_next) {
    int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                      ai->ai_protocol);
    if (fd < 0) {
      // An address family the kernel lacks (no IPv6) is skipped, as memcached.
      if (errno == EAFNOSUPPORT) continue;
      last_err = Status::FromErrno("socket");
      continue;
    }
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (ai->ai_family == AF_INET6) ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
    // An ephemeral request binds the other families to the port the first got.
    if (chosen_port != port) {
      if (ai->ai_family == AF_INET) {
        reinterpret_cast<sockaddr_in*>(ai->ai_addr)->sin_port = htons(chosen_port);
      } else if (ai->ai_family == AF_INET6) {
        reinterpret_cast<sockaddr_in6*>(ai->ai_addr)->sin6_port = htons(chosen_port);
      }
    }
    if (::bind(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
      last_err = Status::FromErrno("bind " + FormatSockaddr(ai->ai_addr, ai->ai_addrlen));
      ::close(fd);
      continue;
    }
    if (::listen(fd, backlog) < 0) {
      last_err = Status::FromErrno("listen");
      ::close(fd);
      continue;
    }
    Listener l;
    l.fd = fd;
    l.port = BoundPort(fd);
    if (port == 0 && chosen_port == 0) chosen_port = l.port;
    l.name = (ai->ai_family == AF_INET6 ? "tcp6:" : "tcp:") +
             FormatSockaddr(ai->ai_addr, ai->ai_addrlen);
    if (port == 0) {
      // The name carries the real port, not the 0 we asked for.
      size_t colon = l.name.rfind(':');
      l.name = l.name.substr(0, colon + 1) + std::to_string(l.port);
    }
    out.push_back(std::move(l));
  }
  ::freeaddrinfo(res);
  if (out.empty()) {
    if (last_err.ok()) last_err = Status::Invalid("no usable address for " + host);
    return last_err;
  }
  return out;
}

Result<Listener> ListenUnix(const std::string& path, int mask, int backlog) {
  sockaddr_un un{};
  if (path.size() >= sizeof(un.sun_path)) return Status::Invalid("unix socket path too long");
  un.sun_family = AF_UNIX;
  std::memcpy(un.sun_path, path.c_str(), path.size() + 1);
  // Remove a stale socket file, but never a regular file someone else owns.
  struct stat st;
  if (::lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) ::unlink(path.c_str());
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::FromErrno("socket(AF_UNIX)");
  mode_t old = ::umask(static_cast<mode_t>(~mask & 0777));
  int rc = ::bind(fd, reinterpret_cast<sockaddr*>(&un), sizeof(un));
  int err = errno;
  ::umask(old);
  if (rc < 0) {
    ::close(fd);
    return Status::FromErrno("bind " + path, err);
  }
  if (::listen(fd, backlog) < 0) {
    err = errno;
    ::close(fd);
    return Status::FromErrno("listen " + path, err);
  }
  Listener l;
  l.fd = fd;
  l.is_unix = true;
  l.name = "unix:" + path;
  return l;
}

}  // namespace trove::net
