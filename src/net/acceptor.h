// Acceptor: the listener thread. Accepts on every listening socket, applies
// the connection limit, and hands sockets to workers round-robin.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"
#include "net/socket.h"
#include "net/worker.h"

namespace trove::net {

// One listening socket and the protocol its connections speak.
struct BoundListener {
  Listener listener;
  ProtocolFactory* factory = nullptr;
  // Written to a connection refused by the limit before closing it
  // (memcached's "ERROR Too many open connections\r\n").
  std::string reject_reply;
};

struct AcceptorOptions {
  size_t max_connections = 1024;  // -c
  // memcached's maxconns_fast: over the limit, refuse with reject_reply and
  // close. Off: leave new connections in the backlog until one closes.
  bool reject_when_full = true;
  NetCounters* counters = nullptr;
  std::vector<Worker*> workers;  // at least one
};

// The listener thread (seed 002 "Connection establishment"): accept, set
// TCP_NODELAY, check the limit before anything else, mint an id, pick the
// worker id % workers (round-robin, and it lets any thread find the owner of
// an id without a table), send the socket over the worker's channel.
//
// Thread safety: Start/Stop from the server thread; the loop runs on its own
// thread and owns the listening sockets until Stop returns.
//
// Invariants:
//  1. Connection ids are unique and increase; the owner of id is
//     workers[id % workers.size()].
//  2. counters->curr_connections counts a socket from the moment it is
//     accepted under the limit until its worker closes it.
class Acceptor {
 public:
  explicit Acceptor(const AcceptorOptions& opts);
  ~Acceptor();
  Acceptor(const Acceptor&) = delete;
  Acceptor& operator=(const Acceptor&) = delete;

  // Takes ownership of the listeners' fds (closed by Stop).
  void AddListener(BoundListener l);
  Status Start();
  // Stops accepting, closes the listening sockets, joins the thread.
  void Stop();

  // CONFIG SET maxclients: the limit for connections accepted from now on
  // (any thread; existing connections stay).
  void SetMaxConnections(size_t n) { max_connections_.store(n, std::memory_order_relaxed); }
  size_t max_connections() const { return max_connections_.load(std::memory_order_relaxed); }

  // The worker that owns connection `id`.
  static size_t WorkerIndexFor(uint64_t id, size_t num_workers) { return id % num_workers; }

 private:
  void Run();
  // Accepts until the backlog is empty; true when accepting must pause (out
  // of file descriptors, or at the limit without reject_when_full).
  bool AcceptFrom(const BoundListener& l);

  AcceptorOptions opts_;
  std::vector<BoundListener> listeners_;
  int epoll_fd_ = -1;
  int stop_fd_ = -1;
  std::thread thread_;
  std::atomic<bool> stopping_{false};    // relaxed: the eventfd wakes the loop
  std::atomic<size_t> max_connections_;  // relaxed: a limit, read per accept
  uint64_t next_id_ = 0;                 // acceptor thread only
};

}  // namespace trove::net
