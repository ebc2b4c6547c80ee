// Worker: one epoll loop thread that owns the connections assigned to it, plus
// the bounded channels other threads use to reach it. See docs/THREADS.md.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common/clock.h"
#include "common/mutex.h"
#include "common/status.h"
#include "net/channel.h"
#include "net/connection.h"
#include "net/protocol_handler.h"

namespace trove::net {

// Process-wide connection counters, shared by the acceptor and the workers.
// Every field is an atomic read with relaxed order: they are statistics and
// a limit check that tolerates being off by one in-flight connection.
struct NetCounters {
  std::atomic<uint64_t> curr_connections{0};    // accepted and not yet closed
  std::atomic<uint64_t> total_connections{0};   // ever accepted (not rejected)
  std::atomic<uint64_t> rejected_connections{0};
  std::atomic<uint64_t> connection_structures{0};  // Connection objects alive
  std::atomic<uint64_t> conn_yields{0};         // -R limit reached, re-queued
  std::atomic<uint64_t> read_paused{0};         // times a connection stopped being read
  std::atomic<uint64_t> listen_disabled{0};     // accept paused (out of fds)
  std::atomic<uint64_t> idle_kicks{0};          // closed by -o idle_timeout
};

// Replies from workers to a thread waiting on a cross-worker request
// ("stats conns", close by id). Shared so a late reply never dangles.
struct Rendezvous {
  Mutex mu{LockRank::kLeaf};
  int pending GUARDED_BY(mu) = 0;
  bool found GUARDED_BY(mu) = false;
  std::vector<ServerServices::ConnInfo> conns GUARDED_BY(mu);
};

// A message for a worker's inbox.
struct WorkerMsg {
  enum class Kind : uint8_t {
    kWake,          // no-op: run timers now (tests with a ManualClock)
    kStop,          // close every connection and leave the loop
    kCollectConns,  // append this worker's connections to reply->conns
    kCloseConn,     // close conn_id if it lives here; reply->found
  };
  Kind kind = Kind::kWake;
  uint64_t conn_id = 0;
  std::shared_ptr<Rendezvous> reply;
};

struct WorkerOptions {
  int id = 0;
  int64_t idle_timeout_s = 0;           // 0 = never close idle connections
  const Clock* clock = nullptr;         // nullptr = SystemClock::Default()
  NetCounters* counters = nullptr;      // required
  std::vector<ProtocolFactory*> factories;  // InitWorker() runs for each
  // Log level (memcached's -v count); >= 2 logs connections opening and
  // closing on stderr. Relaxed atomic owned by NetServer; may be null.
  const std::atomic<int>* verbosity = nullptr;
};

// One worker thread: an epoll loop over its connections, its new-connection
// channel (capacity limits::kAcceptChannelCapacity) and its inbox (capacity
// limits::kWorkerInboxCapacity). epoll is level-triggered: each readiness
// event gets one read() of up to 16 KiB, so one busy client cannot starve the
// others; input left over after the handler's -R limit is parsed again from
// the ready list after the other connections' events. Replies are written at
// the end of the loop turn, one writev per connection, after every ready
// connection has been parsed: a client woken by its first reply then finds
// the rest already sent (Redis writes in beforeSleep for the same reason).
//
// Thread safety: Start/Stop from the owning (server) thread; SendNewConn and
// Post from any thread; everything else runs on the worker thread. The
// connection table and all Connection objects are worker-thread only.
//
// Invariants:
//  1. Every Connection in conns_ is registered with epoll_fd_ and counted in
//     counters->curr_connections until it is closed.
//  2. A closed connection is removed from conns_ at once and freed only at the
//     top of the next loop turn (graveyard_), after which no pointer to it
//     remains in the ready list, the flush list or an epoll event.
//  3. Messages are never dropped: a full channel makes the sender wait.
class Worker {
 public:
  explicit Worker(const WorkerOptions& opts);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // Creates the epoll set; spawns the thread and returns once it has run
  // every factory's InitWorker.
  Status Start();
  // Asks the loop to close its connections and exit, then joins it.
  void Stop();

  // Hands an accepted socket over (waits while the channel is full).
  void SendNewConn(NewConn c);
  // Sends a message; waits while the inbox is full. Called from a worker it
  // serves its own inbox between tries, so workers never deadlock on each
  // other.
  void Post(WorkerMsg m);

  int id() const { return opts_.id; }
  // The worker running on the calling thread, or nullptr.
  static Worker* Current();

  // Worker thread only: handles waiting inbox messages now, without closing
  // any connection (closes are deferred to a safe point). Used while this
  // thread waits for other workers' replies.
  void ServeInboxNested();

  size_t num_connections() const { return num_conns_.load(std::memory_order_relaxed); }
  // Socket bytes this worker has read and written ("stats" bytes_read/written).
  uint64_t bytes_read() const { return bytes_read_.load(std::memory_order_relaxed); }
  uint64_t bytes_written() const { return bytes_written_.load(std::memory_order_relaxed); }

 private:
  void Run();
  void HandleInbox();
  void HandleMsg(WorkerMsg& m);
  void AcceptNew();
  void OnEvent(Connection* c, uint32_t events);
  // Reads once (if from_socket) then parses and executes; the output is
  // queued for FlushQueued.
  void Serve(Connection* c, bool from_socket);
  void QueueFlush(Connection* c);
  // Writes every queued connection's output (end of a loop turn).
  void FlushQueued();
  void AfterIo(Connection* c);
  void SetMask(Connection* c, uint32_t mask);
  void Close(Connection* c);
  void RunDeferredCloses();
  void ProcessReady();
  void CheckIdle();
  ServerServices::ConnInfo Describe(const Connection& c) const;
  int64_t Now() const { return clock_->MonoNanos(); }
  // The clock read once per loop turn, for activity stamps.
  int64_t TurnNow() const { return turn_now_ns_; }
  bool Verbose(int level) const {
    return opts_.verbosity && opts_.verbosity->load(std::memory_order_relaxed) >= level;
  }
  // Flushes c's output, counting bytes; false on a hard socket error.
  bool FlushOut(Connection* c);

  WorkerOptions opts_;
  const Clock* clock_;
  NetCounters* counters_;
  int epoll_fd_ = -1;
  std::thread thread_;
  Channel<NewConn> accept_ch_;
  Channel<WorkerMsg> inbox_;

  // --- worker thread only ---
  std::unordered_map<uint64_t, std::unique_ptr<Connection>> conns_;
  std::vector<std::unique_ptr<Connection>> graveyard_;
  std::vector<Connection*> ready_;
  std::vector<Connection*> ready_swap_;
  std::vector<Connection*> flush_;
  std::vector<uint64_t> deferred_close_;
  std::vector<NewConn> new_batch_;
  std::vector<WorkerMsg> msg_batch_;
  int64_t last_idle_check_ns_ = 0;
  int64_t turn_now_ns_ = 0;
  bool stop_ = false;

  std::atomic<size_t> num_conns_{0};  // relaxed: a gauge for stats and tests
  // Release/acquire: publishes what InitWorker did to the thread in Start().
  std::atomic<bool> initialised_{false};
  // Written by the worker thread only (load + store, no locked add), read
  // relaxed by stats from any thread.
  std::atomic<uint64_t> bytes_read_{0};
  std::atomic<uint64_t> bytes_written_{0};
};

}  // namespace trove::net
