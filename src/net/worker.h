// Worker: one epoll loop thread that owns the connections assigned to it, plus
// the bounded channels other threads use to reach it. See docs/THREADS.md.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common/clock.h"
#include "common/limits.h"
#include "common/mutex.h"
#include "common/non_copyable.h"
#include "common/status.h"
#include "net/channel.h"
#include "net/connection.h"
#include "net/event_loop.h"
#include "net/log_hub.h"
#include "net/protocol_handler.h"
#include "net/worker_group.h"

namespace trove::net {

// Process-wide connection counters, shared by the acceptor and the workers.
// Every field is an atomic read with relaxed order: they are statistics and
// a limit check that tolerates being off by one in-flight connection.
struct NetCounters {
  // Accepted and not yet closed. Decremented seq_cst by
  // Acceptor::ReleaseSlot, which pairs it with the acceptor's paused flag.
  std::atomic<uint64_t> curr_connections{0};
  std::atomic<uint64_t> total_connections{0};  // ever accepted (not rejected)
  std::atomic<uint64_t> rejected_connections{0};
  std::atomic<uint64_t> connection_structures{0};  // Connection objects alive
  std::atomic<uint64_t> conn_yields{0};            // -R limit reached, re-queued
  std::atomic<uint64_t> read_paused{0};            // times a connection stopped being read
  std::atomic<uint64_t> listen_disabled{0};        // times accepting paused (full, out of fds)
  std::atomic<uint64_t> listen_disabled_us{0};     // time spent paused, summed at each resume
  std::atomic<uint64_t> idle_kicks{0};             // closed by -o idle_timeout
  // TLS (memcached's names): handshakes that failed or timed out, TLS
  // errors after the handshake, full handshakes with the session cache on.
  std::atomic<uint64_t> ssl_handshake_errors{0};
  std::atomic<uint64_t> ssl_proto_errors{0};
  std::atomic<uint64_t> ssl_new_sessions{0};
};

struct WorkerOptions {
  int id = 0;
  int64_t idle_timeout_s = 0;               // 0 = never close idle connections
  const Clock* clock = nullptr;             // nullptr = SystemClock::Default()
  NetCounters* counters = nullptr;          // required
  std::vector<ProtocolFactory*> factories;  // InitWorker() runs for each
  // Log level (memcached's -v count); >= 2 logs connections opening and
  // closing on stderr. Relaxed atomic owned by NetServer; may be null.
  const std::atomic<int>* verbosity = nullptr;
  WorkerGroup* group = nullptr;  // required: the server's workers
  LogHub* log = nullptr;         // `watch connevents`; may be null
  // Gives back the slot of a closed connection: decrements
  // counters->curr_connections and re-arms a paused acceptor
  // (Acceptor::ReleaseSlot). Null: the worker only decrements.
  std::function<void()> release_slot;
  // A TLS connection still handshaking after this long is closed (counted
  // in ssl_handshake_errors), so a stalled client holds a descriptor for a
  // bounded time and never the worker.
  int64_t tls_handshake_timeout_ms = 10000;
  // memcached's ssl_wbuf_size: the staging buffer small replies are
  // gathered in before one TLS write (one per worker).
  size_t tls_wbuf_size = 16 * 1024;
};

// One worker thread: an EventLoop over its connections, its new-connection
// channel (capacity limits::kAcceptChannelCapacity), its inbox of tasks
// (capacity limits::kWorkerInboxCapacity) and its timers. epoll is level-triggered: each readiness
// event gets one recv() of up to 16 KiB, so one busy client cannot starve the
// others; input left over after the handler's -R limit is parsed again from
// the ready list after the other connections' events. Replies are written at
// the end of the loop turn, one sendmsg per connection, after every ready
// connection has been parsed: a client woken by its first reply then finds
// the rest already sent (Redis writes in beforeSleep for the same reason).
//
// Thread safety: Start/Stop from the owning (server) thread; SendNewConn and
// Post from any thread; everything else runs on the worker thread (tasks
// posted to it included). The connection table and all Connection objects
// are worker-thread only.
//
// Invariants:
//  1. Every Connection in conns_ is registered with epoll_fd_ and counted in
//     counters->curr_connections until it is closed.
//  2. A closed connection is removed from conns_ at once and freed only at the
//     top of the next loop turn (graveyard_), after which no pointer to it
//     remains in the ready list, the flush list or an epoll event.
//  3. Messages are never dropped: a full channel makes the sender wait (see
//     EventLoop::Post for why that cannot deadlock).
//  4. A suspended connection's input is never parsed; parsing resumes from
//     the ready list, in request order.
class Worker : NonCopyable {
 public:
  explicit Worker(const WorkerOptions& opts);
  ~Worker();

