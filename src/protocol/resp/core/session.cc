// Session: parse, dispatch and MULTI/EXEC for one RESP connection; runs on
// the connection's worker.
#include "protocol/resp/core/session.h"

#include <optional>

#include "protocol/resp/types/collections.h"
#include "protocol/resp/core/command_table.h"
#include "protocol/resp/types/keyspace.h"
#include "protocol/resp/services/latency_histogram.h"
#include "protocol/resp/commands/server_commands.h"

namespace trove::resp {

Session::Session(RespServer* server, int worker_id, const net::ConnInfoView& conn)
    : server_(server),
      control_(conn.control),
      worker_id_(worker_id),
      ts_(server->ThreadStatsFor(worker_id)),
      stats_(server->StatsFor(worker_id)),
      admin_(conn.privileged) {
  uint64_t id =
      conn.id != 0
          ? conn.id
          : static_cast<uint64_t>(server->next_client_id.fetch_add(1, std::memory_order_relaxed));
  conn_.identity().Init(id, conn.peer);
  ResetToDefaultUser();
  conn_.txn().AttachRegistry(&server->watches());
  server->live_clients().Add(id);
  parser_.set_max_bulk(
      static_cast<size_t>(server->proto_max_bulk_len.load(std::memory_order_relaxed)));
  created_unix_ = server->engine()->clock()->UnixSeconds();
  cmd_clock_ns_ = server->engine()->clock()->MonoNanos();
  stats_->connected_clients.fetch_add(1, std::memory_order_relaxed);
  stats_->total_connections.fetch_add(1, std::memory_order_relaxed);
}

Session::~Session() {
  ReleaseLease();
  if (conn_.tracking().on) DisableTracking();
  server_->live_clients().Remove(conn_.identity().id());
  if (pause_waiting_) LeavePause();
  if (block_) (void)server_->blocks().CancelWaiter(block_, Waiter::Cancel::kGone);
  UnsubscribeAll();
  StopMonitor();
  conn_.txn().Unwatch();
  stats_->connected_clients.fetch_sub(1, std::memory_order_relaxed);
}

bool Session::EnforceOutputLimit(net::OutputBuffer& out) {
  if (!obuf_killed_ && !obuf_soft_.reached &&
      out.pending_bytes() < server_->obuf_limits().floor()) {
    return false;
  }
  return EnforceOutputLimitSlow(out);
}

size_t Session::OnData(const char* data, size_t len, net::OutputBuffer& out) {
  RespWriter w(&out, conn_.identity().proto());
  size_t used = 0;
  prefetch_.Reset();
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
      prefetch_.Before(server_->engine(), conn_.identity().db(), data, len, used + consumed);
      Identity& id = conn_.identity();
      cur_qbuf_ = len - used;
      // CLIENT REPLY OFF / SKIP: the command runs, its reply is dropped.
      // kSkip was left by a CLIENT REPLY SKIP before this command.
      if (id.reply_mode() == Identity::Reply::kSkip) id.SetReplyMode(Identity::Reply::kSkipping);
      if (id.reply_mode() == Identity::Reply::kOn) {
        w.set_proto(id.proto());
        Execute(argv, &w);
      } else {
        RespWriter dw(&dropped_, id.proto());
        w.set_proto(id.proto());
        push_w_ = &w;
        Execute(argv, &dw);
        push_w_ = nullptr;
        // CLIENT REPLY ON answers +OK although replies were off (or this
        // reply skipped) before it.
        if (id.reply_mode() == Identity::Reply::kOn) out.AppendCopyOf(dropped_);
        dropped_.Clear();
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
  // A command suspended for a cross-worker answer (CLIENT LIST) still runs.
  if (control_ == nullptr || !control_->suspended()) cur_qbuf_ = 0;
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

void Session::Run(const CommandSpec& spec, int slot, std::span<const std::string_view> argv,
                  RespWriter* w,
                  bool locked, bool in_exec) {
  CommandContext ctx;
  ctx.session = this;
  ctx.server = server_;
  ctx.engine = server_->engine();
  ctx.ts = ts_;
  ctx.conn = &conn_;
  ctx.w = w;
  ctx.push = push_w_ != nullptr ? push_w_ : w;
  ctx.argv = argv;
  ctx.spec = &spec;
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
    ctx.w = &*staged_writer;
  }
  const uint64_t errors_before = ctx.w->errors();
  // One clock read per command: a command's start is the previous one's end
  // (or the start of the input batch), so parse time counts toward it.
  const Clock* clock = server_->engine()->clock();
  int64_t t0 = cmd_clock_ns_;
  cur_slot_ = slot;
  ctx.notify = server_->key_events().enabled();
  if (locked && ctx.notify != 0 && (spec.flags & kCmdWrite) != 0) {
    // Inside EXEC: the stripes are held; the keys are needed for the diff.
    std::vector<size_t> idx;
    CommandTable::KeyIndexes(spec, argv, &idx);
    std::vector<std::string> keys;
    std::vector<std::string_view> views;
    for (size_t i : idx) keys.push_back(ctx.Key(i));
    for (const std::string& k : keys) views.push_back(k);
    ctx.locked = true;
    RunLocked(ctx, idx, views);
  } else if (locked || (spec.flags & kCmdGlobal) != 0) {
    ctx.locked = locked;
    spec.fn(ctx);
  } else {
    std::vector<size_t> idx = std::move(idx_buf_);
    CommandTable::KeyIndexes(spec, argv, &idx);
    if (idx.empty()) {
      spec.fn(ctx);
    } else {
      std::vector<std::string> keys = std::move(key_buf_);
      std::vector<std::string_view> views = std::move(view_buf_);
      keys.resize(idx.size());
      views.clear();
      for (size_t j = 0; j < idx.size(); ++j) {
        keys[j] = ctx.Key(idx[j]);
        views.push_back(keys[j]);
      }
      {
        engine::KeyLockSet lock(ctx.engine, views);
        ctx.locked = true;
        if (ctx.notify == 0) {
          spec.fn(ctx);  // the usual case: no notifications, no call
        } else {
          RunLocked(ctx, idx, views);
        }
      }
      key_buf_ = std::move(keys);
      view_buf_ = std::move(views);
    }
    idx_buf_ = std::move(idx);
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
  if (conn_.tracking().on) TrackAfterCommand(spec, argv, in_exec);
  if (!in_exec && !key_events_.empty()) PublishKeyEvents();  // no stripe held now
  if (!in_exec && (!invalidations_.empty() || tracking_flush_)) {
    FlushInvalidations(conn_.identity().id());  // nor here
  }
  if (!in_exec && !ready_keys_.empty()) ServeBlocked();  // nor here
  int64_t t1 = clock->MonoNanos();
  cmd_clock_ns_ = t1;
  if (just_blocked_) {  // counted once, when it ends (EndBlock); shown to MONITOR now
    just_blocked_ = false;
    server_->FeedMonitorsIfWatched(spec, argv, conn_.identity());
    return;
  }
  CommandCounters& c = stats_->cmds[static_cast<size_t>(spec.id)];
  c.calls.fetch_add(1, std::memory_order_relaxed);
  c.usec.fetch_add(static_cast<uint64_t>((t1 - t0) / 1000), std::memory_order_relaxed);
  stats_->total_commands.fetch_add(1, std::memory_order_relaxed);
  // Redis's dirty counter: the handler's count, else 1 for a write that
  // replied without an error; nothing when the reply became -OOM (a command
  // that blocked counts when it is served, ServeOne).
  uint64_t dirty = 0;
  if (ctx.dirty != CommandContext::kDirtyUnknown)
    dirty = static_cast<uint64_t>(ctx.dirty);
  else if ((spec.flags & kCmdWrite) != 0 && ctx.w->errors() == errors_before)
    dirty = 1;
  if (dirty > 0 && !write_failed) stats_->dirty.fetch_add(dirty, std::memory_order_relaxed);
  server_->RecordCommand(stats_, spec, slot, argv, conn_.identity(), (t1 - t0) / 1000);
}

// --- transactions ---

void Session::Exec(CommandContext& ctx) {
  TransactionState& txn = conn_.txn();
  if (!txn.active()) {
    ctx.Error("ERR EXEC without MULTI");
    return;
  }
  if (txn.dirty()) {
    ctx.Error("EXECABORT Transaction discarded because of previous errors.");
    txn.End();
    txn.Unwatch();
    return;
  }
  if (ctx.engine->over_mem_limit()) {
    for (const std::vector<std::string>& q : txn.queued()) {
      const CommandSpec* s = CommandTable::Get().Find(q[0]);
      if (s != nullptr && (s->flags & kCmdDenyOom) != 0) {
        ctx.Error(
            "EXECABORT Transaction discarded because of: OOM command not allowed when used "
            "memory > 'maxmemory'.");
        txn.End();
        txn.Unwatch();
        return;
      }
    }
  }
  // Every key of every queued command plus the WATCHed ones, locked together
  // (ascending stripes inside KeyLockSet), so no other worker sees a partial
  // transaction and the WATCH check is atomic with the execution.
  const CommandTable& table = CommandTable::Get();
  if (conn_.identity().rate_limited() && !admin_) {
    uint64_t n = 0, bytes = 0;
    for (const std::vector<std::string>& q : txn.queued()) {
      const CommandSpec* s = table.Find(q[0]);
      if (s != nullptr && (s->flags & kCmdRateExempt) != 0) continue;
      ++n;
      for (const std::string& a : q) bytes += a.size();
    }
    if (n > 0 && !RateAllows(n, bytes, ctx.w)) {  // the whole transaction or nothing
      txn.End();
      txn.Unwatch();
      return;
    }
  }
  std::vector<std::vector<std::string>> queue = txn.queued();
  std::vector<const CommandSpec*> specs;
  std::vector<std::string> keys;
  std::vector<size_t> idx;
  bool has_global = false;
  std::vector<std::vector<std::string_view>> argvs(queue.size());
  for (size_t q = 0; q < queue.size(); ++q) {
    argvs[q].assign(queue[q].begin(), queue[q].end());
    const CommandSpec* s = table.Find(argvs[q][0]);
    specs.push_back(s);
    if (s->flags & kCmdGlobal) has_global = true;
    CommandTable::KeyIndexes(*s, argvs[q], &idx);
    // Keys are encoded in the database selected when the command runs; a
    // queued SELECT changes it, so track it.
    for (size_t i : idx) keys.push_back(EncodeDbKey(conn_.identity().db(), argvs[q][i]));
  }
  // A queued SELECT/MOVE/COPY DB may name keys of other databases; lock
  // every database's form of those keys would be costly, so such
  // transactions lock per command (below) when the database changes.
  for (const WatchedKey& wk : txn.watched()) keys.push_back(wk.key);
  std::vector<std::string_view> views(keys.begin(), keys.end());
  std::optional<engine::KeyLockSet> lock;
  lock.emplace(ctx.engine, views);
  for (const WatchedKey& wk : txn.watched()) {
    if (KeyVersionLocked(ctx, wk.key) != wk.version) {
      lock.reset();
      txn.End();
      txn.Unwatch();
      ctx.w->NullArray();
      return;
    }
  }
  txn.End();
  txn.Unwatch();
  ctx.w->ArrayHeader(queue.size());
  int start_db = conn_.identity().db();
  for (size_t q = 0; q < queue.size(); ++q) {
    const CommandSpec& s = *specs[q];
    // Redis checks each queued command again: the rules may have changed.
    if (!conn_.identity().unrestricted() &&
        !AclAllows(s, HistogramSlots::Get().SlotOf(s, argvs[q]), argvs[q], ctx.w,
                   /*in_exec=*/true)) {
      continue;
    }
    bool db_changed = conn_.identity().db() != start_db;
    if ((s.flags & kCmdGlobal) != 0 || db_changed) {
      // Keyspace walks take stripes themselves; run them (and commands after
      // a SELECT) outside the transaction's lock set.
      lock.reset();
      Run(s, HistogramSlots::Get().SlotOf(s, argvs[q]), argvs[q], ctx.w, /*locked=*/false,
          /*in_exec=*/true);
      continue;
    }
    if (!lock) lock.emplace(ctx.engine, views);
    Run(s, HistogramSlots::Get().SlotOf(s, argvs[q]), argvs[q], ctx.w, /*locked=*/true,
        /*in_exec=*/true);
  }
  (void)has_global;
}

namespace {

void CmdMulti(CommandContext& ctx) {
  if (ctx.conn->txn().active()) {
    ctx.Error("ERR MULTI calls can not be nested");
    return;
  }
  ctx.conn->txn().Begin();
  ctx.w->Ok();
}

void CmdExec(CommandContext& ctx) { ctx.session->Exec(ctx); }

void CmdDiscard(CommandContext& ctx) {
  if (!ctx.conn->txn().active()) {
    ctx.Error("ERR DISCARD without MULTI");
    return;
  }
  ctx.conn->txn().End();
  ctx.conn->txn().Unwatch();
  ctx.w->Ok();
}

void CmdWatch(CommandContext& ctx) {
  if (ctx.conn->txn().active()) {
    ctx.Error("ERR WATCH inside MULTI is not allowed");
    return;
  }
  for (size_t i = 1; i < ctx.argc(); ++i) {
    ctx.conn->txn().Watch(WatchVersionLocked(ctx, ctx.Key(i)));
  }
  ctx.w->Ok();
}

void CmdUnwatch(CommandContext& ctx) {
  ctx.conn->txn().Unwatch();
  ctx.w->Ok();
}

}  // namespace

void RegisterTxnCommands(std::vector<CommandSpec>* t) {
  const uint32_t base = kCmdNoQueue | kCmdFast | kCmdLoading | kCmdStale;
  t->push_back({"multi", 1, base, 0, 0, 0, CmdMulti, nullptr, "transactions",
                "Starts a transaction.", "1.2.0"});
  t->push_back({"exec", 1, kCmdNoQueue | kCmdLoading | kCmdStale, 0, 0, 0, CmdExec, nullptr,
                "transactions", "Executes all commands in a transaction.", "1.2.0"});
  t->push_back({"discard", 1, base, 0, 0, 0, CmdDiscard, nullptr, "transactions",
                "Discards a transaction.", "2.0.0"});
  t->push_back({"watch", -2, base, 1, -1, 1, CmdWatch, nullptr, "transactions",
                "Monitors changes to keys to determine the execution of a transaction.", "2.2.0"});
  t->push_back({"unwatch", 1, base, 0, 0, 0, CmdUnwatch, nullptr, "transactions",
                "Forgets about watched keys of a transaction.", "2.2.0"});
}

}  // namespace trove::resp
