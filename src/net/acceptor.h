// Acceptor: the listener thread. An EventLoop whose IoWatchers are the
// listening sockets: accepts, applies the connection limit, and hands sockets
// to workers round-robin. Runs on its own thread; Start/Stop on the server's.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/non_copyable.h"
#include "common/status.h"
#include "net/event_loop.h"
#include "net/socket.h"
#include "net/worker.h"

namespace trove::net {

// A listener's TLS: the context holder its connections take their context
// from at accept (it must outlive the server), and the verify override of
// a btls:/mtls: listener.
struct ListenerTls {
  TlsContextHolder* holder = nullptr;
  int verify = kTlsVerifyDefault;
  // When set, the verify mode read per accept instead (Redis's
  // tls-auth-clients, changed by CONFIG SET); it must outlive the server.
  const std::atomic<int>* verify_live = nullptr;
};

// One listening socket and the protocol its connections speak.
struct BoundListener {
  Listener listener;
  ProtocolFactory* factory = nullptr;
  // Written to a connection refused by the limit before closing it
  // (memcached's "ERROR Too many open connections\r\n").
  std::string reject_reply;
  PortLimit* own_limit = nullptr;  // null: the server-wide limit (-c)
  AcceptGate* gate = nullptr;      // null: every peer is admitted
  ListenerTls tls;                 // holder null: plain TCP
  // listener.name, shared by the connections it accepts (set by AddListener):
  // one string per listener, not one per connection.
  std::shared_ptr<const std::string> shared_name;
};

struct AcceptorOptions {
  size_t max_connections = 1024;  // -c
  // memcached's maxconns_fast: over the limit, refuse with reject_reply and
  // close. Off: leave new connections in the backlog until one closes.
  bool reject_when_full = true;
  NetCounters* counters = nullptr;
  const Clock* clock = nullptr;  // nullptr = SystemClock::Default()
  std::vector<Worker*> workers;  // at least one
};

// The listener thread (docs/resp_modes.md section 3, "Admission"): accept, set
// TCP_NODELAY, check the limit before anything else, mint an id, pick the
// worker id % workers (round-robin, and it lets any thread find the owner of
// an id without a table), send the socket over the worker's channel.
//
// It runs a net::EventLoop like the workers: every listening socket is an
// IoWatcher. When it must stop accepting (full without reject_when_full, or
// out of file descriptors) it stops watching its listeners, so the
// level-triggered loop does not spin on their pending connections, which
// wait in the kernel's backlog. ReleaseSlot (a worker closed a connection)
// and SetMaxConnections re-arm it through one posted task; out of fds, a
// kAcceptRetryMs timer also re-arms it. Nothing polls or sleeps.
//
// Thread safety: Start/Stop from the server thread; SetMaxConnections and
// ReleaseSlot from any thread; everything else on the acceptor thread, which
// owns the listening sockets until Stop returns.
//
// Invariants:
//  1. Connection ids are unique and increase; the owner of id is
//     workers[id % workers.size()].
//  2. counters->curr_connections counts a socket from the moment it is
//     accepted under the limit until ReleaseSlot gives it back.
//  3. Paused (paused_ true), no listener is registered with the loop; a
//     slot freed or a limit raised while paused always leads to a re-check
//     on the acceptor thread (ReleaseSlot's comment says why none is lost).
//  4. At most one wake-up task is queued at a time (wake_posted_).
class Acceptor : NonCopyable {
 public:
  explicit Acceptor(const AcceptorOptions& opts);
  ~Acceptor();

  // Takes ownership of the listeners' fds (closed by Stop). Before Start.
  void AddListener(BoundListener l);
  Status Start();
  // Stops accepting, closes the listening sockets, joins the thread.
  void Stop();

  // CONFIG SET maxclients: the limit for connections accepted from now on
  // (any thread; existing connections stay). A raised limit re-arms a
  // paused acceptor.
  void SetMaxConnections(size_t n);
  size_t max_connections() const { return max_connections_.load(std::memory_order_relaxed); }

  // A connection counted by invariant 2 has closed: decrements
  // counters->curr_connections and, if accepting is paused, wakes the
  // acceptor to look again (any thread; the workers call it from Close).
  void ReleaseSlot();

  // True while the listeners are not watched (tests, stats; any thread).
  bool paused() const { return paused_.load(std::memory_order_relaxed); }

  // The worker that owns connection `id`.
  static size_t WorkerIndexFor(uint64_t id, size_t num_workers) { return id % num_workers; }

 private:
  class ListenWatcher;
  enum class Pause { kNone, kFull, kNoFds };

  void Run();
  void OnReadable(const BoundListener& l);
  // Accepts until the backlog is empty; anything but kNone means accepting
  // must pause.
  Pause AcceptFrom(const BoundListener& l);
  bool HasRoom() const;
  // Acceptor thread: stop watching the listeners (invariant 3).
  void PauseAccepting(Pause why);
  // Acceptor thread: watch the listeners again if the reason has gone.
  void TryResume();
  // Any thread: queue one TryResume on the acceptor thread if paused.
  void Wake();

  AcceptorOptions opts_;
  EventLoop loop_;
  std::vector<std::unique_ptr<ListenWatcher>> listeners_;
  Timer retry_timer_;  // out of fds: try again after kAcceptRetryMs
  std::thread thread_;
  std::atomic<size_t> max_connections_;  // relaxed: a limit, read per accept
  // seq_cst, both: with curr_connections' seq_cst decrement in ReleaseSlot
  // they form a Dekker pair, so a slot freed while the acceptor pauses is
  // seen by one side or the other (see ReleaseSlot).
  std::atomic<bool> paused_{false};
  std::atomic<bool> wake_posted_{false};

  // --- acceptor thread only ---
  uint64_t next_id_ = 0;
  bool stop_ = false;
  Pause pause_ = Pause::kNone;
  int64_t paused_since_ns_ = 0;
};

}  // namespace trove::net
