// Connection commands: PING ECHO QUIT RESET AUTH HELLO SELECT.
// Runs on the connection's worker.
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
#include "protocol/resp/types/collections.h"
#include "protocol/resp/core/client.h"
#include "protocol/resp/core/command_table.h"
#include "protocol/resp/types/keyspace.h"
#include "protocol/resp/core/keyspace_walk.h"
#include "protocol/resp/core/resp_parser.h"
#include "protocol/resp/core/resp_server.h"
#include "protocol/resp/commands/server_commands.h"

namespace trove::resp {
namespace {

using engine::ItemRef;

void CmdPing(CommandContext& ctx) {
  if (ctx.argc() > 2) {
    ctx.WrongArity();
    return;
  }
  if (ctx.conn->in_pubsub() && ctx.w->proto() == 2) {  // RESP2 subscribed mode
    ctx.w->ArrayHeader(2);
    ctx.w->Bulk("pong");
    ctx.w->Bulk(ctx.argc() == 2 ? ctx.argv[1] : std::string_view());
    return;
  }
  if (ctx.argc() == 2)
    ctx.w->Bulk(ctx.argv[1]);
  else
    ctx.w->Simple("PONG");
}

void CmdEcho(CommandContext& ctx) { ctx.w->Bulk(ctx.argv[1]); }

void CmdQuit(CommandContext& ctx) {
  ctx.w->Ok();
  ctx.fx->close_caller = true;
}

void CmdReset(CommandContext& ctx) {
  ctx.client->DisableTracking();
  ctx.client->UnsubscribeAll();
  ctx.client->StopMonitor();
  acl::AclStore& store = ctx.server->acl();
  const uint64_t epoch = store.epoch();
  ctx.conn->Reset(store.Get("default"), epoch, store.default_open());
  ctx.w->set_proto(2);
  ctx.w->Simple("RESET");
}

// AUTH and HELLO AUTH: on success the connection runs as the user; a
// failure is logged in ACL LOG (reason auth, object the command's name).
bool Authenticate(CommandContext& ctx, std::string_view user, std::string_view pass) {
  acl::AclStore& store = ctx.server->acl();
  const uint64_t epoch = store.epoch();
  std::shared_ptr<const acl::User> u = store.Authenticate(user, pass);
  if (u == nullptr) {
    store.AddLog(acl::Denied::kAuth, ctx.conn->txn().active() ? "multi" : "toplevel",
                 ctx.argv[0], user, ctx.client->ClientInfoLine(), ctx.server->NowMs());
    return false;
  }
  ctx.conn->identity().Authenticate(std::move(u), epoch);
  return true;
}

void CmdAuth(CommandContext& ctx) {
  if (ctx.argc() > 3) {
    ctx.SyntaxError();
    return;
  }
  std::string_view user = ctx.argc() == 3 ? ctx.argv[1] : "default";
  std::string_view pass = ctx.argv[ctx.argc() - 1];
  if (ctx.argc() == 2) {
    std::shared_ptr<const acl::User> d = ctx.server->acl().Get("default");
    if (d->nopass()) {
      ctx.Error(
          "ERR AUTH <password> called without any password configured for the default "
          "user. Are you sure your configuration is correct?");
      return;
    }
  }
  if (!Authenticate(ctx, user, pass)) {
    ctx.Error("WRONGPASS invalid username-password pair or user is disabled.");
    return;
  }
  ctx.w->Ok();
}

void CmdHello(CommandContext& ctx) {
  int proto = ctx.conn->identity().proto();
  size_t i = 1;
  if (ctx.argc() >= 2) {
    int64_t v;
    if (!ParseStrictInt64(ctx.argv[1], &v)) {
      ctx.Error("ERR Protocol version is not an integer or out of range");
      return;
    }
    if (v < 2 || v > 3) {
      ctx.Error("NOPROTO unsupported protocol version");
      return;
    }
    proto = static_cast<int>(v);
    i = 2;
  }
  std::string_view setname, auth_user, auth_pass;
  bool has_name = false, has_auth = false;
  for (; i < ctx.argc(); ++i) {
    bool more = ctx.argc() - i - 1;
    if (EqualsIgnoreCase(ctx.argv[i], "auth") && ctx.argc() - i - 1 >= 2) {
      auth_user = ctx.argv[i + 1];  // the last AUTH wins, as in Redis
      auth_pass = ctx.argv[i + 2];
      has_auth = true;
      i += 2;
    } else if (EqualsIgnoreCase(ctx.argv[i], "setname") && more) {
      setname = ctx.argv[++i];
      has_name = true;
    } else {
      std::string m = "ERR Syntax error in HELLO option '";
      m.append(ctx.argv[i]);
      m += "'";
      ctx.Error(m);
      return;
    }
  }
  if (has_auth && !Authenticate(ctx, auth_user, auth_pass)) {
    ctx.Error("WRONGPASS invalid username-password pair or user is disabled.");
    return;
  }
  if (!ctx.conn->identity().authenticated()) {
    ctx.Error(
        "NOAUTH HELLO must be called with the client already authenticated, otherwise "
        "the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the "
        "client and select the RESP protocol version at the same time");
    return;
  }
  if (has_name) {
    for (char c : setname) {
      if (c < '!' || c > '~') {
        ctx.Error("ERR Client names cannot contain spaces, newlines or special characters.");
        return;
      }
    }
    ctx.conn->identity().SetName(setname);
  }
  ctx.conn->identity().SetProto(proto);
  ctx.w->set_proto(proto);
  ctx.w->MapHeader(7);
  ctx.w->Bulk("server");
  ctx.w->Bulk("redis");
  ctx.w->Bulk("version");
  ctx.w->Bulk(kRedisVersion);
  ctx.w->Bulk("proto");
  ctx.w->Integer(proto);
  ctx.w->Bulk("id");
  ctx.w->Integer(static_cast<int64_t>(ctx.conn->identity().id()));
  ctx.w->Bulk("mode");
  ctx.w->Bulk("standalone");
  ctx.w->Bulk("role");
  ctx.w->Bulk("master");
  ctx.w->Bulk("modules");
  ctx.w->ArrayHeader(0);
}

void CmdSelect(CommandContext& ctx) {
  int64_t n;
  if (!ArgInt(ctx, ctx.argv[1], &n)) return;
  if (n < 0 || n >= ctx.server->databases()) {
    ctx.Error("ERR DB index is out of range");
    return;
  }
  if (ctx.script_db != nullptr) {
    *ctx.script_db = static_cast<int>(n);  // a script's SELECT is its own
  } else {
    ctx.conn->identity().SelectDb(static_cast<int>(n));
  }
  ctx.w->Ok();
}

}  // namespace

void RegisterConnectionCommands(std::vector<CommandSpec>* t) {
  const CommandAdder add{t};
  const uint32_t conn = kCmdFast | kCmdLoading | kCmdStale;
  add("ping", -1, conn | kCmdPubsubOk, CmdPing, "connection",
      "Returns the server's liveliness response.", "1.0.0");
  add("echo", 2, conn, CmdEcho, "connection", "Returns the given string.", "1.0.0");
  add("quit", -1, conn | kCmdNoAuth | kCmdNoQueue | kCmdPubsubOk, CmdQuit, "connection",
      "Closes the connection.", "1.0.0");
  add("reset", 1, conn | kCmdNoAuth | kCmdNoQueue | kCmdPubsubOk, CmdReset, "connection",
      "Resets the connection.", "6.2.0");
  add("auth", -2, conn | kCmdNoAuth, CmdAuth, "connection", "Authenticates the connection.",
      "1.0.0");
  add("hello", -1, conn | kCmdNoAuth, CmdHello, "connection", "Handshakes with the Redis server.",
      "6.0.0");
  add("select", 2, conn, CmdSelect, "connection", "Changes the selected database.", "1.0.0");
}

}  // namespace trove::resp
