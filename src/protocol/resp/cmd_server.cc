// Server commands over the keyspace (SWAPDB DBSIZE FLUSHDB FLUSHALL TIME
// SHUTDOWN), the helpers the split command files share, and the
// registration of every connection and server command. Connection's worker.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/str_append.h"
#include "net/worker.h"
#include "protocol/resp/collections.h"
#include "protocol/resp/command_table.h"
#include "protocol/resp/keyspace.h"
#include "protocol/resp/keyspace_walk.h"
#include "protocol/resp/resp_parser.h"
#include "protocol/resp/resp_server.h"
#include "protocol/resp/server_commands.h"
#include "protocol/resp/session.h"

namespace trove::resp {

void UnknownSubcommand(CommandContext& ctx) {
  std::string m = "ERR unknown subcommand '";
  m.append(ctx.argv[1].substr(0, 128));
  m += "'. Try ";
  for (const char* c = ctx.spec->name; *c; ++c) {
    m.push_back(*c >= 'a' && *c <= 'z' ? static_cast<char>(*c - 'a' + 'A') : *c);
  }
  m += " HELP.";
  ctx.Error(m);
}

void SubArity(CommandContext& ctx) {
  std::string m = "ERR wrong number of arguments for '";
  m += ctx.spec->name;
  m += "|";
  m += ToLower(ctx.argv[1]);
  m += "' command";
  ctx.Error(m);
}

void AddField(std::string* s, std::string_view k, std::string_view v) {
  s->append(k);
  s->push_back(':');
  s->append(v);
  s->append("\r\n");
}

void AddField(std::string* s, std::string_view k, int64_t v) {
  std::string n;
  AppendI64(n, v);
  AddField(s, k, n);
}

namespace {

using engine::ItemRef;

void CmdSwapDb(CommandContext& ctx) {
  int64_t a, b;
  if (!ParseStrictInt64(ctx.argv[1], &a)) {
    ctx.Error("ERR invalid first DB index");
    return;
  }
  if (!ParseStrictInt64(ctx.argv[2], &b)) {
    ctx.Error("ERR invalid second DB index");
    return;
  }
  if (a < 0 || a >= ctx.server->databases() || b < 0 || b >= ctx.server->databases()) {
    ctx.Error("ERR DB index is out of range");
    return;
  }
  if (a != b) SwapDatabases(ctx, static_cast<int>(a), static_cast<int>(b));
  ctx.w->Ok();
}

void CmdDbSize(CommandContext& ctx) {
  auto n = std::make_shared<int64_t>(0);
  auto walk = std::make_shared<SlicedWalk>();
  walk->engine = ctx.engine;
  const int db = ctx.db();
  walk->visit = [n, db](const engine::ItemRef& it) {
    int kdb;
    std::string_view k;
    DecodeDbKey(it.key(), &kdb, &k);
    if (kdb == db) ++*n;
  };
  walk->finish = [n](RespWriter& w) { w.Integer(*n); };
  RunSlicedWalk(ctx, std::move(walk));
}

bool FlushOptions(CommandContext& ctx) {
  if (ctx.argc() > 2) {
    ctx.SyntaxError();
    return false;
  }
  if (ctx.argc() == 2 && !EqualsIgnoreCase(ctx.argv[1], "sync") &&
      !EqualsIgnoreCase(ctx.argv[1], "async")) {
    ctx.SyntaxError();
    return false;
  }
  return true;
}

// FLUSHDB (db >= 0) or FLUSHALL (db < 0), in slices: each slice collects
// its keys, then deletes them with no stripe held (keyspace_walk.h).
void FlushInSlices(CommandContext& ctx, int db) {
  struct State {
    std::vector<std::string> keys;  // engine keys of the current slice
    engine::ThreadStats* ts;
    engine::Engine* engine;
  };
  auto st = std::make_shared<State>(State{{}, ctx.ts, ctx.engine});
  auto walk = std::make_shared<SlicedWalk>();
  walk->engine = ctx.engine;
  walk->visit = [st, db](const ItemRef& it) {
    if (db >= 0) {
      int kdb;
      std::string_view k;
      DecodeDbKey(it.key(), &kdb, &k);
      if (kdb != db) return;
    }
    st->keys.emplace_back(it.key());
  };
  walk->after_slice = [st] {
    engine::DeleteArgs da;
    for (const auto& k : st->keys) st->engine->Delete(k, da, st->ts);
    st->keys.clear();
  };
  // Every tracking client learns of the flush once it is done, after its
  // reply (Redis's trackingInvalidateKeysOnFlush: a null key list).
  // The table empties even with nobody tracking now (closed clients' reads).
  Tracking* tracking = &ctx.server->tracking();
  walk->finish = [tracking](RespWriter& w) {
    w.Ok();
    tracking->InvalidateAll();
  };
  RunSlicedWalk(ctx, std::move(walk));
}

void CmdFlushDb(CommandContext& ctx) {
  if (!FlushOptions(ctx)) return;
  FlushInSlices(ctx, ctx.db());
}

void CmdFlushAll(CommandContext& ctx) {
  if (!FlushOptions(ctx)) return;
  FlushInSlices(ctx, -1);
}

void CmdTime(CommandContext& ctx) {
  int64_t us = ctx.server->NowUs();
  std::string a, b;
  AppendI64(a, us / 1000000);
  AppendI64(b, us % 1000000);
  ctx.w->ArrayHeader(2);
  ctx.w->Bulk(a);
  ctx.w->Bulk(b);
}

void CmdShutdown(CommandContext& ctx) {
  for (size_t i = 1; i < ctx.argc(); ++i) {
    std::string o = ToLower(ctx.argv[i]);
    if (o != "nosave" && o != "save" && o != "now" && o != "force" && o != "abort") {
      ctx.SyntaxError();
      return;
    }
  }
  net::ServerServices* sv = ctx.server->services();
  if (sv == nullptr || !sv->ShutdownEnabled()) {
    ctx.Error("ERR Errors trying to SHUTDOWN. Check logs.");
    return;
  }
  sv->RequestShutdown();
  ctx.session->RequestClose();
}

}  // namespace

void RegisterServerCommands(std::vector<CommandSpec>* t) {
  auto add = [t](const char* n, int ar, uint32_t f, CommandFn fn, const char* group,
                 const char* sum, const char* since) {
    t->push_back({n, ar, f, 0, 0, 0, fn, nullptr, group, sum, since});
  };
  RegisterConnectionCommands(t);
  RegisterClientCommands(t);
  RegisterMonitorCommands(t);
  RegisterAclCommands(t);
  add("swapdb", 3, kCmdWrite | kCmdFast | kCmdGlobal, CmdSwapDb, "server",
      "Swaps two Redis databases.", "4.0.0");
  add("dbsize", 1, kCmdReadonly | kCmdFast | kCmdGlobal, CmdDbSize, "server",
      "Returns the number of keys in the database.", "1.0.0");
  add("flushdb", -1, kCmdWrite | kCmdGlobal, CmdFlushDb, "server",
      "Remove all keys from the current database.", "1.0.0");
  add("flushall", -1, kCmdWrite | kCmdGlobal, CmdFlushAll, "server",
      "Removes all keys from all databases.", "1.0.0");
  add("time", 1, kCmdFast | kCmdLoading | kCmdStale, CmdTime, "server", "Returns the server time.",
      "2.6.0");
  RegisterInfoCommands(t);
  RegisterConfigCommands(t);
  RegisterIntrospectionCommands(t);
  RegisterSlowlogCommands(t);
  add("shutdown", -1, kCmdAdmin | kCmdNoMulti | kCmdLoading | kCmdStale, CmdShutdown, "server",
      "Synchronously saves the database(s) to disk and shuts down the Redis server.", "1.0.0");
}

}  // namespace trove::resp
