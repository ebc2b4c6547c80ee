// UdpPort: memcached's UDP protocol (-U). Each datagram carries an 8-byte
// frame header (request id, sequence number, datagrams in the message,
// reserved; big-endian 16-bit fields) and then text requests; the reply goes
// back in datagrams of at most 1,400 bytes, each with the request id, its
// sequence number and the total. A request must fit one datagram, as in
// memcached: a message announcing more datagrams is dropped.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/non_copyable.h"
#include "common/result.h"
#include "common/status.h"
#include "net/event_loop.h"
#include "net/protocol_handler.h"

namespace trove::net {

class WorkerGroup;

// memcached's UDP_MAX_PAYLOAD_SIZE (header included) and header size.
inline constexpr size_t kUdpMaxDatagram = 1400;
inline constexpr size_t kUdpHeader = 8;

// Binds host:port for UDP on every address it resolves to, `per_addr`
// sockets each (SO_REUSEPORT: the kernel spreads peers over them). Returns
// the fds; *bound_port gets the port (for port 0).
Result<std::vector<int>> BindUdp(const std::string& host, int port, int per_addr, int* bound_port);

// Splits `reply` into memcached's UDP datagrams for request `req_id`.
std::vector<std::string> UdpFrames(uint16_t req_id, const std::string& reply);

// One UDP socket served on one worker's loop. The protocol handler is
// created by `factory` for that worker, with no ConnControl (nothing in a
// datagram can suspend or outlive its reply); a handler left mid-request or
// closing is replaced before the next datagram.
// Thread safety: created anywhere, then used only on its worker's thread
// (Attach and OnIoEvent).
class UdpPort final : public IoWatcher, private NonCopyable {
 public:
  UdpPort(int fd, int worker_id, uint64_t conn_id, ProtocolFactory* factory);
  // "udp:<addr>:<port>" (udp6 for IPv6), as memcached's `stats conns`.
  std::string Name() const;
  ~UdpPort() override;

  // On the worker's thread: registers the socket with its loop.
  Status Attach(EventLoop* loop);
  void OnIoEvent(uint32_t events) override;
  int fd() const { return fd_; }
  int worker_id() const { return worker_id_; }

 private:
  void Serve(const char* data, size_t len, const void* peer, uint32_t peer_len);
  ProtocolHandler* Handler();

  const int fd_;
  const int worker_id_;
  const uint64_t conn_id_;
  ProtocolFactory* const factory_;
  std::unique_ptr<ProtocolHandler> handler_;
  std::string buf_;  // one datagram
};

}  // namespace trove::net
