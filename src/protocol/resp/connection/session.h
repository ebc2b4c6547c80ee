// Session: the ProtocolHandler of one RESP connection: parses requests,
// dispatches them through the command table, runs MULTI/EXEC. Runs on the
// connection's worker only.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "net/event_loop.h"
#include "net/protocol_handler.h"
#include "protocol/resp/core/client.h"
#include "protocol/resp/core/command.h"
#include "protocol/resp/core/effects.h"
#include "protocol/resp/core/execute.h"
#include "protocol/resp/core/conn_state.h"
#include "protocol/resp/core/key_prefetcher.h"
#include "protocol/resp/services/output_limits.h"
#include "protocol/resp/core/resp_parser.h"
#include "protocol/resp/core/resp_server.h"

namespace trove::net {
class Connection;
}

namespace trove::resp {

// Thread safety: owned by one worker (the connection's); no locking of its
// own. Engine access goes through KeyLockSet per command (or per EXEC).
// Invariants:
//  1. At most one KeyLockSet is alive on this thread while a command runs.
//  2. After a protocol error nothing more is parsed and WantsClose() is true.
//  3. Once a command suspends the connection (its answer comes from another
//     worker or a later event), OnData returns at once; that reply is
//     written before any later request's.

// How a connection that began without a Session was admitted (LazySession,
// lazy_session.h): the default user's state when it was accepted, and that
// its client registration is already done. Null for a Session made at accept.
struct SessionStart {
  uint64_t acl_epoch = 0;     // AclStore::epoch() at accept
  bool default_open = true;   // AclStore::default_open() at accept
};

class Session final : public net::ProtocolHandler, public Client {
 public:
  // start: see SessionStart; with it, the connection's registration
  // (connected_clients, total_connections, live_clients) belongs to its
  // owner, not to this Session.
  Session(RespServer* server, int worker_id, const net::ConnInfoView& conn,
          const SessionStart* start = nullptr);
  ~Session() override;
  // A connection's registration as a client, done once per connection
  // whether or not it ever gets a Session (Session's constructor and
  // destructor, or LazySession's).
  static void Register(RespServer* server, WorkerStats* stats, uint64_t id);
  static void Unregister(RespServer* server, WorkerStats* stats, uint64_t id);

  size_t OnData(const char* data, size_t len, net::OutputBuffer& out) override;
  bool WantsClose() const override { return close_; }
  // Answers nested while a script on this worker is busy (BUSY, bar the
  // commands Redis allows then; services/busy_scripts.h).
  bool ServesWhileBusy() const override { return true; }
  size_t BytesWanted() const override { return parser_.bytes_wanted(); }
  // CLIENT LIST's protocol fields (client_info.cc).
  void DescribeClient(net::ClientInfo* info) const override;
  // The output limit checked without traffic (session_output.cc).
  void OnHousekeeping() override;

  // Runs one command (argv[0] is the name) writing its reply.
  void Execute(std::span<const std::string_view> argv, RespWriter* w);
  // While a script is busy (busy_scripts.h): true after answering BUSY (or
  // EXECABORT) to a command that must wait for it: every command but the
  // few Redis allows on the script's own worker; on other workers, those
  // that need a stripe the script holds.
  bool RefusedWhileBusy(const CommandSpec& spec, int slot, std::span<const std::string_view> argv,
                        RespWriter* w);

  ConnState& conn() { return conn_; }
  // ACL (session_acl.cc). Back to the default user (new connection, RESET).
  void ResetToDefaultUser();
  // After an ACL change, on this connection's worker: re-reads its user;
  // true when the connection must close (its user was deleted or disabled,
  // or it holds a subscription its user may no longer make).
  bool AclRevoked() override;
  // This connection's CLIENT LIST line, without the newline (ACL LOG).
  std::string ClientInfoLine() override;
  // tls-auth-clients-user CN: the connection becomes the user its verified
  // certificate's CN names, if it exists and is on; else an ACL LOG entry.
  void AuthenticateByCertificate(const std::string& cn);
  RespServer* server() { return server_; }
  int worker_id() const { return worker_id_; }
  // The connection (null when tests drive OnData directly).
  net::ConnControl* control() override { return control_; }

  // EXEC (session_exec.cc; MULTI, DISCARD, WATCH: commands/transactions.cc).
  void Exec(CommandContext& ctx) override;