  // Creates the epoll set; spawns the thread and returns once it has run
  // every factory's InitWorker.
  Status Start();
  // Asks the loop to close its connections and exit, then joins it.
  void Stop();

  // Hands an accepted socket over (waits while the channel is full).
  void SendNewConn(NewConn c);
  // Runs t on this worker's thread (waits while the inbox is full).
  void Post(Task t) { loop_.Post(std::move(t)); }

  int id() const { return opts_.id; }
  EventLoop& loop() { return loop_; }
  WorkerGroup& group() { return *opts_.group; }
  // The worker running on the calling thread, or nullptr.
  static Worker* Current();

  // --- worker thread only (tasks posted here) ---
  // The open connection with this id, or nullptr.
  Connection* Find(uint64_t conn_id);
  // "stats conns" lines for every connection of this worker.
  std::vector<ServerServices::ConnInfo> DescribeAll() const;
  // CLIENT LIST entries for every connection of this worker.
  std::vector<ClientInfo> ClientInfos();
  ClientInfo ClientInfoOf(Connection& c);
  // Closes conn_id at the next safe point; false if it is not open here.
  bool RequestClose(uint64_t conn_id);
  // Wakes the idle check at once (tests with a ManualClock).
  void RunIdleCheckNow();

  size_t num_connections() const { return num_conns_.load(std::memory_order_relaxed); }
  // The largest input buffer (bytes allocated) and unsent output (bytes) any
  // of this worker's connections had in the last limits::kBufferPeakSlots
  // seconds, as sampled by the housekeeping tick (INFO
  // client_recent_max_input_buffer / _output_buffer). Any thread.
  void RecentMaxBuffers(uint64_t* in, uint64_t* out) const;
  // Socket bytes this worker has read and written ("stats" bytes_read/written).
  uint64_t bytes_read() const { return bytes_read_.load(std::memory_order_relaxed); }
  uint64_t bytes_written() const { return bytes_written_.load(std::memory_order_relaxed); }

