// CLIENT and its subcommands, across workers.
// Runs on the connection's worker.
#include <unistd.h>

#include <algorithm>
#include <functional>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/str_append.h"
#include "net/worker.h"
#include "protocol/resp/types/collections.h"
#include "protocol/resp/core/gather_reply.h"
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

// --- CLIENT LIST / INFO ---

}  // namespace

void AppendClientLine(std::string* out, const net::ClientInfo& c) {
  auto num = [out](const char* k, int64_t v) {
    out->push_back(' ');
    out->append(k);
    out->push_back('=');
    AppendI64(*out, v);
  };
  auto str = [out](const char* k, std::string_view v) {
    out->push_back(' ');
    out->append(k);
    out->push_back('=');
    out->append(v);
  };
  out->append("id=");
  AppendU64(*out, c.id);
  str("addr", c.addr);
  str("laddr", c.laddr);
  num("fd", c.fd);
  str("name", c.name);
  num("age", c.age_s);
  num("idle", c.idle_s);
  str("flags", c.flags);
  num("db", c.db);
  num("sub", c.sub);
  num("psub", c.psub);
  num("ssub", c.ssub);
  num("multi", c.multi);
  num("watch", c.watch);
  num("qbuf", static_cast<int64_t>(c.qbuf));
  num("qbuf-free", static_cast<int64_t>(c.qbuf_free));
  num("argv-mem", static_cast<int64_t>(c.argv_mem));
  num("multi-mem", static_cast<int64_t>(c.multi_mem));
  num("rbs", static_cast<int64_t>(c.rbs));
  num("rbp", static_cast<int64_t>(c.rbs));
  num("obl", static_cast<int64_t>(c.obl));
  num("oll", static_cast<int64_t>(c.oll));
  num("omem", static_cast<int64_t>(c.omem));
  num("tot-mem", static_cast<int64_t>(c.tot_mem));
  str("events", c.events);
  str("cmd", c.cmd);
  str("user", c.user);
  num("redir", c.redir);
  num("resp", c.resp_version);
  str("lib-name", c.lib_name);
  str("lib-ver", c.lib_ver);
  out->push_back('\n');
}

