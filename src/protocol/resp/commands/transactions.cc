// MULTI, EXEC, DISCARD, WATCH, UNWATCH. The transaction's state is the
// connection's (ConnState::txn()); EXEC runs the queued commands through the
// command seam under one lock set (Client::Exec, connection/session.cc).
// Runs on the connection's worker.
#include <vector>

#include "protocol/resp/core/client.h"
#include "protocol/resp/core/command.h"
#include "protocol/resp/types/keyspace.h"

namespace trove::resp {

namespace {

void CmdMulti(CommandContext& ctx) {
  if (ctx.conn->txn().active()) {
    ctx.Error("ERR MULTI calls can not be nested");
    return;
  }
  ctx.conn->txn().Begin();
  ctx.w->Ok();
}

void CmdExec(CommandContext& ctx) { ctx.client->Exec(ctx); }

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

void RegisterTransactionCommands(std::vector<CommandSpec>* t) {
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