 private:
  friend class Connection;
  void Run();
  void AcceptNew();
  void OnEvent(Connection* c, uint32_t events);
  // Gives c its protocol handler (after the TLS handshake for a TLS
  // connection); false: c was closed.
  bool Adopt(Connection* c, ProtocolFactory* f);
  // One step of c's TLS handshake on an event; Adopt once done.
  void ContinueHandshake(Connection* c);
  // TLS's read and flush, for ReadOnce and FlushOut.
  ssize_t RecvTls(Connection* c);
  int64_t FlushTls(Connection* c);
  // Reads once (if from_socket) then parses and executes (a connection with
  // arrival stamps is parsed by ParseArrived, after the turn's reads); the
  // output is queued for FlushQueued.
  void Serve(Connection* c, bool from_socket);
  // Parses and executes c's buffered input; output is queued for FlushQueued.
  void Parse(Connection* c, bool from_socket);
  // One read into c->in (false: c was closed, or nothing was read).
  bool ReadOnce(Connection* c);
  // ConnControl::ServeOthersWhileBusy for `self`, nested in its OnData: one
  // non-blocking poll; the ready connections other than self whose handler
  // ServesWhileBusy get their event (OnEvent, parsed at once: nested_) and
  // are flushed at once. Safe nested: a
  // connection closed here stays allocated until the next turn (invariant
  // 2), the outer turn's lists (arrived_, ready_, flush_) are only appended
  // to, and self is never touched.
  void ServeWhileBusy(Connection* self);
  // The turn's reads from connections with arrival stamps, parsed in the
  // order their data reached the kernel.
  void ParseArrived();
  // One read into c->in; RecvStamped also records c->arrival_ns.
  // Turns c's arrival stamps on once its factory's flag is set.
  void StartStamps(Connection* c);
  ssize_t RecvPlain(Connection* c);
  ssize_t RecvStamped(Connection* c);
  void QueueFlush(Connection* c);
  void QueueReady(Connection* c);
  // Writes every queued connection's output (end of a loop turn).
  void FlushQueued();
  // Input fences (WorkerGroup::Fence): a request that arrived in this turn
  // is armed at its end and answered at the end of the next turn, whose
  // epoll_wait then began after the request arrived.
  friend class WorkerGroup;
  struct Fence;
  void AddFence(std::shared_ptr<Fence> f) { fences_new_.push_back(std::move(f)); }
  void AnswerFences();
  void AfterIo(Connection* c);
  // After a flush of c: closes c when the flush failed (with reason
  // if_failed) or when c is closing and its output is out; else AfterIo.
  void AfterFlush(Connection* c, bool flushed, Connection::CloseReason if_failed);
  void SetMask(Connection* c, uint32_t mask);
  void Close(Connection* c);
  // `watch connevents`: conn_new when adopted, conn_close when closed.
  void LogConnEvent(const Connection& c, bool opened);
  // A connection counted in curr_connections is gone (opts_.release_slot).
  void ReleaseSlot(PortLimit* own);  // own: the port's own limit, else the server-wide one
  void RunDeferredCloses();
  void ProcessReady();
  void CheckIdle();
  // Every limits::kHousekeepingMs: samples buffer peaks and runs each
  // handler's OnHousekeeping.
  void Housekeeping();
  ServerServices::ConnInfo Describe(const Connection& c) const;
  int64_t Now() const { return clock_->MonoNanos(); }
  // The clock read once per loop turn (at its first use after epoll
  // returns), for activity stamps.
  int64_t TurnNow() {
    if (turn_now_ns_ == 0) turn_now_ns_ = Now();
    return turn_now_ns_;
  }
  bool Verbose(int level) const {
    return opts_.verbosity && opts_.verbosity->load(std::memory_order_relaxed) >= level;
  }
  // Flushes c's output, counting bytes; false on a hard socket error.
  bool FlushOut(Connection* c);

  WorkerOptions opts_;
  const Clock* clock_;
  NetCounters* counters_;
  EventLoop loop_;
  std::thread thread_;
  Channel<NewConn> accept_ch_;
  MemberWatcher<Worker, &Worker::AcceptNew> accept_watcher_{this};
  MemberWatcher<Worker, &Worker::ParseArrived> parse_arrived_{this};  // the loop's after-I/O step
  bool nested_ = false;  // inside ServeWhileBusy: reads are parsed at once
  Timer idle_timer_;
  Timer housekeeping_timer_;

  // --- worker thread only ---
  std::unordered_map<uint64_t, std::unique_ptr<Connection>> conns_;
  std::vector<std::unique_ptr<Connection>> graveyard_;
  std::vector<Connection*> ready_;
  std::vector<Connection*> ready_swap_;
  std::vector<Connection*> flush_;
  std::vector<Connection*> arrived_;       // read this turn, parsed by ParseArrived
  std::vector<Connection*> arrived_swap_;
  std::vector<uint64_t> deferred_close_;
  std::vector<NewConn> new_batch_;
  std::vector<std::shared_ptr<Fence>> fences_new_;    // arrived in this turn
  std::vector<std::shared_ptr<Fence>> fences_armed_;  // answered at this turn's end
  int64_t turn_now_ns_ = 0;
  bool stop_ = false;
  // FlushTls gathers small output pieces here into one TLS record (made
  // at the first TLS write; its bytes never outlive one Write call).
  std::unique_ptr<char[]> tls_stage_;

  std::atomic<size_t> num_conns_{0};  // relaxed: a gauge for stats and tests
  // Release/acquire: publishes what InitWorker did to the thread in Start().
  std::atomic<bool> initialised_{false};
  // Written by the worker thread only (load + store, no locked add), read
  // relaxed by stats from any thread.
  std::atomic<uint64_t> bytes_read_{0};
  std::atomic<uint64_t> bytes_written_{0};
  // Per-second buffer peaks, slot = monotonic second % kBufferPeakSlots.
  // Written by the worker thread only (housekeeping), read relaxed by INFO.
  std::atomic<uint64_t> peak_in_[limits::kBufferPeakSlots] = {};
  std::atomic<uint64_t> peak_out_[limits::kBufferPeakSlots] = {};
};

}  // namespace trove::net
