// memcached's `stats` command and its sub-commands (settings, items, slabs,
// sizes, conns, cachedump, detail, reset). Run on the connection's worker
// thread; the engine and ServerServices calls they make are thread-safe.
#include <algorithm>
#include <string>
#include <vector>

#include "common/str_append.h"
#include "net/worker.h"
#include "protocol/memcache/dispatch.h"

namespace trove::memcache {
namespace {

// `stats` keys in memcached 1.6.45's order (memcached.c server_stats and
// items.c item_stats_totals); keys not listed follow in their own order.
constexpr std::string_view kStatsOrder[] = {
    "pid", "uptime", "time", "version", "libevent", "pointer_size", "rusage_user",
    "rusage_system", "max_connections", "curr_connections", "total_connections",
    "rejected_connections", "connection_structures", "response_obj_oom", "response_obj_count",
    "response_obj_bytes", "read_buf_count", "read_buf_bytes", "read_buf_bytes_free",
    "read_buf_oom", "reserved_fds", "cmd_get", "cmd_set", "cmd_flush", "cmd_touch", "cmd_meta",
    "get_hits", "get_misses", "get_expired", "get_flushed", "delete_misses", "delete_hits",
    "incr_misses", "incr_hits", "decr_misses", "decr_hits", "cas_misses", "cas_hits",
    "cas_badval", "touch_hits", "touch_misses", "store_too_large", "store_no_memory",
    "auth_cmds", "auth_errors", "idle_kicks", "bytes_read", "bytes_written", "limit_maxbytes",
    "accepting_conns", "listen_disabled_num", "time_in_listen_disabled_us", "threads",
    "conn_yields", "hash_power_level", "hash_bytes", "hash_is_expanding",
    "slab_reassign_rescues", "slab_reassign_chunk_rescues", "slab_reassign_inline_reclaim",
    "slab_reassign_busy_items", "slab_reassign_busy_deletes", "slab_reassign_busy_nomem",
    "slab_reassign_last_busy_status", "slab_reassign_running", "slabs_moved",
    "lru_crawler_running", "lru_crawler_starts", "lru_maintainer_juggles", "malloc_fails",
    "log_worker_dropped", "log_worker_written", "log_watcher_skipped", "log_watcher_sent",
    "log_watchers", "ssl_new_sessions", "ssl_handshake_errors", "ssl_proto_errors",
    "time_since_server_cert_refresh", "unexpected_napi_ids", "round_robin_fallback", "bytes", "curr_items",
    "total_items", "slab_global_page_pool", "expired_unfetched", "evicted_unfetched",
    "evicted_active", "evictions", "reclaimed", "crawler_reclaimed", "crawler_items_checked",
    "lrutail_reflocked", "moves_to_cold", "moves_to_warm", "moves_within_lru",
    "direct_reclaims", "lru_bumps_dropped"};

void WriteStatsInMemcachedOrder(const engine::StatList& stats, ReplyWriter& w) {
  std::vector<bool> done(stats.size(), false);
  for (std::string_view k : kStatsOrder) {
    for (size_t i = 0; i < stats.size(); ++i) {
      if (!done[i] && stats[i].first == k) {
        w.Stat(stats[i].first, stats[i].second);
        done[i] = true;
        break;
      }
    }
  }
  for (size_t i = 0; i < stats.size(); ++i) {
    if (!done[i]) w.Stat(stats[i].first, stats[i].second);
  }
}

void WriteStats(const engine::StatList& stats, ReplyWriter& w) {
  for (const auto& [name, value] : stats) w.Stat(name, value);
}

// The sub-commands that print one engine stat list as it comes.
struct EngineStatsPart {
  std::string_view name;
  engine::StatList (engine::Engine::*list)() const;
};
constexpr EngineStatsPart kEngineStatsParts[] = {
    {"items", &engine::Engine::ItemStats},
    {"slabs", &engine::Engine::SlabStats},
    {"sizes", &engine::Engine::SizeStats},
};
const EngineStatsPart* FindEngineStatsPart(std::string_view sub) {
  for (const EngineStatsPart& p : kEngineStatsParts) {
    if (p.name == sub) return &p;
  }
  return nullptr;
}

}  // namespace

size_t MemcacheHandler::Stats(const Request& r, ReplyWriter& w) {
  const ParsedLine& pl = *r.pl;
  net::ServerServices* sv = ctx_->services;
  if (pl.count == 1) {
    // The server's, the engine's and the logger's counters, printed in
    // memcached 1.6.45's order (server_stats, then the item totals); a part
    // that is off leaves its keys out, as memcached does.
    engine::StatList all;
    if (sv) all = sv->ServerStats();
    for (auto& kv : engine_->Stats()) all.push_back(std::move(kv));
    if (ctx_->log != nullptr) {
      const net::LogHubStats ls = ctx_->log->Stats();
      auto add = [&all](const char* k, uint64_t v) {
        std::string s;
        AppendU64(s, v);
        all.emplace_back(k, std::move(s));
      };
      add("log_worker_dropped", ls.worker_dropped);
      add("log_worker_written", ls.worker_written);
      add("log_watcher_skipped", ls.watcher_skipped);
      add("log_watcher_sent", ls.watcher_sent);
      add("log_watchers", ls.watchers);
    }
    if (ctx_->opts.auth != nullptr) {  // -Y: the real counts
      for (auto& [k, v] : all) {
        if (k == "auth_cmds") v = std::to_string(ctx_->opts.auth->auth_cmds.load());
        if (k == "auth_errors") v = std::to_string(ctx_->opts.auth->auth_errors.load());
      }
    }
    // Trove's: the per-user rate-limit refusals, after memcached's fields.
    if (ctx_->opts.access != nullptr) ctx_->opts.access->RateRejectedStats(&all);
    WriteStatsInMemcachedOrder(all, w);
    w.Word("END");
    return r.line_len;
  }
  std::string_view sub = pl.tokens[1];
  if (sub == "reset") {
    engine_->ResetStats();
    w.Word("RESET");
  } else if (sub == "detail") {
    std::string_view arg = pl.count >= 3 ? pl.tokens[2] : std::string_view();
    if (arg == "on" || arg == "off") {
      engine_->SetDetailEnabled(arg == "on");
      w.Word("OK");
    } else if (arg == "dump") {
      w.Trusted(engine_->DetailDump());
    } else {
      w.ClientError("usage: stats detail on|off|dump");
    }
  } else if (sub == "settings") {
    if (sv) WriteStats(sv->SettingsStats(), w);
    WriteStats(engine_->SettingsStats(), w);
    w.Word("END");
  } else if (const EngineStatsPart* part = FindEngineStatsPart(sub)) {
    WriteStats((engine_->*part->list)(), w);
    w.Word("END");
  } else if (sub == "cachedump") {
    CacheDump(pl, w);
  } else if (sub == "conns") {
    if (control_ != nullptr && control_->group().size() > 0) {
      StatsConnsAsync();
      return r.line_len;
    }
    if (sv) {
      std::vector<net::ServerServices::ConnInfo> all = sv->ListeningSockets();
      // A request with no connection of its own on a worker (a UDP
      // datagram) cannot suspend to ask the other workers, and must not
      // block on them: it gets the listening sockets only.
      if (net::Worker::Current() == nullptr) {
        for (auto& ci : sv->Connections()) all.push_back(std::move(ci));
      }
      std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.fd < b.fd; });
      WriteConns(all, w);
    }
    w.Word("END");
  } else if (std::vector<std::pair<std::string, std::string>> extra;
             sv != nullptr && sv->SubStats(sub, &extra)) {
    WriteStats(extra, w);
    w.Word("END");
  } else {
    w.Error();
  }
  return r.line_len;
}

