// EXEC: a transaction as a caller of the command seam. Every queued
// command's keys and the WATCHed keys are locked together, the WATCH
// versions checked, and the queued commands run through Session::Run with
// the stripes held; their effects are drained once, after EXEC's reply.
// Runs on the connection's worker.
#include <optional>
#include <string>

#include "protocol/resp/connection/session.h"
#include "protocol/resp/core/command_table.h"
#include "protocol/resp/core/execute.h"
#include "protocol/resp/services/busy_scripts.h"
#include "protocol/resp/services/latency_histogram.h"
#include "protocol/resp/types/keyspace.h"

namespace trove::resp {

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
  bool is_eval = true;
  if (!LockKeysUnlessBusy(ctx, views, &lock, &is_eval)) {
    // As the BUSY check before EXEC answers (RefusedWhileBusy).
    ctx.w->Error(std::string("EXECABORT Transaction discarded because of: ") +
                 BusyScripts::BusyError(is_eval));
    txn.End();
    return;
  }
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

}  // namespace trove::resp
