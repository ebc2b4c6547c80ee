// CLIENT and its subcommands (LIST and KILL: client_list.cc; the tracking
// ones: tracking.cc). Runs on the connection's worker.
#include "protocol/resp/core/client.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/str_append.h"
#include "net/worker.h"
#include "protocol/resp/commands/server_commands.h"
#include "protocol/resp/core/command_table.h"
#include "protocol/resp/core/keyspace_walk.h"
#include "protocol/resp/core/resp_parser.h"
#include "protocol/resp/core/resp_server.h"
#include "protocol/resp/services/blocked_serve.h"
#include "protocol/resp/types/collections.h"
#include "protocol/resp/types/keyspace.h"

namespace trove::resp {
namespace {

using engine::ItemRef;

bool ValidClientText(std::string_view v) {
  for (char c : v) {
    if (c < '!' || c > '~') return false;
  }
  return true;
}

void CmdClient(CommandContext& ctx) {
  std::string sub = ToLower(ctx.argv[1]);
  Identity& id = ctx.conn->identity();
  if (sub == "id" && ctx.argc() == 2) {
    ctx.w->Integer(static_cast<int64_t>(id.id()));
  } else if (sub == "setname" && ctx.argc() == 3) {
    if (!ValidClientText(ctx.argv[2])) {
      ctx.Error("ERR Client names cannot contain spaces, newlines or special characters.");
      return;
    }
    id.SetName(ctx.argv[2]);
    ctx.w->Ok();
  } else if (sub == "getname" && ctx.argc() == 2) {
    if (id.name().empty())
      ctx.w->Null();
    else
      ctx.w->Bulk(id.name());
  } else if (sub == "info" && ctx.argc() == 2) {
    net::ConnControl* self = ctx.client->control();
    net::ClientInfo ci;
    if (self != nullptr && net::Worker::Current() != nullptr) {
      if (net::Connection* c = net::Worker::Current()->Find(self->id())) {
        ci = net::Worker::Current()->ClientInfoOf(*c);
      }
    } else {
      ci.id = id.id();
      ci.addr = id.addr();
      ctx.client->DescribeClient(&ci);
    }
    std::string line;
    AppendClientLine(&line, ci);
    ctx.w->Verbatim(line);
  } else if (sub == "list") {
    ClientList(ctx);
  } else if (sub == "kill" && ctx.argc() >= 3) {
    ClientKill(ctx);
  } else if (sub == "setinfo" && ctx.argc() == 4) {
    std::string attr = ToLower(ctx.argv[2]);
    if (attr != "lib-name" && attr != "lib-ver") {
      ctx.Error("ERR Unrecognized option '" + std::string(ctx.argv[2].substr(0, 128)) + "'");
      return;
    }
    if (!ValidClientText(ctx.argv[3])) {
      ctx.Error("ERR " + attr + " cannot contain spaces, newlines or special characters.");
      return;
    }
    if (attr == "lib-name") {
      id.SetLibName(ctx.argv[3]);
    } else {
      id.SetLibVer(ctx.argv[3]);
    }
    ctx.w->Ok();
  } else if (sub == "no-evict" && ctx.argc() == 3) {
    // Trove evicts no clients (no maxmemory-clients), so the flag is only
    // recorded and shown, exactly what it means in Redis without eviction.
    std::string v = ToLower(ctx.argv[2]);
    if (v != "on" && v != "off") {
      ctx.SyntaxError();
      return;
    }
    id.SetNoEvict(v == "on");
    ctx.w->Ok();
  } else if (sub == "no-touch" && ctx.argc() == 3) {
    std::string v = ToLower(ctx.argv[2]);
    if (v == "on" || v == "off") {
      id.SetNoTouch(v == "on");
      ctx.w->Ok();
    } else {
      ctx.SyntaxError();
    }
  } else if (sub == "reply" && ctx.argc() == 3) {
    std::string v = ToLower(ctx.argv[2]);
    if (v == "on") {
      id.SetReplyMode(Identity::Reply::kOn);
      ctx.w->Ok();
    } else if (v == "off") {
      id.SetReplyMode(Identity::Reply::kOff);
    } else if (v == "skip") {
      // Redis ignores SKIP while replies are off.
      if (id.reply_mode() != Identity::Reply::kOff) id.SetReplyMode(Identity::Reply::kSkip);
    } else {
      ctx.SyntaxError();
    }
  } else if (sub == "unblock" && (ctx.argc() == 3 || ctx.argc() == 4)) {
    int64_t target;
    if (!ParseStrictInt64(ctx.argv[2], &target)) {
      ctx.NotInteger();
      return;
    }
    bool error = false;
    if (ctx.argc() == 4) {
      std::string why = ToLower(ctx.argv[3]);
      if (why == "error") {
        error = true;
      } else if (why != "timeout") {
        ctx.Error("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR");
        return;
      }
    }
    net::ConnControl* self = ctx.client->control();
    ctx.w->Integer(UnblockClient(ctx.server, self != nullptr ? &self->group() : nullptr,
                                 static_cast<uint64_t>(target), error));
  } else if (sub == "pause" && (ctx.argc() == 3 || ctx.argc() == 4)) {
    int64_t ms;
    if (!ParseStrictInt64(ctx.argv[2], &ms)) {
      ctx.Error("ERR timeout is not an integer or out of range");
      return;
    }
    int mode = protocol::ClientPause::kAll;
    if (ctx.argc() == 4) {
      std::string m = ToLower(ctx.argv[3]);
      if (m == "write") {
        mode = protocol::ClientPause::kWrite;
      } else if (m != "all") {
        ctx.Error("ERR CLIENT PAUSE mode must be WRITE or ALL");
        return;
      }
    }
    if (ms < 0) {
      ctx.Error("ERR timeout is negative");
      return;
    }
    const int64_t now = ctx.engine->clock()->MonoNanos();
    const int64_t cap = (INT64_MAX - now) / 1000000;  // a pause "forever" must not wrap
    ctx.server->pause().Pause(mode, now + std::min(ms, cap) * 1000000, now);
    // Expiry waits too (Redis pauses it under both modes), until the end in force.
    ctx.engine->HoldExpiryUntil(ctx.server->pause().end_ns());
    ctx.w->Ok();
  } else if (sub == "unpause" && ctx.argc() == 2) {
    ctx.server->pause().Unpause();
    ctx.engine->HoldExpiryUntil(0);
    if (net::ConnControl* self = ctx.client->control()) {
      net::WorkerGroup& g = self->group();
      RespServer* server = ctx.server;
      for (size_t i = 0; i < g.size(); ++i) {
        g.loop(i).Post([server] { WakePaused(&server->pause()); });
      }
    }
    ctx.w->Ok();
  } else if (ClientTrackingCommand(ctx, sub)) {
    // CLIENT TRACKING / CACHING / GETREDIR / TRACKINGINFO (commands/tracking.cc)
  } else if (sub == "id" || sub == "setname" || sub == "getname" || sub == "info" ||
             sub == "setinfo" || sub == "no-evict" || sub == "no-touch" || sub == "kill" ||
             sub == "reply" || sub == "unblock" || sub == "pause" || sub == "unpause" ||
             sub == "tracking" || sub == "caching" || sub == "getredir" || sub == "trackinginfo") {
    SubArity(ctx);
  } else {
    UnknownSubcommand(ctx);
  }
}

}  // namespace

void RegisterClientCommands(std::vector<CommandSpec>* t) {
  const CommandAdder add{t};
  add("client", -2, kCmdLoading | kCmdStale, CmdClient, "connection",
      "A container for client connection commands.", "2.4.0");
}

}  // namespace trove::resp
