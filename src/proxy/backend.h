// One memcached backend as a proxy thread sees it: its sockets (1..8,
// `connections=`), each full duplex and pipelined, with memcached's proxy
// life cycle: connect, `version` validation, failure counting, marked bad
// after the failure limit, retried after the wait time.
//
// A Backend lives on one event loop (a worker's, or the IO thread's) and is
// used only there. Requests from other loops reach it as posted tasks, and
// their completions go back the same way (BackendOp::origin).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/non_copyable.h"
#include "net/event_loop.h"
#include "net/tls_conn.h"
#include "protocol/memcache/response_parser.h"
#include "proxy/buffer_memory.h"
#include "proxy/proxy_shared.h"
#include "proxy/proxy_types.h"

namespace trove::proxy {

// One request on its way to a backend and its reply.
struct BackendOp {
  std::string request;  // the exact bytes to send
  // Set only for a backend with log={...}: who answered, for the proxyreqs line.
  std::shared_ptr<const BackendSpec> log_spec;
  // --- the result, valid when done runs ---
  bool failed = false;  // no reply: the client gets SERVER_ERROR backend failure
  std::string reply;    // the reply's bytes as received
  memcache::ParsedReply parsed;
  int64_t start_ns = 0;
  int64_t elapsed_us = 0;
  // Runs once, on `origin`'s thread.
  net::EventLoop* origin = nullptr;
  std::function<void(BackendOp*)> done;
  // The slot and handle waiting for this op (null once the slot is gone).
  void* owner = nullptr;
  size_t handle = 0;
};
using OpPtr = std::shared_ptr<BackendOp>;

// Finishes `op` on its origin loop (directly when already there).
void CompleteOp(OpPtr op);

// Thread safety: everything on loop() only (the owner), except that
// Backend objects are created and released through that loop.
//
// Invariants:
//  1. Every op handed to Submit completes exactly once (reply, failure,
//     or failure at destruction).
//  2. A socket's ops complete in the order they were written; bytes of a
//     later op are never written before an earlier op's.
//  3. depth of a socket = ops queued on it and not yet answered.
class Backend : NonCopyable {
 public:
  Backend(std::shared_ptr<const BackendSpec> spec, net::EventLoop* loop, ProxyShared* shared);
  ~Backend();

  const BackendSpec& spec() const { return *spec_; }
  const std::shared_ptr<const BackendSpec>& spec_ptr() const { return spec_; }
  net::EventLoop* loop() const { return loop_; }
  // A backend on a worker's loop: while that worker is over its
  // mcp.buffer_memory_limit, a reply fails its request and resets the
  // socket ("outofmemory", as memcached). Backends on the IO thread have
  // none: memcached checks only on a worker.
  // REQUIRES: before Start; m is the worker of loop().
  void set_buffer_memory(const BufferMemory* m) { buffer_mem_ = m; }
  // Opens the sockets (never for down=true).
  void Start();
  // Adds op to this turn's batch; Flush sends the batch.
  void Submit(OpPtr op) { batch_.push_back(std::move(op)); }
  bool has_batch() const { return !batch_.empty(); }
  // memcached's proxy_run_backend_queue for this backend: picks a socket,
  // fails the whole batch when it is bad or past the depth limit, else
  // queues it and writes what it can.
  void Flush();
  // Stops watching the sockets (before the deferred delete).
  void CloseSockets();

 private:
  // kHandshaking: a tls=true backend's TLS handshake, between the TCP
  // connect and the `version` check (under the connect timeout).
  enum class State : uint8_t { kIdle, kConnecting, kHandshaking, kValidating, kReady, kRetryWait };
  struct Conn final : net::IoWatcher {
    Backend* be = nullptr;
    int fd = -1;
    State state = State::kIdle;
    bool bad = false;
    int failed_count = 0;
    int flap_count = 0;       // failures in quick succession (flaptime)
    int64_t last_failed_ns = 0;  // seeded at each connect, for the flap check
    bool want_write = false;       // EPOLLOUT registered
    std::deque<OpPtr> waiting;     // queued before the socket was ready
    std::deque<OpPtr> inflight;    // written (or in wbuf), awaiting replies
    std::string wbuf;
    size_t woff = 0;
    std::string rbuf;
    std::unique_ptr<net::TlsConn> tls;  // tls=true: the socket's TLS, after the TCP connect
    size_t depth() const { return waiting.size() + inflight.size(); }
    net::Timer timer;  // connect / read / retry, by state
    explicit Conn(Backend* b) : be(b), timer([this] { be->OnTimer(this); }) {}
    void OnIoEvent(uint32_t events) override { be->OnIo(this, events); }
  };

  void Connect(Conn* c);
  // The TCP connection is up: the TLS handshake (tls=true), then `version`.
  void Connected(Conn* c);
  void Handshake(Conn* c);
  void SendVersion(Conn* c);
  // The socket's reads and writes, through TLS when the backend has it:
  // as recv/send (-1 with errno EAGAIN when nothing moves now).
  ssize_t Send(Conn* c, const char* p, size_t n);
  ssize_t Recv(Conn* c, char* p, size_t n);
  void OnIo(Conn* c, uint32_t events);
  void OnTimer(Conn* c);
  void OnWritable(Conn* c);
  void OnReadable(Conn* c);
  // Drains rbuf into replies; false after a failure reset the socket.
  bool ParseReplies(Conn* c);
  bool WriteOut(Conn* c);  // false on a write error (socket reset)
  void SetWriteInterest(Conn* c, bool on);
  void Append(Conn* c, OpPtr op);
  void ArmReadTimer(Conn* c);
  // memcached's _reset_bad_backend: fails every queued op, logs (unless
  // already bad), closes, counts the failure and reschedules.
  void Reset(Conn* c, const char* err);
  void Close(Conn* c);
  void FailAll(std::deque<OpPtr>* q);
  Conn* Choose();

  const std::shared_ptr<const BackendSpec> spec_;
  net::EventLoop* const loop_;
  ProxyShared* const shared_;
  std::vector<std::unique_ptr<Conn>> conns_;
  std::vector<OpPtr> batch_;
  std::vector<OpPtr> batch_spare_;  // Flush's working copy (reentrant Submit goes to batch_)
  const BufferMemory* buffer_mem_ = nullptr;  // null: no limit (IO thread)
  bool started_ = false;
  bool in_flush_ = false;  // a completion inside Flush may flush again (local batch then)
};

// Runs `fn` on `loop`: now when the caller is on it, else posted.
void RunOn(net::EventLoop* loop, net::Task fn);

// A shared Backend whose last owner, on any thread, has it destroyed by a
// task on its own loop (never inside Lua's collector or another loop).
std::shared_ptr<Backend> MakeBackend(std::shared_ptr<const BackendSpec> spec, net::EventLoop* loop,
                                     ProxyShared* shared);
// Process exit: the loops have stopped; backends are destroyed where they
// are released and completions are dropped.
void SetProxyShutdown();

}  // namespace trove::proxy