namespace {

// TYPE filter values: "normal", "pubsub"; Trove has no replicas, so
// "master", "replica" and "slave" match nothing.
bool ParseClientType(std::string_view t, std::string* out) {
  std::string l = ToLower(t);
  if (l == "normal" || l == "pubsub" || l == "master" || l == "replica" || l == "slave") {
    *out = l == "slave" ? "replica" : l;
    return true;
  }
  return false;
}

bool TypeMatches(const net::ClientInfo& c, const std::string& type) {
  if (type.empty()) return true;
  const bool pubsub = c.sub + c.psub + c.ssub > 0;
  if (type == "pubsub") return pubsub;
  if (type == "normal") return !pubsub;
  return false;
}

void ClientList(CommandContext& ctx) {
  std::string type;
  std::vector<uint64_t> ids;
  for (size_t i = 2; i < ctx.argc(); ++i) {
    std::string o = ToLower(ctx.argv[i]);
    if (o == "type" && i + 1 < ctx.argc()) {
      if (!ParseClientType(ctx.argv[++i], &type)) {
        ctx.Error("ERR Unknown client type '" + std::string(ctx.argv[i].substr(0, 128)) + "'");
        return;
      }
    } else if (o == "id" && i + 1 < ctx.argc()) {
      for (++i; i < ctx.argc(); ++i) {
        int64_t v;
        if (!ParseStrictInt64(ctx.argv[i], &v) || v <= 0) {
          ctx.Error("ERR Invalid client ID");
          return;
        }
        ids.push_back(static_cast<uint64_t>(v));
      }
    } else {
      ctx.SyntaxError();
      return;
    }
  }
  using Infos = std::vector<net::ClientInfo>;
  GatherReply<Infos>(
      ctx, [](net::Worker& w) { return w.ClientInfos(); },
      [type, ids](std::vector<Infos> per_worker, RespWriter& w) {
        Infos all;
        for (Infos& v : per_worker) {
          for (auto& ci : v) {
            if (!ci.resp || !TypeMatches(ci, type)) continue;
            if (!ids.empty() && std::find(ids.begin(), ids.end(), ci.id) == ids.end()) continue;
            all.push_back(std::move(ci));
          }
        }
        std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
        std::string text;
        for (const auto& ci : all) AppendClientLine(&text, ci);
        w.Verbatim(text);
      });
}

// --- CLIENT KILL ---

struct KillFilter {
  bool old_form = false;  // CLIENT KILL ip:port
  std::vector<uint64_t> ids;
  std::string addr, laddr, user, type;
  bool has_type = false;
  int64_t maxage = -1;
  bool skipme = true;
  uint64_t me = 0;
  bool Matches(const net::ClientInfo& c) const {
    if (!c.resp) return false;
    if (!ids.empty() && std::find(ids.begin(), ids.end(), c.id) == ids.end()) return false;
    if (!addr.empty() && c.addr != addr) return false;
    if (!laddr.empty() && c.laddr != laddr) return false;
    if (!user.empty() && c.user != user) return false;
    if (has_type && !TypeMatches(c, type)) return false;
    if (maxage >= 0 && c.age_s < maxage) return false;
    if (skipme && c.id == me) return false;
    return true;
  }
};

bool ParseKill(CommandContext& ctx, KillFilter* f) {
  if (ctx.argc() == 3) {  // the old form: CLIENT KILL addr:port
    f->old_form = true;
    f->addr.assign(ctx.argv[2]);
    f->skipme = false;
    return true;
  }
  if ((ctx.argc() - 2) % 2 != 0) {
    ctx.SyntaxError();
    return false;
  }
  for (size_t i = 2; i + 1 < ctx.argc(); i += 2) {
    std::string o = ToLower(ctx.argv[i]);
    std::string_view v = ctx.argv[i + 1];
    if (o == "id") {
      int64_t id;
      if (!ParseStrictInt64(v, &id) || id <= 0) {
        ctx.Error("ERR client-id should be greater than 0");
        return false;
      }
      f->ids.push_back(static_cast<uint64_t>(id));
    } else if (o == "addr") {
      f->addr.assign(v);
    } else if (o == "laddr") {
      f->laddr.assign(v);
    } else if (o == "user") {
      if (ctx.server->acl().Get(v) == nullptr) {
        ctx.Error("ERR No such user '" + std::string(v.substr(0, 128)) + "'");
        return false;
      }
      f->user.assign(v);
    } else if (o == "type") {
      if (!ParseClientType(v, &f->type)) {
        ctx.Error("ERR Unknown client type '" + std::string(v.substr(0, 128)) + "'");
        return false;
      }
      f->has_type = true;
    } else if (o == "skipme") {
      std::string y = ToLower(v);
      if (y == "yes") {
        f->skipme = true;
      } else if (y == "no") {
        f->skipme = false;
      } else {
        ctx.SyntaxError();
        return false;
      }
    } else if (o == "maxage") {
      if (!ParseStrictInt64(v, &f->maxage)) {
        ctx.Error("ERR maxage is not an integer or out of range");
        return false;
      }
      if (f->maxage <= 0) {
        ctx.Error("ERR maxage should be greater than 0");
        return false;
      }
    } else {
      ctx.SyntaxError();
      return false;
    }
  }
  return true;
}

// Every worker closes its matching connections at its next safe point. The
// killer itself, when it matches (SKIPME no), is answered first and closed
// after its reply, as Redis does.
void ClientKill(CommandContext& ctx) {
  KillFilter f;
  if (!ParseKill(ctx, &f)) return;
  net::ConnControl* self = ctx.client->control();
  f.me = self != nullptr ? self->id() : ctx.conn->identity().id();
  struct Count {
    size_t killed = 0;
    bool self = false;
  };
  GatherReply<Count>(
      ctx,
      [f](net::Worker& w) {
        Count n;
        for (const net::ClientInfo& ci : w.ClientInfos()) {
          if (!f.Matches(ci)) continue;
          ++n.killed;
          if (ci.id == f.me) {
            n.self = true;
          } else {
            w.RequestClose(ci.id);
          }
        }
        return n;
      },
      [f](std::vector<Count> per_worker, RespWriter& w) {
        Count total;
        for (const Count& c : per_worker) {
          total.killed += c.killed;
          total.self = total.self || c.self;
        }
        if (f.old_form) {
          if (total.killed == 0) {
            w.Error("ERR No such client");
          } else {
            w.Ok();
          }
        } else {
          w.Integer(static_cast<int64_t>(total.killed));
        }
        if (total.self) {
          if (net::Connection* c = net::Worker::Current()->Find(f.me)) c->CloseSoon();
        }
      });
}

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
             sub == "tracking" || sub == "caching" || sub == "getredir" ||
             sub == "trackinginfo") {
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