  // Pub/sub (services/pubsub.h). Subscribe/Unsubscribe keep this connection's
  // PubSubState and the server's PubSubHub in step (hub invariant 1).
  void Subscribe(PubSubState::Kind k, std::string_view name) override {
    server_->pubsub().Subscribe(conn_.pubsub(), conn_.identity().id(), stats_->pubsub_clients, k,
                                name);
  }
  void Unsubscribe(PubSubState::Kind k, std::string_view name) override {
    server_->pubsub().Unsubscribe(conn_.pubsub(), conn_.identity().id(), stats_->pubsub_clients, k,
                                  name);
  }
  void UnsubscribeAll() override {
    server_->pubsub().UnsubscribeAll(conn_.pubsub(), conn_.identity().id(),
                                     stats_->pubsub_clients);
  }
  // MONITOR: this connection receives every command the server runs
  // (session_monitor.cc). StopMonitor on RESET and close.
  void StartMonitor(CommandContext& ctx) override;
  void StopMonitor() override;
  // The RESP connection conn_id on this worker (and its Connection in *c),
  // or null: not here, not a RESP connection, or closing (unless
  // even_closing). The delivery hooks below start with it.
  static Session* OnThisWorker(uint64_t conn_id, net::Connection** c, bool even_closing = false);
  // The hub's delivery hook: runs on the subscriber's worker, writes the
  // message as a push and enforces the pubsub output limits. Only Sessions
  // ever subscribe, so the connection's handler is a Session.
  static void DeliverPubSub(uint64_t conn_id, const std::shared_ptr<const PublishedMessage>& m,
                            int pattern);

  // client-output-buffer-limit (session_output.cc), for this connection's
  // class: pubsub while it holds a subscription, else normal.
  // True when out's unsent bytes plus `extra` (a reply still being built)
  // are over the limit; advances the soft-limit clock.
  bool OutputOverLimit(const net::OutputBuffer& out, size_t extra) override;
  // Drops out's unsent bytes, counts the disconnection and closes the
  // connection without sending anything more (Redis frees such a client).
  // Nothing is parsed after it; commands already running finish (EXEC).
  void KillForOutputLimit(net::OutputBuffer& out) override;
  // Both: true when the connection was killed.
  // Closes the connection if its unsent output is over its class's limit.
  // The common case (below every class's lowest limit, no soft limit being
  // timed) is a compare, inlined into Session::OnData (session.cc).
  bool EnforceOutputLimit(net::OutputBuffer& out);
  bool EnforceOutputLimitSlow(net::OutputBuffer& out);
  bool obuf_killed() const { return obuf_.killed(); }

  // A command's side effects (core/effects.h) are appended to fx_ while its
  // stripes are held and carried out by DrainEffects after they are released
  // (an EXEC's, after the whole transaction): publishing key events,
  // invalidating tracked keys (every invalidation follows the reply of the
  // command that caused it) and serving blocked clients post to other
  // workers, which may be waiting for those stripes.

  // CLIENT TRACKING OFF, RESET and close: leaves the server's table.
  void DisableTracking() override {
    server_->tracking().Disable(conn_.tracking(), conn_.identity().id());
  }
  // On the tracking client's worker: one invalidation for it (its mode and
  // redirect are applied here), or, redirected, for the target to write.
  static void DeliverTracking(uint64_t conn_id, const std::shared_ptr<const TrackingMessage>& m);
  static void DeliverRedirected(uint64_t conn_id, const std::shared_ptr<const TrackingMessage>& m);

  // Blocking commands: this connection's half (session_block.cc over
  // conn_.blocked(); the writer's half is services/blocked_serve.h).
  // Blocks this connection in ctx's command, with its stripes still held:
  // registers the waiter, suspends, arms the time-out (0: none). wait_idx are
  // the argv indexes of the keys it waits on.
  void Block(CommandContext& ctx, int64_t timeout_ms, std::span<const size_t> wait_idx) override;
  bool blocked() const { return conn_.blocked().blocked(); }
  // The reply for block `token` (served, timed out or unblocked elsewhere),
  // from DeliverBlockedReply on this worker; ends the block. A stale token
  // (the block already ended) is dropped.
  void TakeBlockedReply(uint64_t token, std::string reply);
  // The worker's -o idle_timeout check leaves RESP sessions alone: they
  // follow Redis's `timeout` (RespServer::timeout_s) in OnHousekeeping.
  bool IdleExempt() const override { return true; }
  // Redis's clientsCronHandleTimeout exemptions: blocked (also held by
  // CLIENT PAUSE), subscribed, MONITOR.
  bool TimeoutExempt() const {
    return conn_.blocked().blocked() || pause_waiting_ || conn_.in_pubsub() || monitor_id_ != 0;
  }
 private:
  // Runs a known command after the arity/auth/queue checks, taking the key
  // stripes unless already held. `slot` is its HistogramSlots slot.
  void Run(const CommandSpec& spec, int slot, std::span<const std::string_view> argv,
           RespWriter* w, bool locked, bool in_exec);

