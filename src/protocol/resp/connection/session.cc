// Session: parse, dispatch and MULTI/EXEC for one RESP connection; runs on
// the connection's worker.
#include "protocol/resp/connection/session.h"

#include <optional>

#include "net/connection.h"
#include "net/worker.h"

#include "protocol/resp/types/collections.h"
#include "protocol/resp/core/command_table.h"
#include "protocol/resp/types/keyspace.h"
#include "protocol/resp/services/blocked_serve.h"
#include "protocol/resp/services/latency_histogram.h"
#include "protocol/resp/commands/server_commands.h"
#include "protocol/resp/connection/lazy_session.h"

namespace trove::resp {

Session::Session(RespServer* server, int worker_id, const net::ConnInfoView& conn,
                 const SessionStart* start)
    : server_(server),
      control_(conn.control),
      worker_id_(worker_id),
      ts_(server->ThreadStatsFor(worker_id)),
      stats_(server->StatsFor(worker_id)),
      admin_(conn.privileged),
      registered_(start == nullptr) {
  uint64_t id =
      conn.id != 0
          ? conn.id
          : static_cast<uint64_t>(server->next_client_id.fetch_add(1, std::memory_order_relaxed));
  conn_.identity().Init(id, conn.peer);
  if (start == nullptr) {
    ResetToDefaultUser();
  } else {
    // The default user as it was when the connection was accepted: a
    // password set since then does not log it out (as in Redis); the old
    // epoch makes the next command re-read the user's rules.
    conn_.identity().Deauthenticate(server->acl().Get("default"), start->acl_epoch,
                                    start->default_open);
  }
  // tls-auth-clients-user CN: a verified certificate names the user (made
  // after the handshake, so the certificate is known here).
  if (conn.tls_verified && !conn.tls_peer_cn.empty() && server->tls().auth_user_cn())
    AuthenticateByCertificate(conn.tls_peer_cn);
  conn_.txn().AttachRegistry(&server->watches());
  if (registered_) Register(server, stats_, id);
  parser_.set_max_bulk(
      static_cast<size_t>(server->proto_max_bulk_len.load(std::memory_order_relaxed)));
  cmd_clock_ns_ = server->engine()->clock()->MonoNanos();
}

void Session::Register(RespServer* server, WorkerStats* stats, uint64_t id) {
  server->live_clients().Add(id);
  stats->connected_clients.fetch_add(1, std::memory_order_relaxed);
  stats->total_connections.fetch_add(1, std::memory_order_relaxed);
}

void Session::Unregister(RespServer* server, WorkerStats* stats, uint64_t id) {
  server->live_clients().Remove(id);
  stats->connected_clients.fetch_sub(1, std::memory_order_relaxed);
}

Session* Session::OnThisWorker(uint64_t conn_id, net::Connection** c, bool even_closing) {
  net::Worker* self = net::Worker::Current();
  if (self == nullptr) return nullptr;
  *c = self->Find(conn_id);
  if (*c == nullptr || ((*c)->close_requested && !even_closing)) return nullptr;
  return SessionOfHandler((*c)->handler.get());  // made now if it was not yet
}

Session::~Session() {
  if (conn_.blocked().fencing()) {  // the keys it made ready are served all the same
    fx_.ready_keys = std::move(conn_.blocked().fenced_keys);
    ServeBlocked();
  }
  ReleaseLease();
  if (conn_.tracking().on) DisableTracking();
  if (registered_) Unregister(server_, stats_, conn_.identity().id());
  if (pause_waiting_) LeavePause();
  if (conn_.blocked().blocked())
    (void)server_->blocks().CancelWaiter(conn_.blocked().waiter, Waiter::Cancel::kGone);
  UnsubscribeAll();
  StopMonitor();
  conn_.txn().Unwatch();
}

bool Session::EnforceOutputLimit(net::OutputBuffer& out) {
  if (!obuf_.MayBeOver(out.pending_bytes(), server_->obuf_limits())) return false;
  return EnforceOutputLimitSlow(out);
}

size_t Session::OnData(const char* data, size_t len, net::OutputBuffer& out) {
  RespWriter w(&out, conn_.identity().proto());
  w.set_error_sink(stats_);
  size_t used = 0;
  KeyPrefetcher::Reset(this);
  cmd_clock_ns_ = server_->engine()->clock()->MonoNanos();
  while (!close_ && used < len) {
    parser_.set_unauthenticated(!conn_.identity().authenticated());
    ParseStatus st = parser_.Parse(data + used, len - used);
    if (st == ParseStatus::kNeedMore) break;
    if (st == ParseStatus::kError) {
      std::string msg = "ERR ";
      msg += parser_.error();
      w.Error(msg);
      close_ = true;
      return len;
    }
    // The parser's args vector stays valid until the next Parse, which
    // happens only after Execute returns.
    const std::vector<std::string_view>& argv = parser_.args();
    size_t consumed = parser_.consumed();
    if (server_->pause().maybe() || pause_waiting_) {
      if (!argv.empty() && PauseHolds(argv)) {
        PostponeForPause();  // not consumed: parsed again when the pause ends
        break;
      }
      if (pause_waiting_) LeavePause();
    }
    if (!argv.empty()) {
      KeyPrefetcher::Before(this, server_->engine(), conn_.identity().db(), data, len,
                            used + consumed);
      Identity& id = conn_.identity();
      cur_qbuf_ = len - used;
      // CLIENT REPLY OFF / SKIP: the command runs, its reply is dropped.
      // kSkip was left by a CLIENT REPLY SKIP before this command.
      if (id.reply_mode() == Identity::Reply::kSkip) id.SetReplyMode(Identity::Reply::kSkipping);
      if (id.reply_mode() == Identity::Reply::kOn) {
        w.set_proto(id.proto());
        Execute(argv, &w);
      } else {
        if (dropped_ == nullptr) dropped_ = std::make_unique<net::OutputBuffer>();
        RespWriter dw(dropped_.get(), id.proto());
        dw.set_error_sink(stats_);
        w.set_proto(id.proto());
        push_w_ = &w;
        Execute(argv, &dw);
        push_w_ = nullptr;
        // CLIENT REPLY ON answers +OK although replies were off (or this
        // reply skipped) before it.
        if (id.reply_mode() == Identity::Reply::kOn) out.AppendCopyOf(*dropped_);
        dropped_->Clear();
      }
      // Skipped and left as it was: replies are on again (a SKIP, ON or OFF
      // run by this command stays).
      if (id.reply_mode() == Identity::Reply::kSkipping) id.SetReplyMode(Identity::Reply::kOn);
    }
    used += consumed;
    // client-output-buffer-limit, once per command (a pipeline stops at the
    // limit; an EXEC runs whole before this): relaxed loads and compares only.
    if (EnforceOutputLimit(out)) {
      used = len;  // the rest is never parsed: the connection is closing
      break;
    }
    if (control_ != nullptr && control_->suspended()) break;  // invariant 3
  }
  // A command suspended for a cross-worker answer (CLIENT LIST) still runs
  // (and its argv is still counted: client_info.cc).
  if (control_ == nullptr || !control_->suspended()) {
    cur_qbuf_ = 0;
    parser_.ReleaseIdle();  // an idle connection holds no request buffers
  }
  stats_->net_input_bytes.fetch_add(used, std::memory_order_relaxed);
  // client-query-buffer-limit: a client whose unparsed input passed it is
  // closed, as Redis closes it (no reply).
  if (!close_ && len - used >
                     static_cast<size_t>(
                         server_->client_query_buffer_limit.load(std::memory_order_relaxed))) {
    close_ = true;
    return len;
  }
  return used;
}

namespace {
void UnknownCommand(RespWriter* w, std::span<const std::string_view> argv) {
  std::string m = "ERR unknown command '";
  m.append(argv[0].substr(0, 128));
  m += "', with args beginning with: ";
  for (size_t i = 1; i < argv.size() && m.size() < 128 + 60; ++i) {
    m += "'";
    m.append(argv[i].substr(0, 128));
    m += "' ";
  }
  w->Error(m);
}
}  // namespace

void Session::Execute(std::span<const std::string_view> argv, RespWriter* w) {
  const CommandSpec* spec = CommandTable::Get().Find(argv[0]);
  TransactionState& txn = conn_.txn();
  if (spec == nullptr) {
    UnknownCommand(w, argv);
    txn.MarkDirty();
    return;
  }
  // The histogram slot names the command (or a container's subcommand) for
  // CLIENT LIST's cmd= ("client|list", as Redis), the subscribed-mode error
  // and, through Run, LATENCY HISTOGRAM: looked up once per command.
  const HistogramSlots& slots = HistogramSlots::Get();
  const int slot = slots.SlotOf(*spec, argv);
  conn_.identity().SetLastCmd(slot >= 0 ? slots.name(static_cast<size_t>(slot)).c_str()
                                        : spec->name);
  int argc = static_cast<int>(argv.size());
  if ((spec->arity > 0 && argc != spec->arity) || argc < -spec->arity) {
    // Redis reports a rejected EXEC as the transaction's abort.
    bool exec = std::string_view(spec->name) == "exec";
    std::string m = exec ? "EXECABORT Transaction discarded because of: " : "ERR ";
    m += "wrong number of arguments for '";
    m += spec->name;
    m += "' command";
    w->Error(m);
    if (exec) txn.End();
    txn.MarkDirty();
    return;
  }
  Identity& who = conn_.identity();
  if (who.acl_epoch() != server_->acl().epoch() && !RefreshAclUser()) return;
  if (!who.authenticated() && (spec->flags & kCmdNoAuth) == 0) {
    w->Error("NOAUTH Authentication required.");
    txn.MarkDirty();
    return;
  }
  if (!who.unrestricted() && !AclAllows(*spec, slot, argv, w, /*in_exec=*/false)) {
    txn.MarkDirty();
    return;
  }
  // Rate limits: checked before the command runs; queued commands are
  // charged at EXEC as one batch; AUTH HELLO PING QUIT RESET and MULTI /
  // EXEC / DISCARD themselves are never charged.
  if (who.rate_limited() && !admin_ && !txn.active() && (spec->flags & kCmdRateExempt) == 0) {
    uint64_t bytes = 0;
    for (std::string_view a : argv) bytes += a.size();
    if (!RateAllows(1, bytes, w)) return;
  }
  if (conn_.in_pubsub() && conn_.identity().proto() == 2 && (spec->flags & kCmdPubsubOk) == 0) {
    // Redis names the command by its full name ("pubsub|numsub"); an
    // unknown subcommand never gets here in Redis (lookup rejects it first).
    if (slot < 0) {
      CommandContext ctx;
      ctx.w = w;
      ctx.argv = argv;
      ctx.spec = spec;
      UnknownSubcommand(ctx);
      txn.MarkDirty();
      return;
    }
    std::string m = "ERR Can't execute '";
    m += slots.name(static_cast<size_t>(slot));
    m += "': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this "
         "context";
    w->Error(m);
    txn.MarkDirty();
    return;
  }
  // maxmemory: lowered below the memory in use (CONFIG SET maxmemory),
  // commands that may grow the data are refused, queued ones too (EXEC then
  // aborts), as Redis refuses them over its maxmemory. One relaxed load.
  if ((spec->flags & kCmdDenyOom) != 0 && server_->engine()->over_mem_limit()) {
    w->Error("OOM command not allowed when used memory > 'maxmemory'.");
    txn.MarkDirty();
    return;
  }
  if (server_->busy_scripts().any() && RefusedWhileBusy(*spec, slot, argv, w)) {
    txn.MarkDirty();
    return;
  }
  if (txn.active() && (spec->flags & kCmdNoQueue) == 0) {
    if (spec->flags & kCmdNoMulti) {
      w->Error("ERR Command not allowed inside a transaction");
      txn.MarkDirty();
      return;
    }
    std::vector<std::string> copy(argv.begin(), argv.end());
    txn.Queue(std::move(copy));
    w->Simple("QUEUED");
    return;
  }
  Run(*spec, slot, argv, w, /*locked=*/false, /*in_exec=*/false);
}

namespace {

// What a client on a busy script's own worker may still run (Redis's
// allow-busy commands, less WATCH and RESET, which take key stripes the
// script may hold on this very thread). SHUTDOWN only wakes the main
// thread, whose stop kills the script (resp_protocol.h, StopScripts).
bool AllowedWhileBusy(std::string_view name) {
  static constexpr std::string_view kAllowed[] = {
      "auth", "hello", "quit", "multi", "discard", "unwatch",
      "script|kill", "function|kill", "function|stats", "shutdown"};
  for (std::string_view a : kAllowed)
    if (a == name) return true;
  return false;
}

// The stripes of argv's keys (database db) into *out.
void AddStripes(engine::Engine* engine, int db, const CommandSpec& spec,
                std::span<const std::string_view> argv, std::vector<uint32_t>* out) {
  std::vector<size_t> idx;
  CommandTable::KeyIndexes(spec, argv, &idx);
  for (size_t i : idx) out->push_back(engine->KeyStripe(EncodeDbKey(db, argv[i])));
}

}  // namespace

bool Session::RefusedWhileBusy(const CommandSpec& spec, int slot,
                               std::span<const std::string_view> argv, RespWriter* w) {
  const std::string_view name =
      slot >= 0 ? std::string_view(HistogramSlots::Get().name(static_cast<size_t>(slot)))
                : std::string_view(spec.name);
  const bool exec = name == "exec" && conn_.txn().active();
  bool is_eval = true;
  if (const int here = BusyScripts::ThisWorkerBusy(); here != 0) {
    if (AllowedWhileBusy(name)) return false;
    is_eval = here == 1;
  } else if (server_->busy_reply_all.load(std::memory_order_relaxed)) {
    // busy-reply-scope all: every worker answers as Redis does.
    if (control_ == nullptr || AllowedWhileBusy(name) ||
        !server_->busy_scripts().BusyElsewhere(control_->worker_id(), &is_eval))
      return false;
  } else {
    if (control_ == nullptr) return false;
    // Another worker's script: only a command that would wait for one of
    // its stripes waits (a keyspace walk, for any).
    std::vector<uint32_t> stripes;
    const int db = conn_.identity().db();
    const bool global = (spec.flags & kCmdGlobal) != 0;
    if (exec) {
      for (const std::vector<std::string>& q : conn_.txn().queued()) {
        std::vector<std::string_view> qv(q.begin(), q.end());
        const CommandSpec* qs = CommandTable::Get().Find(qv[0]);
        if (qs != nullptr) AddStripes(server_->engine(), db, *qs, qv, &stripes);
      }
    } else if (!global) {
      AddStripes(server_->engine(), db, spec, argv, &stripes);
      if (stripes.empty()) return false;
    }
    if (!server_->busy_scripts().Holds(control_->worker_id(), stripes, global, &is_eval))
      return false;
  }
  std::string m = exec ? "EXECABORT Transaction discarded because of: " : "";
  m += BusyScripts::BusyError(is_eval);
  w->Error(m);
  if (exec) conn_.txn().End();
  return true;
}

void Session::DrainEffects(uint64_t modifier) {
  if (!fx_.key_events.empty()) PublishKeyEvents(server_, &fx_);
  if (!fx_.invalidations.empty()) FlushInvalidations(modifier);
  if (!fx_.ready_keys.empty()) {
    if (control_ != nullptr && control_->group().size() > 1 && server_->blocks().any())
      FenceThenServe();
    else
      ServeBlocked();
  }
}

void Session::Run(const CommandSpec& spec, int slot, std::span<const std::string_view> argv,
                  RespWriter* w,
                  bool locked, bool in_exec) {
  CommandContext ctx;
  ctx.Bind(server_, stats_, ts_, &fx_, &conn_, w, &spec, argv);
  ctx.client = this;
  if (push_w_ != nullptr) ctx.push = push_w_;
  ctx.in_exec = in_exec;
  ctx.no_touch = conn_.identity().no_touch() && std::string_view(spec.name) != "touch";
  ctx.count_keyspace = (spec.flags & kCmdWrite) == 0 || spec.reads_keys;
  std::vector<ScratchEntry> scratch;  // decoded collections, for this command only
  ctx.scratch = &scratch;
  bool write_failed = false;
  ctx.write_failed = &write_failed;
  // Keys the engine evicts while this command runs are invalidated before
  // its reply, as Redis (which evicts before running a command) does: the
  // capture takes them from the KeyEvents reporter, and a tracking client's
  // reply to a command that may allocate is staged so they go out first.
  // Inside EXEC the outer EXEC's capture collects them (after its reply).
  std::optional<Tracking::EvictionCapture> evictions;
  if (!in_exec && !locked && server_->tracking().active()) evictions.emplace();
  const bool stage = spec.stages_reply ||
                     (evictions.has_value() && conn_.tracking().on &&
                      (spec.flags & kCmdDenyOom) != 0 && (spec.flags & kCmdGlobal) == 0);
  std::optional<net::OutputBuffer> staged;
  std::optional<RespWriter> staged_writer;
  if (stage) {
    staged.emplace();
    staged_writer.emplace(&*staged, w->proto());
    staged_writer->set_error_sink(w->error_sink());
    ctx.w = &*staged_writer;
  }
  const uint64_t errors_before = ctx.w->errors();
  // A script is shown to MONITOR before the commands it runs (Redis's order).
  const bool script = (spec.flags & kCmdMovableKeys) != 0;
  if (script) server_->FeedMonitorsIfWatched(spec, argv, conn_.identity());
  // One clock read per command: a command's start is the previous one's end
  // (or the start of the input batch), so parse time counts toward it.
  const Clock* clock = server_->engine()->clock();
  int64_t t0 = cmd_clock_ns_;
  cur_slot_ = slot;
  ctx.notify = server_->key_events().enabled();
  ctx.locked = locked;
  {
    ExecBuffersLease buf;  // a nested Run borrows another
    ExecuteCommand(ctx, buf.get());
  }
  if (evictions.has_value()) {  // no stripe held now
    std::vector<std::string> evicted = evictions->Take();
    evictions.reset();
    if (!evicted.empty()) server_->tracking().InvalidateEvicted(evicted, conn_.identity().id());
  }
  if (stage) {
    if (write_failed)
      w->Error("OOM command not allowed when used memory > 'maxmemory'.");
    else
      w->out()->AppendCopyOf(*staged);
  }
  if (conn_.tracking().on) TrackAfterCommand(spec, argv, in_exec, script, ctx.script_read);
  // An EXEC's queued commands leave theirs for the EXEC's own Run to drain.
  if (!in_exec) {
    if (fx_.has_keyspace_effects()) DrainEffects(conn_.identity().id());  // no stripe held now
    if (fx_.close_caller) {
      fx_.close_caller = false;
      close_ = true;
      // Gone for tracking redirects from now on (~Session removes it again):
      // QUIT's reply may reach the client, and its next command on another
      // connection invalidate a key, before this worker closes the socket.
      server_->live_clients().Remove(conn_.identity().id());
    }
  }
  int64_t t1 = clock->MonoNanos();
  cmd_clock_ns_ = t1;
  if (conn_.blocked().just_blocked) {  // counted once, when it ends (EndBlock); shown to MONITOR now
    conn_.blocked().just_blocked = false;
    server_->FeedMonitorsIfWatched(spec, argv, conn_.identity());
    return;
  }
  CommandCounters& c = stats_->cmds[static_cast<size_t>(spec.id)];
  c.calls.fetch_add(1, std::memory_order_relaxed);
  c.usec.fetch_add(static_cast<uint64_t>((t1 - t0) / 1000), std::memory_order_relaxed);
  // Redis's failed_calls: the command ran and replied with an error.
  if (write_failed || ctx.w->errors() != errors_before)
    c.failed.fetch_add(1, std::memory_order_relaxed);
  stats_->total_commands.fetch_add(1, std::memory_order_relaxed);
  // Redis's dirty counter: the handler's count, else 1 for a write that
  // replied without an error; nothing when the reply became -OOM (a command
  // that blocked counts when it is served, services/blocked_serve.cc).
  uint64_t dirty = 0;
  if (ctx.dirty != CommandContext::kDirtyUnknown)
    dirty = static_cast<uint64_t>(ctx.dirty);
  else if ((spec.flags & kCmdWrite) != 0 && ctx.w->errors() == errors_before)
    dirty = 1;
  if (dirty > 0 && !write_failed) stats_->dirty.fetch_add(dirty, std::memory_order_relaxed);
  server_->RecordCommand(stats_, spec, slot, argv, conn_.identity(), (t1 - t0) / 1000,
                         /*monitored=*/script);
}

}  // namespace trove::resp
