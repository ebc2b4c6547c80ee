// The seam between net/ and the protocols: a worker feeds each connection's
// bytes to its ProtocolHandler and writes what it appended. A handler belongs
// to its connection's worker thread only.
#pragma once

#include <atomic>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "net/io_buffer.h"

namespace trove::net {

class EventLoop;
class WorkerGroup;
class ProtocolHandler;

// What a handler may ask of its own connection and worker: suspend and resume
// parsing, out-of-band output, the loop's timers, the other workers.
// Implemented by net::Connection and valid for the handler's whole life.
// Thread safety: the connection's worker thread only.
class ConnControl {
 public:
  virtual ~ConnControl() = default;
  virtual uint64_t id() const = 0;
  virtual int worker_id() const = 0;
  virtual EventLoop& loop() = 0;
  virtual WorkerGroup& group() = 0;
  // Stops parsing this connection's input; bytes already received and later
  // ones stay buffered (the socket is still watched, so a hang-up closes
  // it). Called from inside OnData, OnData returns what it consumed so far.
  virtual void Suspend() = 0;
  // Parses the buffered input again later in this loop turn (before replies
  // are written), continuing with the next pipelined request in order.
  virtual void Resume() = 0;
  virtual bool suspended() const = 0;
  // Out-of-band output (a pushed message, a reply that finished elsewhere):
  // append to output(), then call OutputAdded(); it goes out in the same
  // end-of-turn sendmsg as ordinary replies.
  virtual OutputBuffer& output() = 0;
  virtual void OutputAdded() = 0;
  // Closes the connection at the worker's next safe point, after writing
  // what is queued (without waiting for a slow reader).
  virtual void CloseSoon() = 0;
  // Nanoseconds since this connection's last input (Redis's `timeout`).
  virtual int64_t IdleNs() const = 0;
  // When the kernel received the input read last (CLOCK_REALTIME ns, from
  // SO_TIMESTAMPNS), on ports whose factory asks for arrival stamps; else 0.
  // Orders clients of different workers by arrival (RESP's blocked clients).
  virtual int64_t ArrivalNs() const { return 0; }
  // From inside this connection's OnData, while a long call holds the
  // worker (a RESP script past busy-reply-threshold): reads and answers the
  // worker's other connections whose handler ServesWhileBusy, once, and
  // writes their replies at once. Nothing else of the loop runs (timers,
  // tasks, new connections, other protocols' input wait for the next turn).
  virtual void ServeOthersWhileBusy() {}
};

// What a protocol may ask of the server (implemented in server/, thread-safe).
class ServerServices {
 public:
  virtual ~ServerServices() = default;
  // "stats": process-level lines (pid, uptime, time, version, pointer_size,
  // rusage_user/system, curr_connections, total_connections,
  // rejected_connections, connection_structures, threads, ...).
  virtual std::vector<std::pair<std::string, std::string>> ServerStats() = 0;
  // "stats settings": the server's part (port, maxconns, num_threads, ...).
  virtual std::vector<std::pair<std::string, std::string>> SettingsStats() = 0;
  // "stats conns": one entry per open connection: (id, addr, state, secs_since_last_cmd).
  struct ConnInfo {
    uint64_t id;
    int fd = -1;  // memcached keys `stats conns` by file descriptor
    std::string addr;
    std::string listen_addr;
    std::string state;
    int64_t secs_since_last_cmd;
  };
  virtual std::vector<ConnInfo> Connections() = 0;
  // The listening sockets (state conn_listening; UDP ones conn_read), which
  // memcached's `stats conns` lists with the clients. Thread-safe.
  virtual std::vector<ConnInfo> ListeningSockets() const { return {}; }
  // "shutdown" (only when enabled with -A; the protocol checks ShutdownEnabled).
  virtual bool ShutdownEnabled() const = 0;
  virtual void RequestShutdown() = 0;
  // "verbosity N".
  virtual void SetVerbosity(int v) = 0;
  // Closes another connection by id (CLIENT KILL); false if none.
  virtual bool CloseConnection(uint64_t id) = 0;
  // The connection limit (-c, RESP maxclients); 0 when unknown (tests).
  virtual int64_t MaxConnections() const { return 0; }
  // Changes it for new connections; false when this server cannot.
  // `stats <sub>` groups of other parts of the server (`stats proxy`,
  // `proxybe`, `proxyfuncs`): false when `sub` is none of them.
  virtual bool SubStats(std::string_view sub, std::vector<std::pair<std::string, std::string>>* out) {
    (void)sub;
    (void)out;
    return false;
  }
  virtual bool SetMaxConnections(int64_t n) {
    (void)n;
    return false;
  }
  // memcached's refresh_certs: reloads the memcached port's certificate,
  // key and CA files for new connections; false with *err (memcached's
  // words) when TLS is off or a file does not load.
  virtual bool RefreshCerts(std::string* err) {
    *err = "Error TLS not enabled";
    return false;
  }
};

// Per-connection facts a handler may read.
struct ConnInfoView {
  uint64_t id = 0;
  int worker_id = 0;
  int fd = -1;  // memcached's cfd= in watch lines
  bool is_unix = false;
  std::string peer;                // "ip:port" or unix path
  ConnControl* control = nullptr;  // the connection itself; see ConnControl
  bool privileged = false;         // accepted on the admin port (PortLimit::privileged)
  // TLS: the connection is encrypted; the client certificate was verified
  // and its subject CN (empty without a verified certificate).
  bool tls = false;
  bool tls_verified = false;
  std::string tls_peer_cn;
};

// One connection as CLIENT LIST shows it (Redis 7.2's fields). net/ fills the
// socket's part, the handler the protocol's (DescribeClient).
struct ClientInfo {
  // net/
  uint64_t id = 0;
  std::string addr;   // peer "ip:port"
  std::string laddr;  // local "ip:port"
  int fd = -1;
  int64_t age_s = 0;
  int64_t idle_s = 0;
  uint64_t qbuf = 0, qbuf_free = 0;  // unparsed input, and the room after it
  uint64_t rbs = 0;                  // the input buffer's size
  uint64_t obl = 0, oll = 0, omem = 0;
  uint64_t tot_mem = 0;
  std::string events;  // "r", "w", "rw"
  // the handler (defaults describe a connection of no RESP state)
  bool resp = false;  // a RESP session (CLIENT LIST shows only these)
  std::string name;
  std::string flags = "N";
  int db = 0;
  int64_t sub = 0, psub = 0, ssub = 0, multi = -1, watch = 0;
  uint64_t argv_mem = 0, multi_mem = 0;
  std::string cmd = "NULL";
  std::string user = "default";
  int resp_version = 2;
  std::string lib_name, lib_ver;
  int64_t redir = -1;  // CLIENT TRACKING ... REDIRECT target, -1 when not tracking
};

class ProtocolHandler {
 public:
  virtual ~ProtocolHandler() = default;
  // Fills the protocol's part of *info (CLIENT LIST).
  virtual void DescribeClient(ClientInfo* info) const { (void)info; }
  // Called on the worker every limits::kHousekeepingMs for each open
  // connection, outside OnData: checks that must run without traffic (an
  // output limit's soft-limit time). May close through ConnControl.
  virtual void OnHousekeeping() {}
  // Called on the worker when everything appended to the connection's
  // output has been written (per flush, not per request).
  virtual void OnOutputDrained() {}
  // Parses and executes every complete request in [data, data+len), appending
  // replies to `out`. Returns the bytes consumed; unconsumed bytes are kept
  // and offered again with more data appended.
  virtual size_t OnData(const char* data, size_t len, OutputBuffer& out) = 0;
  // May OnData run nested, inside another connection's OnData on the same
  // worker (ConnControl::ServeOthersWhileBusy)? Such a handler must then
  // answer without touching what the running call holds (RESP answers BUSY).
  virtual bool ServesWhileBusy() const { return false; }
  // True once the connection should close after `out` is flushed (quit, or a
  // framing error after which memcached/Redis close).
  virtual bool WantsClose() const = 0;
  // With WantsClose: the close is for a protocol error (memcached's
  // conn_close reason=error), not the client's quit.
  virtual bool CloseIsError() const { return false; }
  // When a request is incomplete and its total size is known (a large value),
  // the bytes it needs from the start of the unconsumed data; 0 if unknown.
  virtual size_t BytesWanted() const { return 0; }
  // A `watch` connection (memcached): it reads no more commands.
  virtual bool IsWatcher() const { return false; }
  // Waiting on the server, not idle (a blocked BLPOP, a command held by
  // CLIENT PAUSE): -o idle_timeout leaves it alone, as Redis's `timeout`
  // spares blocked clients.
  virtual bool IdleExempt() const { return false; }
};

// Creates handlers for one listening port. Called on the worker that owns the
// new connection.
class ProtocolFactory {
 public:
  virtual ~ProtocolFactory() = default;
  // worker_id in [0, num_workers); the factory keeps per-worker state (stats).
  virtual std::unique_ptr<ProtocolHandler> Create(int worker_id, const ConnInfoView& conn) = 0;
  // Called once on each worker thread before it serves connections.
  virtual void InitWorker(int worker_id) { (void)worker_id; }
  // Its connections record when their input reached the kernel (ArrivalNs),
  // from the first read after *flag is true (relaxed; it never goes back):
  // one recvmsg with a control message in place of recv, and a turn's reads
  // parsed in arrival order. Null: never. A flag lets a protocol pay for it
  // only once it needs it (RESP: from the first blocking command).
  virtual const std::atomic<bool>* ArrivalStampsFlag() const { return nullptr; }
};

}  // namespace trove::net
