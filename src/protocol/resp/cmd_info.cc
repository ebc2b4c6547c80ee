// INFO and its sections (the keyspace section counts in slices).
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
#include "protocol/resp/collections.h"
#include "protocol/resp/command_table.h"
#include "protocol/resp/keyspace.h"
#include "protocol/resp/keyspace_walk.h"
#include "protocol/resp/resp_parser.h"
#include "protocol/resp/resp_server.h"
#include "protocol/resp/server_commands.h"
#include "protocol/resp/session.h"

namespace trove::resp {
namespace {

using engine::ItemRef;

// --- INFO ---

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
  int64_t clients = 0, pubsub_clients = 0;
  std::vector<std::pair<uint64_t, uint64_t>> per_cmd(CommandTable::Get().size());
  std::vector<uint64_t> rejected(CommandTable::Get().size());
  ctx.server->ForEachWorkerStats([&](const WorkerStats& w) {
    hits += w.keyspace_hits.load(std::memory_order_relaxed);
    misses += w.keyspace_misses.load(std::memory_order_relaxed);
    cmds += w.total_commands.load(std::memory_order_relaxed);
    conns += w.total_connections.load(std::memory_order_relaxed);
    clients += w.connected_clients.load(std::memory_order_relaxed);
    pubsub_clients += w.pubsub_clients.load(std::memory_order_relaxed);
    errors += w.error_replies.load(std::memory_order_relaxed);
    in_bytes += w.net_input_bytes.load(std::memory_order_relaxed);
    for (size_t i = 0; i < w.cmds.size() && i < per_cmd.size(); ++i) {
      per_cmd[i].first += w.cmds[i].calls.load(std::memory_order_relaxed);
      per_cmd[i].second += w.cmds[i].usec.load(std::memory_order_relaxed);
      rejected[i] += w.cmds[i].rejected.load(std::memory_order_relaxed);
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
    // Trove's own field: Redis shows protected-mode only in CONFIG GET.
    AddField(&s, "protected_mode", ctx.server->protected_mode().enabled() ? "yes" : "no");
    s += "\r\n";
  }
  if (show("clients", true)) {
    s += "# Clients\r\n";
    AddField(&s, "connected_clients", clients);
    AddField(&s, "maxclients",
             static_cast<int64_t>(ctx.server->port_limit().max.load(std::memory_order_relaxed)));
    // Each worker's housekeeping tick samples its connections' buffers into
    // per-second slots (net::Worker::RecentMaxBuffers); the recent peak is
    // the largest over every worker's slots. Relaxed reads, no lock.
    uint64_t max_in = 0, max_out = 0;
    if (net::ConnControl* self = ctx.session != nullptr ? ctx.session->control() : nullptr) {
      net::WorkerGroup& g = self->group();
      for (size_t i = 0; i < g.size(); ++i) {
        uint64_t in, out;
        g.worker(i).RecentMaxBuffers(&in, &out);
        max_in = std::max(max_in, in);
        max_out = std::max(max_out, out);
      }
    }
    AddField(&s, "client_recent_max_input_buffer", static_cast<int64_t>(max_in));
    AddField(&s, "client_recent_max_output_buffer", static_cast<int64_t>(max_out));
    // Clients in a blocking command, and those waiting out a CLIENT PAUSE (as Redis).
    AddField(&s, "blocked_clients",
             ctx.server->blocks().blocked_clients() +
                 ctx.server->pause().held.load(std::memory_order_relaxed));
    AddField(&s, "tracking_clients", static_cast<int64_t>(ctx.server->tracking().clients()));
    AddField(&s, "pubsub_clients", pubsub_clients);
    AddField(&s, "watching_clients",
             static_cast<int64_t>(ctx.server->watches().watching_clients()));
    // Clients blocked with a timeout (Redis's clients_timeout_table).
    AddField(&s, "clients_in_timeout_table", ctx.server->blocks().timed_clients());
    AddField(&s, "total_watched_keys",
             static_cast<int64_t>(ctx.server->watches().total_watched_keys()));
    AddField(&s, "total_blocking_keys", ctx.server->blocks().blocking_keys());
    // Keys a client stays blocked on even when they are deleted (XREADGROUP,
    // modules in Redis): no Trove command blocks that way.
    AddField(&s, "total_blocking_keys_on_nokey", 0);
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
    // Trove's own: the client-tracking table's estimated bytes.
    AddField(&s, "mem_tracking_table", static_cast<int64_t>(ctx.server->tracking().memory_bytes()));
    AddField(&s, "maxmemory", static_cast<int64_t>(ctx.engine->mem_limit()));
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
    // maxclients refusals and protected-mode refusals, as Redis counts both.
    AddField(&s, "rejected_connections",
             static_cast<int64_t>(ctx.server->port_limit().rejected.load(std::memory_order_relaxed) +
                                  ctx.server->protected_mode().refused()));
    AddField(&s, "total_net_input_bytes", static_cast<int64_t>(in_bytes));
    AddField(&s, "keyspace_hits", static_cast<int64_t>(hits));
    AddField(&s, "keyspace_misses", static_cast<int64_t>(misses));
    AddField(&s, "total_error_replies", static_cast<int64_t>(errors));
    AddField(&s, "client_output_buffer_limit_disconnections",
             static_cast<int64_t>(
                 ctx.server->obuf_limit_disconnections.load(std::memory_order_relaxed)));
    // Trove's own: expired/evicted notifications lost to a full reporter queue.
    AddField(&s, "keyspace_events_dropped", static_cast<int64_t>(ctx.server->key_events().dropped()));
    for (const auto& [k, v] : ctx.engine->Stats()) {
      if (k == "evictions") AddField(&s, "evicted_keys", v);
    }
    AddField(&s, "expired_keys",
             static_cast<int64_t>(ctx.engine->ExpiredTotal() -
                                  ctx.server->expired_keys_base.load(std::memory_order_relaxed)));
    const acl::AclStore& acl = ctx.server->acl();
    AddField(&s, "acl_access_denied_auth", static_cast<int64_t>(acl.denied(acl::Denied::kAuth)));
    AddField(&s, "acl_access_denied_cmd", static_cast<int64_t>(acl.denied(acl::Denied::kCmd)));
    AddField(&s, "acl_access_denied_key", static_cast<int64_t>(acl.denied(acl::Denied::kKey)));
    AddField(&s, "acl_access_denied_channel",
             static_cast<int64_t>(acl.denied(acl::Denied::kChannel)));
    // Trove's: rate-limit refusals per user, both protocols.
    for (const auto& r : acl.RateRejected()) {
      AddField(&s, "ratelimit_rejected_" + r.user,
               "cps=" + std::to_string(r.cps) + ",bps=" + std::to_string(r.bps));
    }
    const Tracking& tr = ctx.server->tracking();
    AddField(&s, "tracking_total_keys", static_cast<int64_t>(tr.total_keys()));
    AddField(&s, "tracking_total_items", static_cast<int64_t>(tr.total_items()));
    AddField(&s, "tracking_total_prefixes", static_cast<int64_t>(tr.total_prefixes()));
    s += "\r\n";
  }
  if (show("replication", true)) s += "# Replication\r\nrole:master\r\nconnected_slaves:0\r\n\r\n";
  if (show("cpu", true)) s += "# CPU\r\n\r\n";
  if (show("commandstats", false)) {
    s += "# Commandstats\r\n";
    const auto& specs = CommandTable::Get().all();
    for (size_t i = 0; i < specs.size(); ++i) {
      if (per_cmd[i].first == 0 && rejected[i] == 0) continue;
      std::string v = "calls=";
      AppendU64(v, per_cmd[i].first);
      v += ",usec=";
      AppendU64(v, per_cmd[i].second);
      char buf[64];
      std::snprintf(buf, sizeof buf, ",usec_per_call=%.2f",
                    per_cmd[i].first == 0 ? 0.0
                                          : static_cast<double>(per_cmd[i].second) /
                                                static_cast<double>(per_cmd[i].first));
      v += buf;
      v += ",rejected_calls=";
      AppendU64(v, rejected[i]);
      v += ",failed_calls=0";
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

}  // namespace

void RegisterInfoCommands(std::vector<CommandSpec>* t) {
  auto add = [t](const char* n, int ar, uint32_t f, CommandFn fn, const char* group,
                 const char* sum, const char* since) {
    t->push_back({n, ar, f, 0, 0, 0, fn, nullptr, group, sum, since});
  };
  add("info", -1, kCmdLoading | kCmdStale | kCmdGlobal, CmdInfo, "server",
      "Returns information and statistics about the server.", "1.0.0");
}

}  // namespace trove::resp
