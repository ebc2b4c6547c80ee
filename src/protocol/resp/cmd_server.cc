// Connection and server commands (HELLO PING SELECT INFO CONFIG COMMAND
// OBJECT DEBUG ...); run on the connection's worker.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "common/str_append.h"
#include "net/worker.h"
#include "protocol/resp/collections.h"
#include "protocol/resp/command_table.h"
#include "protocol/resp/keyspace.h"
#include "protocol/resp/keyspace_walk.h"
#include "protocol/resp/resp_parser.h"
#include "protocol/resp/resp_server.h"
#include "protocol/resp/session.h"

namespace trove::resp {
namespace {

using engine::ItemRef;

constexpr const char* kRedisVersion = "7.0.15";

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
  ctx.session->RequestClose();
}

void CmdReset(CommandContext& ctx) {
  ctx.session->UnsubscribeAll();
  ctx.conn->Reset(ctx.server->auth_required());
  ctx.w->set_proto(2);
  ctx.w->Simple("RESET");
}

bool CheckPassword(CommandContext& ctx, std::string_view user, std::string_view pass) {
  std::string req = ctx.server->requirepass();
  if (user != "default") return false;
  return req.empty() || pass == req;
}

void CmdAuth(CommandContext& ctx) {
  if (ctx.argc() > 3) {
    ctx.SyntaxError();
    return;
  }
  std::string_view user = ctx.argc() == 3 ? ctx.argv[1] : "default";
  std::string_view pass = ctx.argv[ctx.argc() - 1];
  if (ctx.argc() == 2 && !ctx.server->auth_required()) {
    ctx.Error(
        "ERR AUTH <password> called without any password configured for the default "
        "user. Are you sure your configuration is correct?");
    return;
  }
  if (!CheckPassword(ctx, user, pass)) {
    ctx.Error("WRONGPASS invalid username-password pair or user is disabled.");
    return;
  }
  ctx.conn->identity().Authenticate(user);
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
  std::string_view setname;
  bool has_name = false;
  for (; i < ctx.argc(); ++i) {
    bool more = ctx.argc() - i - 1;
    if (EqualsIgnoreCase(ctx.argv[i], "auth") && ctx.argc() - i - 1 >= 2) {
      if (!CheckPassword(ctx, ctx.argv[i + 1], ctx.argv[i + 2])) {
        ctx.Error("WRONGPASS invalid username-password pair or user is disabled.");
        return;
      }
      ctx.conn->identity().Authenticate(ctx.argv[i + 1]);
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
  ctx.conn->identity().SelectDb(static_cast<int>(n));
  ctx.w->Ok();
}

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
  walk->finish = [](RespWriter& w) { w.Ok(); };
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

// --- INFO ---

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

void CmdInfo(CommandContext& ctx) {
  std::vector<std::string> want;
  for (size_t i = 1; i < ctx.argc(); ++i) want.push_back(ToLower(ctx.argv[i]));
  bool all = false, everything = false, dflt = want.empty();
  for (const auto& w : want) {
    if (w == "all") all = true;
    if (w == "everything") everything = true;
    if (w == "default") dflt = true;
  }
  auto show = [&](std::string_view sec, bool in_default) {
    if (everything || all) return true;
    if (dflt && in_default) return true;
    for (const auto& w : want)
      if (w == sec) return true;
    return false;
  };
  uint64_t hits = 0, misses = 0, cmds = 0, conns = 0, errors = 0, in_bytes = 0;
  int64_t clients = 0;
  std::vector<std::pair<uint64_t, uint64_t>> per_cmd(CommandTable::Get().size());
  ctx.server->ForEachWorkerStats([&](const WorkerStats& w) {
    hits += w.keyspace_hits.load(std::memory_order_relaxed);
    misses += w.keyspace_misses.load(std::memory_order_relaxed);
    cmds += w.total_commands.load(std::memory_order_relaxed);
    conns += w.total_connections.load(std::memory_order_relaxed);
    clients += w.connected_clients.load(std::memory_order_relaxed);
    errors += w.error_replies.load(std::memory_order_relaxed);
    in_bytes += w.net_input_bytes.load(std::memory_order_relaxed);
    for (size_t i = 0; i < w.cmds.size() && i < per_cmd.size(); ++i) {
      per_cmd[i].first += w.cmds[i].calls.load(std::memory_order_relaxed);
      per_cmd[i].second += w.cmds[i].usec.load(std::memory_order_relaxed);
    }
  });
  int64_t now = ctx.engine->clock()->UnixSeconds();
  std::string s;
  if (show("server", true)) {
    s += "# Server\r\n";
    AddField(&s, "redis_version", kRedisVersion);
    AddField(&s, "trove_version", "0.1.0");
    AddField(&s, "redis_mode", "standalone");
    AddField(&s, "os", "Linux");
    AddField(&s, "arch_bits", 64);
    AddField(&s, "multiplexing_api", "epoll");
    AddField(&s, "process_id", static_cast<int64_t>(getpid()));
    AddField(&s, "tcp_port", ctx.server->options().port);
    AddField(&s, "uptime_in_seconds", now - ctx.server->start_unix());
    AddField(&s, "uptime_in_days", (now - ctx.server->start_unix()) / 86400);
    AddField(&s, "executable", "trove");
    s += "\r\n";
  }
  if (show("clients", true)) {
    s += "# Clients\r\n";
    AddField(&s, "connected_clients", clients);
    AddField(&s, "maxclients", ctx.server->maxclients.load(std::memory_order_relaxed));
    AddField(&s, "blocked_clients", 0);
    AddField(&s, "tracking_clients", 0);
    s += "\r\n";
  }
  if (show("memory", true)) {
    s += "# Memory\r\n";
    // used_memory is the slab memory the engine holds (Redis: allocator
    // total); used_memory_dataset the bytes of items. Heap collections are
    // counted against -m by the engine but not yet reported in its stats.
    int64_t items = 0, malloced = 0;
    for (const auto& [k, v] : ctx.engine->Stats()) {
      if (k == "bytes") ParseStrictInt64(v, &items);
    }
    for (const auto& [k, v] : ctx.engine->SlabStats()) {
      if (k == "total_malloced") ParseStrictInt64(v, &malloced);
    }
    AddField(&s, "used_memory", malloced > items ? malloced : items);
    AddField(&s, "used_memory_dataset", items);
    AddField(&s, "maxmemory", static_cast<int64_t>(ctx.engine->options().mem_limit));
    AddField(&s, "maxmemory_policy",
             ctx.engine->options().evict_to_free ? "allkeys-lru" : "noeviction");
    s += "\r\n";
  }
  if (show("persistence", true)) {
    s += "# Persistence\r\nloading:0\r\nrdb_changes_since_last_save:0\r\naof_enabled:0\r\n\r\n";
  }
  if (show("stats", true)) {
    s += "# Stats\r\n";
    AddField(&s, "total_connections_received", static_cast<int64_t>(conns));
    AddField(&s, "total_commands_processed", static_cast<int64_t>(cmds));
    AddField(&s, "total_net_input_bytes", static_cast<int64_t>(in_bytes));
    AddField(&s, "keyspace_hits", static_cast<int64_t>(hits));
    AddField(&s, "keyspace_misses", static_cast<int64_t>(misses));
    AddField(&s, "total_error_replies", static_cast<int64_t>(errors));
    for (const auto& [k, v] : ctx.engine->Stats()) {
      if (k == "evictions") AddField(&s, "evicted_keys", v);
      if (k == "expired_unfetched") AddField(&s, "expired_keys", v);
    }
    s += "\r\n";
  }
  if (show("replication", true)) s += "# Replication\r\nrole:master\r\nconnected_slaves:0\r\n\r\n";
  if (show("cpu", true)) s += "# CPU\r\n\r\n";
  if (show("commandstats", false)) {
    s += "# Commandstats\r\n";
    const auto& specs = CommandTable::Get().all();
    for (size_t i = 0; i < specs.size(); ++i) {
      if (per_cmd[i].first == 0) continue;
      std::string v = "calls=";
      AppendU64(v, per_cmd[i].first);
      v += ",usec=";
      AppendU64(v, per_cmd[i].second);
      char buf[64];
      std::snprintf(buf, sizeof buf, ",usec_per_call=%.2f",
                    static_cast<double>(per_cmd[i].second) / static_cast<double>(per_cmd[i].first));
      v += buf;
      v += ",rejected_calls=0,failed_calls=0";
      AddField(&s, std::string("cmdstat_") + specs[i].name, v);
    }
    s += "\r\n";
  }
  if (show("cluster", true)) s += "# Cluster\r\ncluster_enabled:0\r\n\r\n";
  if (!show("keyspace", true)) {
    if (s.size() >= 2) s.resize(s.size() - 2);  // Redis drops the last blank line
    ctx.w->Verbatim(s);
    return;
  }
  // The keyspace section walks every key: in slices (keyspace_walk.h).
  struct State {
    std::string text;
    std::vector<std::pair<int64_t, int64_t>> dbs;  // keys, keys with an expiry
  };
  auto st = std::make_shared<State>();
  st->text = std::move(s);
  st->dbs.resize(static_cast<size_t>(ctx.server->databases()));
  auto walk = std::make_shared<SlicedWalk>();
  walk->engine = ctx.engine;
  walk->visit = [st](const ItemRef& it) {
    int db;
    std::string_view k;
    DecodeDbKey(it.key(), &db, &k);
    if (db < 0 || static_cast<size_t>(db) >= st->dbs.size()) return;
    st->dbs[static_cast<size_t>(db)].first++;
    if (it.expires_at_unix() != 0) st->dbs[static_cast<size_t>(db)].second++;
  };
  walk->finish = [st](RespWriter& w) {
    std::string& out = st->text;
    out += "# Keyspace\r\n";
    for (size_t d = 0; d < st->dbs.size(); ++d) {
      if (st->dbs[d].first == 0) continue;
      std::string v = "keys=";
      AppendI64(v, st->dbs[d].first);
      v += ",expires=";
      AppendI64(v, st->dbs[d].second);
      v += ",avg_ttl=0";
      AddField(&out, "db" + std::to_string(d), v);
    }
    // Redis drops the last blank line (the keyspace section ends without one).
    w.Verbatim(out);
  };
  RunSlicedWalk(ctx, std::move(walk));
}

// --- CONFIG ---

struct ConfigParam {
  const char* name;
  std::atomic<int64_t> RespServer::*field;  // nullptr: special
  bool mutable_;
};

const ConfigParam kParams[] = {
    {"list-max-listpack-size", &RespServer::list_max_listpack_size, true},
    {"hash-max-listpack-entries", &RespServer::hash_max_listpack_entries, true},
    {"hash-max-listpack-value", &RespServer::hash_max_listpack_value, true},
    {"set-max-intset-entries", &RespServer::set_max_intset_entries, true},
    {"zset-max-listpack-entries", &RespServer::zset_max_listpack_entries, true},
    {"zset-max-listpack-value", &RespServer::zset_max_listpack_value, true},
    {"proto-max-bulk-len", &RespServer::proto_max_bulk_len, true},
    {"maxclients", &RespServer::maxclients, true},
    {"slowlog-log-slower-than", &RespServer::slowlog_log_slower_than, true},
    {"hash-max-ziplist-entries", &RespServer::hash_max_listpack_entries, true},
    {"hash-max-ziplist-value", &RespServer::hash_max_listpack_value, true},
    {"zset-max-ziplist-entries", &RespServer::zset_max_listpack_entries, true},
    {"zset-max-ziplist-value", &RespServer::zset_max_listpack_value, true},
    {"list-max-ziplist-size", &RespServer::list_max_listpack_size, true},
    {"databases", nullptr, false},
    {"maxmemory", nullptr, false},
    {"maxmemory-policy", nullptr, false},
    {"requirepass", nullptr, true},
    {"port", nullptr, false},
    {"save", nullptr, true},
    {"appendonly", nullptr, true},
    {"timeout", nullptr, true},
};

std::string ConfigValue(CommandContext& ctx, const ConfigParam& p) {
  std::string v;
  if (p.field != nullptr) {
    AppendI64(v, (ctx.server->*p.field).load(std::memory_order_relaxed));
    return v;
  }
  std::string_view n = p.name;
  if (n == "databases")
    AppendI64(v, ctx.server->databases());
  else if (n == "maxmemory")
    AppendU64(v, ctx.engine->options().mem_limit);
  else if (n == "maxmemory-policy")
    v = ctx.engine->options().evict_to_free ? "allkeys-lru" : "noeviction";
  else if (n == "requirepass")
    v = ctx.server->requirepass();
  else if (n == "port")
    AppendI64(v, ctx.server->options().port);
  else if (n == "appendonly")
    v = "no";
  else if (n == "timeout")
    v = "0";
  return v;
}

void CmdConfig(CommandContext& ctx) {
  std::string sub = ToLower(ctx.argv[1]);
  if (sub == "get") {
    if (ctx.argc() < 3) {
      SubArity(ctx);
      return;
    }
    std::vector<std::pair<std::string, std::string>> out;
    for (const ConfigParam& p : kParams) {
      bool alias = std::string_view(p.name).find("ziplist") != std::string_view::npos;
      for (size_t i = 2; i < ctx.argc(); ++i) {
        if (GlobMatch(ctx.argv[i], p.name, true) && (!alias || ctx.argv[i] == p.name)) {
          out.emplace_back(p.name, ConfigValue(ctx, p));
          break;
        }
      }
    }
    ctx.w->MapHeader(out.size());
    for (const auto& [k, v] : out) {
      ctx.w->Bulk(k);
      ctx.w->Bulk(v);
    }
  } else if (sub == "set") {
    if (ctx.argc() < 4 || ctx.argc() % 2 != 0) {
      SubArity(ctx);
      return;
    }
    for (size_t i = 2; i + 1 < ctx.argc(); i += 2) {
      std::string name = ToLower(ctx.argv[i]);
      const ConfigParam* found = nullptr;
      for (const ConfigParam& p : kParams)
        if (name == p.name) found = &p;
      if (found == nullptr) {
        std::string m = "ERR Unknown option or number of arguments for CONFIG SET - '";
        m.append(ctx.argv[i]);
        m += "'";
        ctx.Error(m);
        return;
      }
      if (!found->mutable_) {
        std::string m = "ERR CONFIG SET failed (possibly related to argument '";
        m += name;
        m += "') - can't set immutable config";
        ctx.Error(m);
        return;
      }
      if (found->field != nullptr) {
        int64_t v;
        if (!ParseStrictInt64(ctx.argv[i + 1], &v)) {
          std::string m = "ERR CONFIG SET failed (possibly related to argument '";
          m += name;
          m += "') - argument couldn't be parsed into an integer";
          ctx.Error(m);
          return;
        }
        (ctx.server->*found->field).store(v, std::memory_order_relaxed);
      } else if (name == "requirepass") {
        ctx.server->set_requirepass(std::string(ctx.argv[i + 1]));
      }
    }
    ctx.w->Ok();
  } else if (sub == "resetstat") {
    if (ctx.argc() != 2) {
      SubArity(ctx);
      return;
    }
    ctx.server->ResetStats();
    ctx.w->Ok();
  } else if (sub == "rewrite") {
    ctx.Error("ERR The server is running without a config file");
  } else if (sub == "help") {
    const std::string_view lines[] = {
        "CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "GET <pattern>",
        "    Return parameters matching the glob-like <pattern> and their values.",
        "SET <directive> <value>",
        "    Set the configuration <directive> to <value>.",
        "RESETSTAT",
        "    Reset statistics reported by the INFO command.",
        "HELP",
        "    Print this help."};
    ctx.w->ArrayHeader(std::size(lines));
    for (auto l : lines) ctx.w->Simple(l);
  } else {
    UnknownSubcommand(ctx);
  }
}

// --- COMMAND ---

void WriteFlags(CommandContext& ctx, const CommandSpec& s) {
  std::vector<const char*> f;
  if (s.flags & kCmdWrite) f.push_back("write");
  if (s.flags & kCmdReadonly) f.push_back("readonly");
  if (s.flags & kCmdDenyOom) f.push_back("denyoom");
  if (s.flags & kCmdAdmin) f.push_back("admin");
  if (s.flags & kCmdNoAuth) f.push_back("no_auth");
  if (s.flags & kCmdLoading) f.push_back("loading");
  if (s.flags & kCmdStale) f.push_back("stale");
  if (s.flags & kCmdFast) f.push_back("fast");
  if (s.flags & kCmdNoMulti) f.push_back("no_multi");
  if (s.keys != nullptr) f.push_back("movablekeys");
  ctx.w->SetHeader(f.size());
  for (const char* x : f) ctx.w->Simple(x);
}

void WriteCommandInfo(CommandContext& ctx, const CommandSpec& s) {
  ctx.w->ArrayHeader(10);
  ctx.w->Bulk(s.name);
  ctx.w->Integer(s.arity);
  WriteFlags(ctx, s);
  ctx.w->Integer(s.first_key);
  ctx.w->Integer(s.last_key);
  ctx.w->Integer(s.step);
  ctx.w->SetHeader(1);
  ctx.w->Simple(std::string("@") + s.group);
  ctx.w->SetHeader(0);
  ctx.w->ArrayHeader(0);
  ctx.w->ArrayHeader(0);
}

void CmdCommand(CommandContext& ctx) {
  const CommandTable& t = CommandTable::Get();
  if (ctx.argc() == 1) {
    ctx.w->ArrayHeader(t.size());
    for (const auto& s : t.all()) WriteCommandInfo(ctx, s);
    return;
  }
  std::string sub = ToLower(ctx.argv[1]);
  if (sub == "count") {
    if (ctx.argc() != 2) {
      SubArity(ctx);
      return;
    }
    ctx.w->Integer(static_cast<int64_t>(t.size()));
  } else if (sub == "info") {
    if (ctx.argc() == 2) {
      ctx.w->ArrayHeader(t.size());
      for (const auto& s : t.all()) WriteCommandInfo(ctx, s);
      return;
    }
    ctx.w->ArrayHeader(ctx.argc() - 2);
    for (size_t i = 2; i < ctx.argc(); ++i) {
      const CommandSpec* s = t.Find(ctx.argv[i]);
      if (s == nullptr)
        ctx.w->Null();
      else
        WriteCommandInfo(ctx, *s);
    }
  } else if (sub == "docs") {
    std::vector<const CommandSpec*> list;
    if (ctx.argc() == 2) {
      for (const auto& s : t.all()) list.push_back(&s);
    } else {
      for (size_t i = 2; i < ctx.argc(); ++i) {
        if (const CommandSpec* s = t.Find(ctx.argv[i])) list.push_back(s);
      }
    }
    ctx.w->MapHeader(list.size());
    for (const CommandSpec* s : list) {
      ctx.w->Bulk(s->name);
      ctx.w->MapHeader(3);
      ctx.w->Bulk("summary");
      ctx.w->Bulk(s->summary);
      ctx.w->Bulk("since");
      ctx.w->Bulk(s->since);
      ctx.w->Bulk("group");
      ctx.w->Bulk(s->group);
    }
  } else if (sub == "list") {
    std::string_view pattern;
    bool has = false;
    if (ctx.argc() == 5 && EqualsIgnoreCase(ctx.argv[2], "filterby") &&
        EqualsIgnoreCase(ctx.argv[3], "pattern")) {
      pattern = ctx.argv[4];
      has = true;
    } else if (ctx.argc() != 2) {
      ctx.SyntaxError();
      return;
    }
    std::vector<const char*> names;
    for (const auto& s : t.all())
      if (!has || GlobMatch(pattern, s.name, true)) names.push_back(s.name);
    ctx.w->ArrayHeader(names.size());
    for (const char* n : names) ctx.w->Bulk(n);
  } else if (sub == "getkeys") {
    if (ctx.argc() < 4) {
      SubArity(ctx);
      return;
    }
    const CommandSpec* s = t.Find(ctx.argv[2]);
    if (s == nullptr) {
      ctx.Error("ERR Invalid command specified");
      return;
    }
    auto args = ctx.argv.subspan(2);
    int argc = static_cast<int>(args.size());
    if ((s->arity > 0 && argc != s->arity) || argc < -s->arity) {
      ctx.Error("ERR Invalid number of arguments specified for command");
      return;
    }
    std::vector<size_t> idx;
    CommandTable::KeyIndexes(*s, args, &idx);
    if (idx.empty()) {
      ctx.Error("ERR The command has no key arguments");
      return;
    }
    ctx.w->ArrayHeader(idx.size());
    for (size_t i : idx) ctx.w->Bulk(args[i]);
  } else {
    UnknownSubcommand(ctx);
  }
}

// --- OBJECT / MEMORY / DEBUG ---

std::string Encoding(const ItemRef& it) {
  if (it.type() != engine::ValueType::kString) return CollectionEncoding(it);
  std::string v;
  it.CopyValue(&v);
  int64_t n;
  if (v.size() <= 20 && ParseStrictInt64(v, &n)) return "int";
  return v.size() <= 44 ? "embstr" : "raw";
}

void CmdObject(CommandContext& ctx) {
  std::string sub = ToLower(ctx.argv[1]);
  if (sub == "help") {
    const std::string_view lines[] = {
        "OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "ENCODING <key>",
        "    Return the kind of internal representation used in order to store the value",
        "    associated with a <key>.",
        "FREQ <key>",
        "    Return the access frequency index of the <key>. The returned integer is",
        "    proportional to the logarithm of the recent access frequency of the key.",
        "IDLETIME <key>",
        "    Return the idle time of the <key>, that is the approximated number of",
        "    seconds elapsed since the last access to the key.",
        "REFCOUNT <key>",
        "    Return the number of references of the value associated with the specified",
        "    <key>.",
        "HELP",
        "    Print this help."};
    ctx.w->ArrayHeader(std::size(lines));
    for (auto l : lines) ctx.w->Simple(l);
    return;
  }
  if (sub != "encoding" && sub != "freq" && sub != "idletime" && sub != "refcount") {
    UnknownSubcommand(ctx);
    return;
  }
  if (ctx.argc() != 3) {
    SubArity(ctx);
    return;
  }
  std::string key = ctx.Key(2);
  engine::KeyLockSet lock(ctx.engine, key);
  ItemRef it = ctx.engine->GetLocked(key, ctx.ts, false);
  CountKeyspace(ctx, static_cast<bool>(it));
  if (!it) {
    ctx.w->Null();
    return;
  }
  if (sub == "encoding") {
    ctx.w->Bulk(Encoding(it));
  } else if (sub == "freq") {
    ctx.Error(
        "ERR An LFU maxmemory policy is not selected, access frequency not tracked. "
        "Please note that when switching between policies at runtime LRU and LFU data "
        "will take some time to adjust.");
  } else if (sub == "idletime") {
    ctx.w->Integer(0);
  } else {
    ctx.w->Integer(1);
  }
}

int64_t MemoryOf(const ItemRef& it) {
  int64_t base = static_cast<int64_t>(it.key().size()) + 48;
  if (it.is_heap()) return base + static_cast<int64_t>(it.heap()->MemoryUsage());
  return base + static_cast<int64_t>(it.value_length());
}

void CmdMemory(CommandContext& ctx) {
  std::string sub = ToLower(ctx.argv[1]);
  if (sub == "usage") {
    if (ctx.argc() < 3) {
      SubArity(ctx);
      return;
    }
    for (size_t i = 3; i < ctx.argc(); ++i) {
      int64_t n;
      if (EqualsIgnoreCase(ctx.argv[i], "samples") && i + 1 < ctx.argc()) {
        if (!ArgInt(ctx, ctx.argv[++i], &n)) return;
      } else {
        ctx.SyntaxError();
        return;
      }
    }
    std::string key = ctx.Key(2);
    engine::KeyLockSet lock(ctx.engine, key);
    ItemRef it = ctx.engine->GetLocked(key, ctx.ts, false);
    if (!it)
      ctx.w->Null();
    else
      ctx.w->Integer(MemoryOf(it));
  } else if (sub == "help") {
    const std::string_view lines[] = {
        "MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "USAGE <key> [SAMPLES <count>]",
        "    Return memory in bytes used by <key> and its value. Nested values are",
        "    sampled up to <count> times (default: 5, 0 means sample all).",
        "HELP",
        "    Print this help."};
    ctx.w->ArrayHeader(std::size(lines));
    for (auto l : lines) ctx.w->Simple(l);
  } else {
    UnknownSubcommand(ctx);
  }
}

void CmdDebug(CommandContext& ctx) {
  std::string sub = ToLower(ctx.argv[1]);
  if (sub == "sleep" && ctx.argc() == 3) {
    double secs;
    if (!ParseDouble(ctx.argv[2], &secs) || secs < 0) secs = 0;
    std::this_thread::sleep_for(std::chrono::microseconds(static_cast<int64_t>(secs * 1e6)));
    ctx.w->Ok();
  } else if (sub == "set-active-expire" && ctx.argc() == 3) {
    ctx.server->active_expire.store(ctx.argv[2] != "0", std::memory_order_relaxed);
    ctx.w->Ok();
  } else if (sub == "object" && ctx.argc() == 3) {
    std::string key = ctx.Key(2);
    engine::KeyLockSet lock(ctx.engine, key);
    ItemRef it = ctx.engine->GetLocked(key, ctx.ts, false);
    if (!it) {
      ctx.Error("ERR no such key");
      return;
    }
    char buf[256];
    std::snprintf(buf, sizeof buf,
                  "Value at:%p refcount:1 encoding:%s serializedlength:%lld lru:0 "
                  "lru_seconds_idle:0",
                  static_cast<const void*>(it.raw()), Encoding(it).c_str(),
                  static_cast<long long>(MemoryOf(it)));
    ctx.w->Simple(buf);
  } else if (sub == "help") {
    const std::string_view lines[] = {
        "DEBUG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "OBJECT <key>",
        "    Show low level info about the <key> and associated value.",
        "SET-ACTIVE-EXPIRE <0|1>",
        "    Setting it to 0 disables expiring keys in background.",
        "SLEEP <seconds>",
        "    Stop the server for <seconds>. Decimals allowed.",
        "HELP",
        "    Print this help."};
    ctx.w->ArrayHeader(std::size(lines));
    for (auto l : lines) ctx.w->Simple(l);
  } else {
    std::string m = "ERR unknown subcommand or wrong number of arguments for '";
    m.append(ctx.argv[1]);
    m += "'. Try DEBUG HELP.";
    ctx.Error(m);
  }
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

// CLIENT KILL of a connection that may live on another worker: ask its
// owner, answer when the owner replies. Nothing waits.
void KillAsync(CommandContext& ctx, net::ConnControl* self, uint64_t target, bool new_form) {
  const uint64_t me = self->id();
  if (target == me) {  // as Redis: the reply goes out, then the close
    ctx.w->Integer(1);
    self->CloseSoon();
    return;
  }
  const int proto = ctx.conn->identity().proto();
  net::WorkerGroup& group = self->group();
  self->Suspend();
  net::Worker& owner = group.worker(group.OwnerOf(target));
  net::Worker* asker = net::Worker::Current();
  owner.Post([&owner, asker, me, target, new_form, proto] {
    const bool found = owner.RequestClose(target);
    asker->Post([asker, me, found, new_form, proto] {
      net::Connection* c = asker->Find(me);
      if (c == nullptr) return;
      RespWriter w(&c->output(), proto);
      if (found) {
        w.Integer(1);
      } else if (new_form) {
        w.Integer(0);
      } else {
        w.Error("ERR No such client");
      }
      c->OutputAdded();
      c->Resume();
    });
  });
}

void CmdClient(CommandContext& ctx) {
  std::string sub = ToLower(ctx.argv[1]);
  Identity& id = ctx.conn->identity();
  if (sub == "id" && ctx.argc() == 2) {
    ctx.w->Integer(static_cast<int64_t>(id.id()));
  } else if (sub == "setname" && ctx.argc() == 3) {
    for (char c : ctx.argv[2]) {
      if (c < '!' || c > '~') {
        ctx.Error("ERR Client names cannot contain spaces, newlines or special characters.");
        return;
      }
    }
    id.SetName(ctx.argv[2]);
    ctx.w->Ok();
  } else if (sub == "getname" && ctx.argc() == 2) {
    if (id.name().empty())
      ctx.w->Null();
    else
      ctx.w->Bulk(id.name());
  } else if ((sub == "info" && ctx.argc() == 2) || (sub == "list" && ctx.argc() >= 2)) {
    std::string line = "id=";
    AppendU64(line, id.id());
    line += " addr=" + id.addr() + " laddr= fd=0 name=" + id.name() + " age=";
    AppendI64(line, ctx.engine->clock()->UnixSeconds() - ctx.session->created_unix());
    line += " idle=0 flags=";
    line += ctx.conn->in_transaction() ? "x" : "N";
    line += " db=";
    AppendI64(line, id.db());
    line += " sub=0 psub=0 ssub=0 multi=";
    AppendI64(line, ctx.conn->in_transaction()
                        ? static_cast<int64_t>(ctx.conn->txn().queued().size())
                        : -1);
    line +=
        " qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0 rbp=0 obl=0 oll=0 omem=0 "
        "tot-mem=0 events=r cmd=client|" +
        sub + " user=" + id.user() + " redir=-1 resp=";
    AppendI64(line, id.proto());
    line += "\n";
    ctx.w->Verbatim(line);
  } else if ((sub == "setinfo" && ctx.argc() == 4) || (sub == "no-evict" && ctx.argc() == 3) ||
             (sub == "no-touch" && ctx.argc() == 3)) {
    ctx.w->Ok();
  } else if (sub == "kill" && ctx.argc() >= 3) {
    int64_t target = -1;
    if (ctx.argc() == 4 && EqualsIgnoreCase(ctx.argv[2], "id"))
      ParseStrictInt64(ctx.argv[3], &target);
    net::ConnControl* self = ctx.session->control();
    if (target > 0 && self != nullptr) {
      KillAsync(ctx, self, static_cast<uint64_t>(target), ctx.argc() == 4);
      return;
    }
    net::ServerServices* sv = ctx.server->services();
    if (target > 0 && sv != nullptr && sv->CloseConnection(static_cast<uint64_t>(target))) {
      ctx.w->Integer(1);
    } else if (ctx.argc() == 4) {
      ctx.w->Integer(0);
    } else {
      ctx.Error("ERR No such client");
    }
  } else if (sub == "id" || sub == "setname" || sub == "getname" || sub == "info" ||
             sub == "setinfo" || sub == "no-evict" || sub == "no-touch" || sub == "kill") {
    SubArity(ctx);
  } else {
    UnknownSubcommand(ctx);
  }
}

}  // namespace

void RegisterServerCommands(std::vector<CommandSpec>* t) {
  auto add = [t](const char* n, int ar, uint32_t f, CommandFn fn, const char* group,
                 const char* sum, const char* since) {
    t->push_back({n, ar, f, 0, 0, 0, fn, nullptr, group, sum, since});
  };
  const uint32_t conn = kCmdFast | kCmdLoading | kCmdStale;
  add("ping", -1, conn | kCmdPubsubOk, CmdPing, "connection", "Returns the server's liveliness response.",
      "1.0.0");
  add("echo", 2, conn, CmdEcho, "connection", "Returns the given string.", "1.0.0");
  add("quit", -1, conn | kCmdNoAuth | kCmdNoQueue | kCmdPubsubOk, CmdQuit, "connection", "Closes the connection.",
      "1.0.0");
  add("reset", 1, conn | kCmdNoAuth | kCmdNoQueue | kCmdPubsubOk, CmdReset, "connection", "Resets the connection.",
      "6.2.0");
  add("auth", -2, conn | kCmdNoAuth, CmdAuth, "connection", "Authenticates the connection.",
      "1.0.0");
  add("hello", -1, conn | kCmdNoAuth, CmdHello, "connection", "Handshakes with the Redis server.",
      "6.0.0");
  add("select", 2, conn, CmdSelect, "connection", "Changes the selected database.", "1.0.0");
  add("client", -2, kCmdLoading | kCmdStale, CmdClient, "connection",
      "A container for client connection commands.", "2.4.0");
  add("swapdb", 3, kCmdWrite | kCmdFast | kCmdGlobal, CmdSwapDb, "server",
      "Swaps two Redis databases.", "4.0.0");
  add("dbsize", 1, kCmdReadonly | kCmdFast | kCmdGlobal, CmdDbSize, "server",
      "Returns the number of keys in the database.", "1.0.0");
  add("flushdb", -1, kCmdWrite | kCmdGlobal, CmdFlushDb, "server",
      "Remove all keys from the current database.", "1.0.0");
  add("flushall", -1, kCmdWrite | kCmdGlobal, CmdFlushAll, "server",
      "Removes all keys from all databases.", "1.0.0");
  add("info", -1, kCmdLoading | kCmdStale | kCmdGlobal, CmdInfo, "server",
      "Returns information and statistics about the server.", "1.0.0");
  add("config", -2, kCmdAdmin | kCmdLoading | kCmdStale, CmdConfig, "server",
      "A container for server configuration commands.", "2.0.0");
  add("command", -1, kCmdLoading | kCmdStale, CmdCommand, "server",
      "Returns detailed information about all commands.", "2.8.13");
  add("time", 1, kCmdFast | kCmdLoading | kCmdStale, CmdTime, "server", "Returns the server time.",
      "2.6.0");
  add("object", -2, kCmdReadonly | kCmdGlobal, CmdObject, "generic",
      "A container for object introspection commands.", "2.2.3");
  add("memory", -2, kCmdReadonly | kCmdGlobal, CmdMemory, "server",
      "A container for memory diagnostics commands.", "4.0.0");
  add("debug", -2, kCmdAdmin | kCmdGlobal, CmdDebug, "server",
      "A container for debugging commands.", "1.0.0");
  add("shutdown", -1, kCmdAdmin | kCmdNoMulti | kCmdLoading | kCmdStale, CmdShutdown, "server",
      "Synchronously saves the database(s) to disk and shuts down the Redis server.", "1.0.0");
}

}  // namespace trove::resp