  // AclRevoked at the next command after an ACL change; false (and the
  // connection closing) when revoked.
  bool RefreshAclUser();
  // The NOPERM check of a call by a restricted user: on denial writes the
  // error (the EXEC form inside EXEC), logs it to ACL LOG, counts it.
  bool AclAllows(const CommandSpec& spec, int slot, std::span<const std::string_view> argv,
                 RespWriter* w, bool in_exec);
  // The user's rate limits (session_acl.cc): takes `cmds` commands and
  // `bytes` request bytes from the lease or the user's buckets; on refusal
  // writes Redis-style "ERR rate limit exceeded: ..." and consumes nothing.
  bool RateAllows(uint64_t cmds, uint64_t bytes, RespWriter* w);
  void ReleaseLease();

  // Carries out fx_ (core/effects.h) with no stripe held: key events,
  // then invalidations made by client `modifier` (NOLOOP), then the blocked
  // clients of the ready keys.
  void DrainEffects(uint64_t modifier);
  // Sends the queued invalidations, made by client `modifier` (NOLOOP).
  void FlushInvalidations(uint64_t modifier) {
    server_->tracking().InvalidateEngineKeys(&fx_.invalidations, modifier);
  }
  // After a read-only command: remembers its keys in default mode (OPTIN and
  // OPTOUT as CLIENT CACHING says); then forgets CLIENT CACHING unless this
  // command keeps it (CLIENT itself, or inside MULTI ... EXEC). A script
  // (EVAL, FCALL) counts as a read when it called a read-only command
  // (script_read): its declared keys are remembered, as Redis does.
  void TrackAfterCommand(const CommandSpec& spec, std::span<const std::string_view> argv,
                         bool in_exec, bool script = false, bool script_read = false);
  // Writes message m for this connection as a push (RESP3) or, when it is a
  // redirect target in RESP2 pub/sub mode, as a __redis__:invalidate message.
  void WriteInvalidation(net::Connection* c, const TrackingMessage& m, bool redirected);
  // Serves the blocked clients of fx_.ready_keys (services/blocked_serve.h):
  // at once with one worker; else after an input fence (FenceThenServe).
  void ServeBlocked();
  // Suspends this connection, moves the ready keys aside and serves them
  // once every worker has read what reached it before this write
  // (net::WorkerGroup::Fence; block_registry.h, step 2).
  void FenceThenServe();
  void AfterFence();
  void OnBlockTimeout();
  // CLIENT PAUSE (session_pause.cc): true if argv must wait for the pause to
  // end (Redis's rules: every command under ALL, writes and may-replicate
  // ones under WRITE, arity and auth errors answered at once).
  bool PauseHolds(std::span<const std::string_view> argv);
  // Suspends without consuming the command; it is parsed again on resume.
  void PostponeForPause();
  void LeavePause();
  // Counts the blocked command once (commandstats, MONITOR, SLOWLOG) and
  // lets the connection go on with its pipelined input.
  void EndBlock();

  RespServer* server_;
  net::ConnControl* control_;
  int worker_id_;
  engine::ThreadStats* ts_;
  WorkerStats* stats_;
  ConnState conn_;
  RespParser parser_;
  // Reused per command so the hot path allocates nothing (moved out while in
  // use, so a nested Run simply starts with empty ones).
  Effects fx_;  // this connection's commands' effects, not yet carried out
  bool close_ = false;
  uint64_t monitor_id_ = 0;  // LogHub watcher id while MONITOR is on
  // While OnData executes a command: the unparsed input from that command's
  // first byte on (CLIENT LIST qbuf=; its argv-mem= is parser_.args()).
  size_t cur_qbuf_ = 0;
  // Replies dropped under CLIENT REPLY OFF/SKIP; made on first use.
  std::unique_ptr<net::OutputBuffer> dropped_;
  ConnOutputLimit obuf_;          // this connection against its output limit
  // Under CLIENT REPLY OFF/SKIP, the real writer: pub/sub confirmations go
  // through it (Redis's CLIENT_PUSHING). Null while replies are on.
  RespWriter* push_w_ = nullptr;
  int64_t cmd_clock_ns_ = 0;  // end of the last command (commandstats usec)
  int cur_slot_ = -1;  // the running command's histogram slot (Run)
  // Made on first use: most connections never block or wait out a pause,
  // and a timer is 64 bytes (an idle connection's memory, issue 42).
  std::unique_ptr<net::Timer> block_timer_;
  bool pause_waiting_ = false;  // in its worker's paused_conns
  const bool admin_;            // on the admin port: never rate-limited
  const bool registered_;       // made without a SessionStart: Register'd itself
  std::unique_ptr<net::Timer> pause_timer_;  // see block_timer_
};

}  // namespace trove::resp
