// INFO and its sections (the keyspace section counts in slices; the
// per-command ones are info_command_stats.cc); its memory figures are
// MEMORY's too (memory_figures.h). Runs on the connection's worker.
#include <fcntl.h>
#include <malloc.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "common/str_append.h"
#include "net/worker.h"
#include "protocol/resp/commands/info_internal.h"
#include "protocol/resp/commands/scripting_internal.h"
#include "protocol/resp/commands/server_commands.h"
#include "protocol/resp/core/client.h"
#include "protocol/resp/core/command_table.h"
#include "protocol/resp/core/keyspace_walk.h"
#include "protocol/resp/core/resp_parser.h"
#include "protocol/resp/core/resp_server.h"
#include "protocol/resp/services/latency_histogram.h"
#include "protocol/resp/types/collections.h"
#include "protocol/resp/types/keyspace.h"
#include "protocol/resp/types/memory_figures.h"

namespace trove::resp {
namespace {

using engine::ItemRef;

// --- INFO sections ---

// The counters every worker keeps, summed.
struct WorkerTotals {
  uint64_t hits = 0, misses = 0, cmds = 0, conns = 0, errors = 0, in_bytes = 0;
  int64_t clients = 0, pubsub_clients = 0;
};

WorkerTotals SumWorkers(const RespServer& server) {
  WorkerTotals t;
  // One captured reference: std::function keeps it inline, no allocation.
  server.ForEachWorkerStats([&t](const WorkerStats& w) {
    t.hits += w.keyspace_hits.load(std::memory_order_relaxed);
    t.misses += w.keyspace_misses.load(std::memory_order_relaxed);
    t.cmds += w.total_commands.load(std::memory_order_relaxed);
    t.conns += w.total_connections.load(std::memory_order_relaxed);
    t.clients += w.connected_clients.load(std::memory_order_relaxed);
    t.pubsub_clients += w.pubsub_clients.load(std::memory_order_relaxed);
    t.errors += w.error_replies.load(std::memory_order_relaxed);
    t.in_bytes += w.net_input_bytes.load(std::memory_order_relaxed);
  });
  return t;
}

void AddU64(std::string* s, std::string_view k, uint64_t v) {
  AddField(s, k, static_cast<int64_t>(v));
}

void ServerSection(CommandContext& ctx, std::string* s) {
  const int64_t now = ctx.engine->clock()->UnixSeconds();
  *s += "# Server\r\n";
  AddField(s, "redis_version", kRedisVersion);
  AddField(s, "trove_version", "0.1.0");
  AddField(s, "redis_mode", "standalone");
  AddField(s, "os", "Linux");
  AddField(s, "arch_bits", 64);
  AddField(s, "multiplexing_api", "epoll");
  AddField(s, "process_id", static_cast<int64_t>(getpid()));
  AddField(s, "tcp_port", ctx.server->bound_port());
  AddField(s, "uptime_in_seconds", now - ctx.server->start_unix());
  AddField(s, "uptime_in_days", (now - ctx.server->start_unix()) / 86400);
  AddField(s, "executable", "trove");
  // Trove's own field: Redis shows protected-mode only in CONFIG GET.
  AddField(s, "protected_mode", ctx.server->protected_mode().enabled() ? "yes" : "no");
  // Trove's TLS fields: the TLS port (0: none), how long ago its context
  // was (re)built, and the client certificate rule.
  const int tls_port = ctx.server->tls().port();
  AddField(s, "tls_port", static_cast<int64_t>(tls_port));
  if (tls_port != 0) {
    const int64_t loaded = ctx.server->tls().holder()->loaded_at();
    AddField(s, "tls_seconds_since_cert_load",
             SystemClock::Default()->MonoNanos() / 1000000000 - loaded);
    AddField(s, "tls_auth_clients", ctx.server->tls().Get("tls-auth-clients"));
  }
}

void ClientsSection(CommandContext& ctx, std::string* s) {
  const WorkerTotals t = SumWorkers(*ctx.server);
  *s += "# Clients\r\n";
  AddField(s, "connected_clients", t.clients);
  AddField(s, "maxclients",
           static_cast<int64_t>(ctx.server->port_limit().max.load(std::memory_order_relaxed)));
  // Each worker's housekeeping tick samples its connections' buffers into
  // per-second slots (net::Worker::RecentMaxBuffers); the recent peak is
  // the largest over every worker's slots. Relaxed reads, no lock.
  uint64_t max_in = 0, max_out = 0;
  if (net::ConnControl* self = ctx.client != nullptr ? ctx.client->control() : nullptr) {
    net::WorkerGroup& g = self->group();
    for (size_t i = 0; i < g.size(); ++i) {
      uint64_t in, out;
      g.worker(i).RecentMaxBuffers(&in, &out);
      max_in = std::max(max_in, in);
      max_out = std::max(max_out, out);
    }
  }
  AddU64(s, "client_recent_max_input_buffer", max_in);
  AddU64(s, "client_recent_max_output_buffer", max_out);
  // Clients in a blocking command, and those waiting out a CLIENT PAUSE (as Redis).
  AddField(s, "blocked_clients",
           ctx.server->blocks().blocked_clients() +
               ctx.server->pause().held.load(std::memory_order_relaxed));
  AddU64(s, "tracking_clients", ctx.server->tracking().clients());
  AddField(s, "pubsub_clients", t.pubsub_clients);
  AddU64(s, "watching_clients", ctx.server->watches().watching_clients());
  // Clients blocked with a timeout (Redis's clients_timeout_table).
  AddField(s, "clients_in_timeout_table", ctx.server->blocks().timed_clients());
  AddU64(s, "total_watched_keys", ctx.server->watches().total_watched_keys());
  AddField(s, "total_blocking_keys", ctx.server->blocks().blocking_keys());
  // Keys a client stays blocked on even when they are deleted (XREADGROUP,
  // modules in Redis): no Trove command blocks that way.
  AddField(s, "total_blocking_keys_on_nokey", 0);
}

void MemorySection(CommandContext& ctx, std::string* s) {
  const MemoryFigures m = ReadMemory(*ctx.engine);
  const int64_t rss = ResidentBytes();
  *s += "# Memory\r\n";
  AddField(s, "used_memory", m.used);
  AddField(s, "used_memory_rss", rss);
  AddField(s, "used_memory_dataset", m.dataset);
  // Trove's own: the client-tracking table's estimated bytes.
  AddU64(s, "mem_tracking_table", ctx.server->tracking().memory_bytes());
  // The cached script bodies (EVAL, SCRIPT LOAD): their count and bytes.
  // One Lua VM a worker serves scripts and functions alike: its memory is
  // reported once, as used_memory_vm_eval (used_memory_lua, Redis's older
  // name), and used_memory_vm_functions is 0.
  const int64_t vm = ScriptVmBytes();
  AddU64(s, "used_memory_lua", static_cast<uint64_t>(vm));
  AddU64(s, "used_memory_vm_eval", static_cast<uint64_t>(vm));
  AddU64(s, "used_memory_scripts_eval", ctx.server->scripts().bytes());
  AddU64(s, "number_of_cached_scripts", ctx.server->scripts().count());
  AddU64(s, "number_of_functions", ctx.server->functions().function_count());
  AddU64(s, "number_of_libraries", ctx.server->functions().library_count());
  AddU64(s, "used_memory_vm_functions", 0);
  AddU64(s, "used_memory_vm_total", static_cast<uint64_t>(vm));
  AddU64(s, "used_memory_functions", ctx.server->functions().bytes());
  AddU64(s, "used_memory_scripts",
         ctx.server->scripts().bytes() + ctx.server->functions().bytes());
  AddU64(s, "maxmemory", ctx.engine->mem_limit());
  AddField(s, "maxmemory_policy", ctx.engine->evict_to_free() ? "allkeys-lru" : "noeviction");
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", Ratio(rss, m.used));
  AddField(s, "mem_fragmentation_ratio", buf);
  // Trove frees removed values at once (no lazy-free thread).
  *s += "lazyfree_pending_objects:0\r\nlazyfreed_objects:0\r\n";
  AddField(s, "mem_allocator", "libc");
}

// Trove keeps nothing on disk: no save ever ran or runs, and the start
// stands for the last save, as LASTSAVE answers (commands/server.cc). The
// changes since then are every worker's dirty counter (WorkerStats).
void PersistenceSection(CommandContext& ctx, std::string* s) {
  uint64_t dirty = 0;
  ctx.server->ForEachWorkerStats(
      [&dirty](const WorkerStats& w) { dirty += w.dirty.load(std::memory_order_relaxed); });
  *s += "# Persistence\r\nloading:0\r\nasync_loading:0\r\n";
  AddU64(s, "rdb_changes_since_last_save", dirty);
  *s += "rdb_bgsave_in_progress:0\r\n";
  AddField(s, "rdb_last_save_time", ctx.server->start_unix());
  *s +=
      "rdb_last_bgsave_status:ok\r\nrdb_saves:0\r\naof_enabled:0\r\naof_rewrite_in_progress:0\r\n";
}

void StatsSection(CommandContext& ctx, std::string* s) {
  const WorkerTotals t = SumWorkers(*ctx.server);
  *s += "# Stats\r\n";
  AddU64(s, "total_connections_received", t.conns);
  AddU64(s, "total_commands_processed", t.cmds);
  // maxclients refusals and protected-mode refusals, as Redis counts both.
  AddU64(s, "rejected_connections",
         ctx.server->port_limit().rejected.load(std::memory_order_relaxed) +
             ctx.server->protected_mode().refused());
  AddU64(s, "total_net_input_bytes", t.in_bytes);
  AddU64(s, "keyspace_hits", t.hits);
  AddU64(s, "keyspace_misses", t.misses);
  AddU64(s, "total_error_replies", t.errors);
  AddU64(s, "client_output_buffer_limit_disconnections",
         ctx.server->obuf_limit_disconnections.load(std::memory_order_relaxed));
  // Trove's own: expired/evicted notifications lost to a full reporter queue.
  AddU64(s, "keyspace_events_dropped", ctx.server->key_events().dropped());
  for (const auto& [k, v] : ctx.engine->Stats()) {
    if (k == "evictions") AddField(s, "evicted_keys", v);
  }
  AddU64(
      s, "expired_keys",
      ctx.engine->ExpiredTotal() - ctx.server->expired_keys_base.load(std::memory_order_relaxed));
  // Redis 7.4: hash fields deleted by their TTL (lazy, active, or HEXPIRE
  // with a time in the past).
  AddU64(s, "expired_subkeys", ctx.server->hash_field_expiry().expired_fields());
  AddU64(s, "evicted_scripts", ctx.server->scripts().evicted());
  const acl::AclStore& acl = ctx.server->acl();
  AddU64(s, "acl_access_denied_auth", acl.denied(acl::Denied::kAuth));
  AddU64(s, "acl_access_denied_cmd", acl.denied(acl::Denied::kCmd));
  AddU64(s, "acl_access_denied_key", acl.denied(acl::Denied::kKey));
  AddU64(s, "acl_access_denied_channel", acl.denied(acl::Denied::kChannel));
  AddU64(s, "acl_access_denied_tls_cert", acl.denied(acl::Denied::kTlsCert));
  // Trove's: rate-limit refusals per user, both protocols.
  for (const auto& r : acl.RateRejected()) {
    *s += "ratelimit_rejected_";
    *s += r.user;
    *s += ":cps=";
    AppendU64(*s, r.cps);
    *s += ",bps=";
    AppendU64(*s, r.bps);
    *s += "\r\n";
  }
  const Tracking& tr = ctx.server->tracking();
  AddU64(s, "tracking_total_keys", tr.total_keys());
  AddU64(s, "tracking_total_items", tr.total_items());
  AddU64(s, "tracking_total_prefixes", tr.total_prefixes());
}

// No replicas and no backlog: a master that never replicated.
void ReplicationSection(CommandContext&, std::string* s) {
  *s +=
      "# Replication\r\nrole:master\r\nconnected_slaves:0\r\nmaster_failover_state:no-failover\r\n"
      "master_repl_offset:0\r\nsecond_repl_offset:-1\r\nrepl_backlog_active:0\r\n"
      "repl_backlog_first_byte_offset:0\r\nrepl_backlog_histlen:0\r\n";
}

void AddCpuTime(std::string* s, std::string_view k, const timeval& tv) {
  char buf[48];
  const int n = std::snprintf(buf, sizeof buf, "%ld.%06ld", static_cast<long>(tv.tv_sec),
                              static_cast<long>(tv.tv_usec));
  AddField(s, k, std::string_view(buf, static_cast<size_t>(n)));
}

void CpuSection(CommandContext&, std::string* s) {
  rusage self{}, children{}, thread{};
  ::getrusage(RUSAGE_SELF, &self);
  ::getrusage(RUSAGE_CHILDREN, &children);
  // Redis's main thread runs every command; here the nearest is the calling
  // worker, which runs this connection's commands.
  ::getrusage(RUSAGE_THREAD, &thread);
  *s += "# CPU\r\n";
  AddCpuTime(s, "used_cpu_sys", self.ru_stime);
  AddCpuTime(s, "used_cpu_user", self.ru_utime);
  AddCpuTime(s, "used_cpu_sys_children", children.ru_stime);
  AddCpuTime(s, "used_cpu_user_children", children.ru_utime);
  AddCpuTime(s, "used_cpu_sys_main_thread", thread.ru_stime);
  AddCpuTime(s, "used_cpu_user_main_thread", thread.ru_utime);
}

// Trove loads no modules.
void ModulesSection(CommandContext&, std::string* s) { *s += "# Modules\r\n"; }

void ClusterSection(CommandContext&, std::string* s) { *s += "# Cluster\r\ncluster_enabled:0\r\n"; }

// INFO's sections in Redis's order; bit i of a selection is kSections[i].
struct InfoSection {
  std::string_view name;
  bool in_default;
  void (*write)(CommandContext& ctx, std::string* out);  // nullptr: the keyspace (a walk)
};
constexpr InfoSection kSections[] = {{"server", true, ServerSection},
                                     {"clients", true, ClientsSection},
                                     {"memory", true, MemorySection},
                                     {"persistence", true, PersistenceSection},
                                     {"stats", true, StatsSection},
                                     {"replication", true, ReplicationSection},
                                     {"cpu", true, CpuSection},
                                     {"modules", true, ModulesSection},
                                     {"commandstats", false, CommandstatsSection},
                                     {"errorstats", true, ErrorstatsSection},
                                     {"latencystats", false, LatencystatsSection},
                                     {"cluster", true, ClusterSection},
                                     {"keyspace", true, nullptr}};
constexpr uint32_t kAllSections = (1u << std::size(kSections)) - 1;

constexpr uint32_t DefaultSections() {
  uint32_t m = 0;
  for (size_t i = 0; i < std::size(kSections); ++i)
    if (kSections[i].in_default) m |= 1u << i;
  return m;
}

// Redis's rules: no argument is `default`; `default` adds the default
// sections, `all` every section and `everything` also modules' own (none
// here); other names select their section, case-insensitively, each once;
// "module_list" is the modules section's other name; unknown names are
// ignored.
uint32_t SelectedSections(std::span<const std::string_view> args) {
  if (args.empty()) return DefaultSections();
  uint32_t m = 0;
  for (std::string_view a : args) {
    if (EqualsIgnoreCase(a, "default")) {
      m |= DefaultSections();
    } else if (EqualsIgnoreCase(a, "all") || EqualsIgnoreCase(a, "everything")) {
      m |= kAllSections;
    } else {
      for (size_t i = 0; i < std::size(kSections); ++i) {
        if (EqualsIgnoreCase(a, kSections[i].name) ||
            (kSections[i].name == "modules" && EqualsIgnoreCase(a, "module_list")))
          m |= 1u << i;
      }
    }
  }
  return m;
}

// --- INFO ---

void CmdInfo(CommandContext& ctx) {
  const uint32_t want = SelectedSections(ctx.argv.subspan(1));
  std::string s;
  bool keyspace = false;
  for (size_t i = 0; i < std::size(kSections); ++i) {
    if (!(want & (1u << i))) continue;
    if (kSections[i].write == nullptr) {
      keyspace = true;
      continue;
    }
    if (!s.empty()) s += "\r\n";  // a blank line between sections, none after the last
    kSections[i].write(ctx, &s);
  }
  if (!keyspace) {
    ctx.w->Verbatim(s);
    return;
  }
  if (!s.empty()) s += "\r\n";
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
      out += "db";
      AppendU64(out, d);
      out += ":keys=";
      AppendI64(out, st->dbs[d].first);
      out += ",expires=";
      AppendI64(out, st->dbs[d].second);
      out += ",avg_ttl=0\r\n";
    }
    w.Verbatim(out);
  };
  RunSlicedWalk(ctx, std::move(walk));
}

}  // namespace

void RegisterInfoCommands(std::vector<CommandSpec>* t) {
  const CommandAdder add{t};
  add("info", -1, kCmdLoading | kCmdStale | kCmdGlobal, CmdInfo, "server",
      "Returns information and statistics about the server.", "1.0.0");
}

}  // namespace trove::resp