// `stats cachedump <class> <limit>`, with memcached 1.6.45's replies.
void MemcacheHandler::CacheDump(const ParsedLine& pl, ReplyWriter& w) {
  if (!ctx_->opts.dump_enabled) {  // -X
    w.ClientError("stats cachedump not allowed");
    return;
  }
  if (pl.count < 4) {
    w.ClientError("bad command line");
    return;
  }
  uint32_t cls = 0;
  uint32_t limit = 0;
  if (!ParseFlags(pl.tokens[2], &cls) || !ParseFlags(pl.tokens[3], &limit)) {
    w.ClientError(kBadFormat);
    return;
  }
  if (cls >= 64) {  // memcached's MAX_NUMBER_OF_SLAB_CLASSES
    w.ClientError("Illegal slab id");
    return;
  }
  std::string out;
  for (const engine::CacheDumpEntry& e : engine_->CacheDump(static_cast<int>(cls), limit)) {
    out.append("ITEM ");
    out.append(e.key);
    out.append(" [");
    AppendU64(out, e.value_bytes);
    out.append(" b; ");
    AppendI64(out, e.exp_unix);
    out.append(" s]\r\n");
  }
  out.append("END\r\n");
  w.Trusted(out);
}

void MemcacheHandler::WriteConns(const std::vector<net::ServerServices::ConnInfo>& conns,
                                 ReplyWriter& w) {
  std::string name;
  for (const net::ServerServices::ConnInfo& c : conns) {
    auto stat = [&](std::string_view field, std::string_view value) {
      name.clear();
      AppendI64(name, c.fd);  // memcached's key: the connection's fd
      name.push_back(':');
      name.append(field);
      w.Stat(name, value);
    };
    stat("addr", c.addr);
    if (!c.listen_addr.empty()) stat("listen_addr", c.listen_addr);
    stat("state", c.state);
    std::string secs;
    AppendI64(secs, c.secs_since_last_cmd);
    stat("secs_since_last_cmd", secs);
  }
}

void MemcacheHandler::StatsConnsAsync() {
  using Conns = std::vector<net::ServerServices::ConnInfo>;
  net::ConnControl* self = control_;
  self->Suspend();
  const uint64_t id = self->id();
  net::WorkerGroup& group = self->group();
  // memcached lists the listening sockets too, everything ordered by fd.
  Conns listening = ctx_->services != nullptr ? ctx_->services->ListeningSockets() : Conns();
  group.Gather<Conns>([](net::Worker& wk) { return wk.DescribeAll(); },
                      [id, listening = std::move(listening)](std::vector<Conns> per_worker) {
                        // Back on this connection's worker; it may have closed.
                        net::Connection* c = net::Worker::Current()->Find(id);
                        if (c == nullptr) return;
                        Conns all = listening;
                        for (Conns& v : per_worker) {
                          for (auto& ci : v) all.push_back(std::move(ci));
                        }
                        std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) {
                          return a.fd < b.fd;
                        });
                        ReplyWriter w(&c->output());
                        WriteConns(all, w);
                        w.Word("END");
                        c->OutputAdded();
                        c->Resume();
                      });
}

}  // namespace trove::memcache
