// NetServer: the acceptor plus the worker threads, and the cross-worker
// requests built on their inboxes ("stats conns", close by id). Built and
// driven by server/ on the main thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/non_copyable.h"
#include "common/status.h"
#include "net/acceptor.h"
#include "net/protocol_handler.h"
#include "net/socket.h"
#include "net/worker.h"

namespace trove::net {

struct NetServerOptions {
  int num_workers = 4;            // -t
  size_t max_connections = 1024;  // -c
  bool maxconns_fast = true;      // over -c: refuse at once (false: wait in the backlog)
  int64_t idle_timeout_s = 0;     // -o idle_timeout
  int verbosity = 0;              // -v count; SetVerbosity changes it later
  const Clock* clock = nullptr;   // nullptr = SystemClock::Default()
  LogHub* log = nullptr;          // connection events for watchers; may be null
  int64_t tls_handshake_timeout_ms = 10000;  // WorkerOptions::tls_handshake_timeout_ms
  size_t tls_wbuf_size = 16 * 1024;          // WorkerOptions::tls_wbuf_size
};

// Owns the listener thread and the workers.
//
// Thread safety: AddListener/Start/Stop from one thread (the server's main
// thread). Connections(), CloseConnection() and WakeAll() from any thread
// that is not a worker; the counters from any thread. Workers ask each other
// asynchronously through group().
//
// Invariants:
//  1. Listeners are added before Start(); Stop() closes them first, so no new
//     connection arrives while the workers shut down.
//  2. Stop() is idempotent and runs from the destructor.
class NetServer : NonCopyable {
 public:
  explicit NetServer(const NetServerOptions& opts);
  ~NetServer();

  // Registers listening sockets served by `factory` (which outlives this).
  // reject_reply is written to connections refused by -c.
  // own_limit: the port's own connection limit (it must outlive the
  // server); null: the server-wide -c limit. gate: the port's admission
  // rule (it must outlive the server); null admits every peer.
  void AddListeners(std::vector<Listener> ls, ProtocolFactory* factory, std::string reject_reply,
                    PortLimit* own_limit = nullptr, AcceptGate* gate = nullptr,
                    ListenerTls tls = {});
  Status Start();
  void Stop();

  // "stats conns": every open connection on every worker. Blocks, so only
  // for threads that are not workers (a worker uses group().Gather).
  std::vector<ServerServices::ConnInfo> Connections();
  // The listening sockets added so far (fd, name), for `stats conns`.
  // Thread-safe after Start (fixed from then on).
  const std::vector<ServerServices::ConnInfo>& listening() const { return listening_; }
  // Closes connection `id` at its worker's next safe point; false if no
  // connection has that id. Blocks like Connections().
  bool CloseConnection(uint64_t id);
  // CONFIG SET maxclients / INFO maxclients (any thread, after Start()).
  void SetMaxConnections(size_t n) {
    if (acceptor_) acceptor_->SetMaxConnections(n);
  }
  size_t MaxConnections() const {
    return acceptor_ ? acceptor_->max_connections() : opts_.max_connections;
  }
  // The workers as they reach each other (valid after Start()).
  WorkerGroup& group() { return group_; }
  // The event log the workers write connection events to. REQUIRES: before
  // Start (the hub is built on group(), so it comes after construction).
  void SetLog(LogHub* log) { opts_.log = log; }
  // "verbosity N": workers log connections at >= 2 (any thread).
  void SetVerbosity(int v) { verbosity_.store(v, std::memory_order_relaxed); }
  int verbosity() const { return verbosity_.load(std::memory_order_relaxed); }
  // Wakes every worker so it runs its timers now (tests with a ManualClock).
  void WakeAll();

  const NetCounters& counters() const { return counters_; }
  // Sums over the workers (any thread; relaxed).
  uint64_t BytesRead() const;
  uint64_t BytesWritten() const;
  int num_workers() const { return static_cast<int>(workers_.size()); }
  size_t WorkerConnections(int i) const { return workers_[i]->num_connections(); }
  const NetServerOptions& options() const { return opts_; }

 private:
  NetServerOptions opts_;
  NetCounters counters_;
  std::atomic<int> verbosity_;  // relaxed: a log level
  std::vector<std::unique_ptr<Worker>> workers_;
  WorkerGroup group_;
  std::unique_ptr<Acceptor> acceptor_;
  std::vector<BoundListener> pending_listeners_;
  std::vector<ServerServices::ConnInfo> listening_;
  std::vector<ProtocolFactory*> factories_;
  bool started_ = false;
};

}  // namespace trove::net
