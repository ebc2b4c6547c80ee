// CLIENT LIST and CLIENT KILL with their filters, over every worker's
// connections, and the CLIENT LIST line (CLIENT INFO's too). Runs on the
// connection's worker.
#include <algorithm>
#include <string>
#include <vector>

#include "common/str_append.h"
#include "net/worker.h"
#include "protocol/resp/commands/server_commands.h"
#include "protocol/resp/core/client.h"
#include "protocol/resp/core/command_table.h"
#include "protocol/resp/core/gather_reply.h"
#include "protocol/resp/core/resp_parser.h"
#include "protocol/resp/core/resp_server.h"

namespace trove::resp {

// --- CLIENT LIST / INFO ---

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

}  // namespace

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

namespace {

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

}  // namespace

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

}  // namespace trove::resp
