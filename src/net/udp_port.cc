// UdpPort: memcached's UDP framing around an ordinary protocol handler.
// Runs on the owning worker's thread.
#include "net/udp_port.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "net/io_buffer.h"

namespace trove::net {
namespace {

int BoundUdpPort(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) < 0) return -1;
  if (ss.ss_family == AF_INET) return ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  if (ss.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port);
  return -1;
}

void SetPort(sockaddr* sa, int port) {
  if (sa->sa_family == AF_INET) {
    reinterpret_cast<sockaddr_in*>(sa)->sin_port = htons(static_cast<uint16_t>(port));
  } else if (sa->sa_family == AF_INET6) {
    reinterpret_cast<sockaddr_in6*>(sa)->sin6_port = htons(static_cast<uint16_t>(port));
  }
}

// At most this many datagrams are served per readiness event, so one busy
// UDP socket cannot starve the worker's TCP connections.
constexpr int kDatagramsPerEvent = 64;

}  // namespace

Result<std::vector<int>> BindUdp(const std::string& host, int port, int per_addr, int* bound_port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  const std::string port_s = std::to_string(port);
  int rc = ::getaddrinfo(host.empty() ? nullptr : host.c_str(), port_s.c_str(), &hints, &res);
  if (rc != 0) return Status::Invalid(std::string("getaddrinfo(") + host + "): " + gai_strerror(rc));
  std::vector<int> fds;
  Status err = Status::Ok();
  int chosen = port;
  for (addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
    for (int i = 0; i < per_addr; ++i) {
      int fd = ::socket(ai->ai_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
      if (fd < 0) {
        if (errno != EAFNOSUPPORT) err = Status::FromErrno("socket");
        break;
      }
      int one = 1;
      ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
      ::setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
      if (ai->ai_family == AF_INET6) {
        ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
      }
      if (chosen != 0) SetPort(ai->ai_addr, chosen);
      if (::bind(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
        err = Status::FromErrno("bind UDP port " + std::to_string(chosen));
        ::close(fd);
        break;
      }
      if (chosen == 0) chosen = BoundUdpPort(fd);
      fds.push_back(fd);
    }
  }
  ::freeaddrinfo(res);
  if (fds.empty()) return err.ok() ? Status::Invalid("no address to bind UDP on") : err;
  if (bound_port != nullptr) *bound_port = chosen;
  return fds;
}

std::vector<std::string> UdpFrames(uint16_t req_id, const std::string& reply) {
  constexpr size_t kPayload = kUdpMaxDatagram - kUdpHeader;
  const size_t total = (reply.size() + kPayload - 1) / kPayload;
  std::vector<std::string> out;
  out.reserve(total);
  for (size_t i = 0; i < total; ++i) {
    std::string d(kUdpHeader, '\0');
    d[0] = static_cast<char>(req_id >> 8);
    d[1] = static_cast<char>(req_id & 0xff);
    d[2] = static_cast<char>((i >> 8) & 0xff);
    d[3] = static_cast<char>(i & 0xff);
    d[4] = static_cast<char>((total >> 8) & 0xff);
    d[5] = static_cast<char>(total & 0xff);
    d.append(reply, i * kPayload, kPayload);
    out.push_back(std::move(d));
  }
  return out;
}

UdpPort::UdpPort(int fd, int worker_id, uint64_t conn_id, ProtocolFactory* factory)
    : fd_(fd), worker_id_(worker_id), conn_id_(conn_id), factory_(factory) {
  buf_.resize(64 * 1024);  // the largest datagram
}

UdpPort::~UdpPort() { ::close(fd_); }

std::string UdpPort::Name() const {
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  if (::getsockname(fd_, reinterpret_cast<sockaddr*>(&ss), &len) < 0) return "udp:?";
  char host[INET6_ADDRSTRLEN] = {};
  if (ss.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&ss);
    ::inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
    return std::string("udp6:[") + host + "]:" + std::to_string(ntohs(a->sin6_port));
  }
  const auto* a = reinterpret_cast<const sockaddr_in*>(&ss);
  ::inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
  return std::string("udp:") + host + ":" + std::to_string(ntohs(a->sin_port));
}

Status UdpPort::Attach(EventLoop* loop) { return loop->AddFd(fd_, EPOLLIN, this); }

ProtocolHandler* UdpPort::Handler() {
  if (handler_ == nullptr) {
    ConnInfoView v;
    v.id = conn_id_;
    v.worker_id = worker_id_;
    v.fd = fd_;
    v.peer = "udp";
    handler_ = factory_->Create(worker_id_, v);
  }
  return handler_.get();
}

void UdpPort::OnIoEvent(uint32_t /*events*/) {
  for (int i = 0; i < kDatagramsPerEvent; ++i) {
    sockaddr_storage peer{};
    socklen_t plen = sizeof(peer);
    ssize_t n = ::recvfrom(fd_, buf_.data(), buf_.size(), 0, reinterpret_cast<sockaddr*>(&peer),
                           &plen);
    if (n < 0) return;  // EAGAIN (or an error the next event reports again)
    Serve(buf_.data(), static_cast<size_t>(n), &peer, plen);
  }
}

void UdpPort::Serve(const char* data, size_t len, const void* peer, uint32_t peer_len) {
  if (len < kUdpHeader) return;  // no frame header: dropped, as memcached
  const auto* h = reinterpret_cast<const unsigned char*>(data);
  const uint16_t req_id = static_cast<uint16_t>((h[0] << 8) | h[1]);
  const unsigned datagrams = (static_cast<unsigned>(h[4]) << 8) | h[5];
  if (datagrams > 1) return;  // multi-datagram requests are not supported (memcached)
  ProtocolHandler* handler = Handler();
  OutputBuffer out;
  const size_t body = len - kUdpHeader;
  size_t used = handler->OnData(data + kUdpHeader, body, out);
  // A request cut off by the end of the datagram, or a handler that wants to
  // close: the next datagram starts with a fresh handler.
  if (used < body || handler->BytesWanted() > 0 || handler->WantsClose()) handler_.reset();
  std::string reply = out.ToString();
  if (handler_) handler_->OnOutputDrained();  // the reply is sent (or dropped) below
  if (reply.empty()) return;  // noreply
  // The header counts datagrams in 16 bits: a reply past 65,535 of them
  // (about 91 MB, a metadump of a big cache) cannot be framed.
  constexpr size_t kMaxReply = 65535 * (kUdpMaxDatagram - kUdpHeader);
  if (reply.size() > kMaxReply) reply = "SERVER_ERROR reply too large for UDP\r\n";
  for (const std::string& d : UdpFrames(req_id, reply)) {
    (void)::sendto(fd_, d.data(), d.size(), MSG_DONTWAIT, static_cast<const sockaddr*>(peer),
                   peer_len);
  }
}

}  // namespace trove::net
