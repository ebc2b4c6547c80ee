// Connection: the state of one client socket pinned to a worker, and the
// messages that create it. Touched only by its worker thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include <sys/socket.h>

#include "net/event_loop.h"
#include "net/io_buffer.h"
#include "net/protocol_handler.h"
#include "net/tls_conn.h"

namespace trove::net {

class Worker;

// A freshly accepted socket on its way from the acceptor to a worker.
// A port with a connection limit of its own (the RESP port's maxclients, the
// admin port's none), apart from the server-wide -c that memcached's
// listeners share. Always refuses over the limit (never pauses accepting).
// Thread safety: atomics; max is set by CONFIG SET from any worker, curr is
// raised by the acceptor and lowered by the worker that closes.
struct PortLimit {
  std::atomic<size_t> max{SIZE_MAX};
  std::atomic<uint64_t> curr{0};      // open connections of this port
  std::atomic<uint64_t> rejected{0};  // refused for the limit
  // The admin port's: its connections are exempt from rate limits. Set
  // before the port listens, read-only afterwards.
  bool privileged = false;
};

// A port's admission rule, checked for every accepted connection before it
// reaches a worker: Redis's protected mode on the RESP ports. A refused
// connection gets `reply` and is closed; it never counts toward a limit.
// Thread safety: Refuse runs on the acceptor thread while workers change the
// rule (CONFIG SET), so implementations read only atomics.
class AcceptGate {
 public:
  virtual ~AcceptGate() = default;
  // True to refuse a connection from `peer` (len bytes; is_unix for a unix
  // socket), with *reply set to the bytes to send before closing.
  virtual bool Refuse(const sockaddr* peer, socklen_t len, bool is_unix,
                      std::string_view* reply) = 0;
};

struct NewConn {
  int fd = -1;
  uint64_t id = 0;
  ProtocolFactory* factory = nullptr;
  bool is_unix = false;
  std::string peer;         // "ip:port", "[v6]:port" or the unix path
  // The listener's name, "tcp:0.0.0.0:11211" (BoundListener::shared_name).
  std::shared_ptr<const std::string> listen_name;
  PortLimit* own_limit = nullptr;  // its port's own limit (else the server-wide one)
  // A TLS listener's: the context current at accept, and the listener's
  // verify override (kTlsVerifyDefault, or btls:/mtls:'s).
  std::shared_ptr<const TlsContext> tls;
  int tls_verify = kTlsVerifyDefault;
};

// One client connection. Owner: its worker thread, for the connection's whole
// life; no other thread reads or writes any field (other threads reach it by
// posting its worker a task naming `id`). It is the epoll watcher of its
// socket and the ConnControl its handler talks to.
//
// Thread safety: worker thread only; no locks.
//
// Invariants:
//  1. fd >= 0 until closed; once closed is true the object is only waiting to
//     be freed at the top of the worker loop and nothing touches its socket.
//  2. read_paused implies the epoll mask lacks EPOLLIN.
//  3. in_ready implies the connection appears exactly once in the worker's
//     ready list.
//  4. After handler->WantsClose() no more input is parsed; the connection
//     closes as soon as `out` is empty.
//  5. flush_queued implies the connection appears exactly once in the
//     worker's flush list.
//  6. While suspended, the handler's OnData is not called; Resume() puts the
//     connection on the ready list so its buffered input is parsed in order.
//  7. handler is null only while a TLS handshake runs (tls set, handshaking):
//     then only the handshake runs on the socket's events, and nothing is
//     parsed or flushed (worker_tls.cc).
class Connection final : public IoWatcher, public ConnControl {
 public:
  explicit Connection(Worker* w) : worker(w) {}

  // IoWatcher
  void OnIoEvent(uint32_t events) override;
  // ConnControl
  uint64_t id() const override { return conn_id; }
  int worker_id() const override;
  EventLoop& loop() override;
  WorkerGroup& group() override;
  void Suspend() override { suspended_ = true; }
  void Resume() override;
  bool suspended() const override { return suspended_; }
  OutputBuffer& output() override { return out; }
  void OutputAdded() override;
  void CloseSoon() override;
  int64_t IdleNs() const override;
  int64_t ArrivalNs() const override { return arrival_ns; }
  void ServeOthersWhileBusy() override;

  Worker* const worker;
  int fd = -1;
  uint64_t conn_id = 0;
  bool is_unix = false;
  std::string peer;
  std::shared_ptr<const std::string> listen_name;  // NewConn::listen_name (never null)
  std::unique_ptr<ProtocolHandler> handler;
  InputBuffer in;
  OutputBuffer out;
  uint32_t epoll_mask = 0;   // what epoll currently watches for
  bool read_paused = false;  // unsent output above kOutputSoftLimit
  bool closing = false;      // close once `out` drains
  bool closed = false;
  // Why it closes (memcached's conn_close reasons, for `watch connevents`);
  // set just before Close, normal unless said otherwise.
  enum class CloseReason : uint8_t { kError, kNormal, kIdleTimeout, kShutdown };
  CloseReason close_reason = CloseReason::kNormal;
  bool in_ready = false;         // queued to parse buffered input again
  bool close_requested = false;  // CloseConnection by id: closes at a safe point
  bool flush_queued = false;     // output waits for the end of the loop turn
  // The last write left bytes behind (the socket is full): no send is tried
  // again until epoll reports EPOLLOUT, so a reader that stopped costs its
  // worker no syscall per turn however much is queued for it.
  bool write_blocked = false;
  int64_t last_active_ns = 0;    // Clock::MonoNanos of the last input
  int64_t created_ns = 0;        // Clock::MonoNanos when the worker adopted it
  bool rx_stamps = false;        // reads take the kernel's arrival stamp (ArrivalNs)
  // ProtocolFactory::ArrivalStampsFlag: stamps start once it is true.
  const std::atomic<bool>* stamps_flag = nullptr;
  int64_t arrival_ns = 0;        // CLOCK_REALTIME ns when the last read's data arrived
  PortLimit* own_limit = nullptr;  // NewConn::own_limit: whose slot Close gives back
  // TLS (docs/adr/0008-tls.md): set for a TLS listener's connection. While
  // tls->handshaking() the connection has no handler yet (it is made from
  // pending_factory once the handshake is done, knowing the peer's
  // certificate) and only the handshake runs on its events.
  std::unique_ptr<TlsConn> tls;
  ProtocolFactory* pending_factory = nullptr;

 private:
  bool suspended_ = false;
};

}  // namespace trove::net
