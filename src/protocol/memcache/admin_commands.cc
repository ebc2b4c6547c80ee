// Admin commands: stats (all sub-commands), verbosity, cache_memlimit,
// shutdown, slabs, lru_crawler. Run on the connection's worker thread; the
// engine and ServerServices calls they make are thread-safe.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

#include "common/str_append.h"
#include "net/worker.h"
#include "protocol/memcache/dispatch.h"
#include "protocol/memcache/watch_log.h"

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
    "log_watchers", "unexpected_napi_ids", "round_robin_fallback", "bytes", "curr_items",
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

// The engine answers with memcached's reply word; add memcached's message
// when the engine gave only the word.
std::string_view ReassignText(std::string_view r) {
  if (r == "BUSY") return "BUSY currently processing reassign request";
  if (r == "BADCLASS") return "BADCLASS invalid src or dst class id";
  if (r == "NOSPARE") return "NOSPARE source class has no spare pages";
  if (r == "SAME") return "SAME src and dst class are identical";
  return r;
}
std::string_view CrawlText(std::string_view r) {
  if (r == "BUSY") return "BUSY currently processing crawler request";
  if (r == "BADCLASS") return "BADCLASS invalid class id";
  if (r == "NOTSTARTED") return "NOTSTARTED no items to crawl";
  return r;
}

// Whether the LRU crawler is on now. "lru_crawler enable|disable" changes it at
// run time inside the engine, which reports it in its settings; crawl and
// metadump are rare enough to read it from there.
bool CrawlerOn(const engine::Engine& e) {
  for (const auto& [name, value] : e.SettingsStats()) {
    if (name == "lru_crawler") return value == "yes";
  }
  return e.options().lru_crawler;
}

}  // namespace

uint32_t MemcacheHandler::SlabClassFor(size_t total) const {
  const engine::EngineOptions& o = engine_->options();
  const size_t chunk_max = o.slab_chunk_max ? o.slab_chunk_max : o.item_size_max / 2;
  // memcached's slabs_init: class 1 holds header + -n bytes, each next class
  // is -f times larger (8-byte aligned), and the last class is chunk_max.
  double size = 48.0 + static_cast<double>(o.chunk_size_min);
  uint32_t cls = 1;
  const uint32_t kMaxClasses = 63;
  while (cls < kMaxClasses - 1 && size <= static_cast<double>(chunk_max) / o.factor) {
    size_t s = static_cast<size_t>(size);
    if (s % 8) s += 8 - s % 8;
    if (total <= s) return cls;
    size = static_cast<double>(s) * o.factor;
    ++cls;
  }
  return cls;
}

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
  } else if (sub == "items") {
    WriteStats(engine_->ItemStats(), w);
    w.Word("END");
  } else if (sub == "slabs") {
    WriteStats(engine_->SlabStats(), w);
    w.Word("END");
  } else if (sub == "sizes") {
    WriteStats(engine_->SizeStats(), w);
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

// Comes with at least a level word and noreply applied (the command table).
size_t MemcacheHandler::Verbosity(const Request& r, ReplyWriter& w) {
  const ParsedLine& pl = *r.pl;
  uint32_t level = 0;
  if (!ParseFlags(pl.tokens[1], &level)) {
    w.ClientError(kBadFormat);
    return r.line_len;
  }
  if (ctx_->services) ctx_->services->SetVerbosity(level > 2 ? 2 : static_cast<int>(level));
  w.Word("OK");
  return r.line_len;
}

size_t MemcacheHandler::CacheMemlimit(const Request& r, ReplyWriter& w) {
  const ParsedLine& pl = *r.pl;
  if (pl.ntokens() != 3 && pl.ntokens() != 4) {
    w.Error();
    return r.line_len;
  }
  w.set_quiet(pl.noreply());
  uint32_t mb = 0;
  if (!ParseFlags(pl.tokens[1], &mb)) {
    w.Error();
  } else if (mb < 8) {
    w.Status("MEMLIMIT_TOO_SMALL cannot set maxbytes to less than 8m");
  } else if (mb > 1000000000) {
    w.Status("MEMLIMIT_ADJUST_FAILED input value is megabytes not bytes");
  } else if (engine_->SetMemLimit(static_cast<size_t>(mb) << 20)) {
    w.Word("OK");
  } else {
    w.Status("MEMLIMIT_ADJUST_FAILED out of bounds or unable to adjust");
  }
  return r.line_len;
}

size_t MemcacheHandler::Shutdown(const Request& r, ReplyWriter& w) {
  const ParsedLine& pl = *r.pl;
  net::ServerServices* sv = ctx_->services;
  if (sv == nullptr || !sv->ShutdownEnabled()) {
    w.Status("SERVER_ERROR: shutdown not enabled");  // memcached 1.6.45's text
    return r.line_len;
  }
  if (pl.count == 1 || (pl.count == 2 && pl.tokens[1] == "graceful")) {
    // memcached closes the asking connection without a reply.
    sv->RequestShutdown();
    close_ = true;
    return r.line_len;
  }
  w.ClientError("invalid shutdown mode");
  return r.line_len;
}

size_t MemcacheHandler::Slabs(const Request& r, ReplyWriter& w) {
  const ParsedLine& pl = *r.pl;
  const size_t nt = pl.ntokens();
  if (nt == 5 && pl.tokens[1] == "reassign") {
    if (!engine_->options().slab_reassign) {
      w.ClientError("slab reassignment disabled");
      return r.line_len;
    }
    int64_t src = 0;
    int64_t dst = 0;
    if (!ParseInt(pl.tokens[2], &src) || !ParseInt(pl.tokens[3], &dst)) {
      w.ClientError(kBadFormat);
      return r.line_len;
    }
    const std::string res = engine_->SlabsReassign(static_cast<int>(src), static_cast<int>(dst));
    w.Status(ReassignText(res));
    return r.line_len;
  }
  if (nt >= 4 && pl.tokens[1] == "automove") {
    w.set_quiet(pl.noreply());
    // memcached's proto_text.c: ratio and freeratio answer ERROR on a bad
    // number, window its range error.
    if (pl.tokens[2] == "ratio" || pl.tokens[2] == "freeratio") {
      double ratio = 0;
      if (nt < 5 || !ParseDouble(pl.tokens[3], &ratio)) {
        w.Error();
        return r.line_len;
      }
      if (pl.tokens[2] == "ratio") {
        engine_->SetSlabAutomoveRatio(ratio);
      } else {
        engine_->SetSlabAutomoveFreeratio(ratio);
      }
      w.Word("OK");
      return r.line_len;
    }
    if (pl.tokens[2] == "window") {
      uint32_t secs = 0;
      if (nt < 5 || !ParseFlags(pl.tokens[3], &secs)) {
        w.ClientError(kBadFormat);
        return r.line_len;
      }
      if (secs < 3 || secs > 1800) {
        w.ClientError("automove window too low or too high");
        return r.line_len;
      }
      engine_->SetSlabAutomoveWindow(secs);
      w.Word("OK");
      return r.line_len;
    }
    uint32_t level = 0;
    if (!ParseFlags(pl.tokens[2], &level)) {
      w.ClientError(kBadFormat);
      return r.line_len;
    }
    if (level > 2) {
      w.Error();
      return r.line_len;
    }
    engine_->SetSlabAutomove(static_cast<int>(level));
    w.Word("OK");
    return r.line_len;
  }
  w.Error();
  return r.line_len;
}

size_t MemcacheHandler::LruCrawler(const Request& r, ReplyWriter& w) {
  const ParsedLine& pl = *r.pl;
  const size_t nt = pl.ntokens();
  std::string_view sub = pl.count >= 2 ? pl.tokens[1] : std::string_view();
  if (nt == 4 && (sub == "crawl" || sub == "metadump" || sub == "mgdump")) {
    if (!CrawlerOn(*engine_)) {
      w.ClientError("lru crawler disabled");
      return r.line_len;
    }
    if (sub == "crawl") {
      const std::string res = engine_->CrawlerCrawl(pl.tokens[2]);
      w.Status(CrawlText(res));
      return r.line_len;
    }
    const bool mg = sub == "mgdump";
    if (!ctx_->opts.dump_enabled) {  // -X
      w.Status(mg ? "ERROR key dump not allowed" : "ERROR metadump not allowed");
      return r.line_len;
    }
    // As memcached: the dump takes over the connection's output, so replies
    // of earlier pipelined commands must not be waiting.
    if (w.buffer()->pending_bytes() > 0) {
      w.Status(mg ? "ERROR cannot pipeline other commands before mgdump"
                  : "ERROR cannot pipeline other commands before metadump");
      return r.line_len;
    }
    // "hash" walks the hash table, which is how Trove walks "all" anyway.
    std::string_view classes = pl.tokens[2] == "hash" ? std::string_view("all") : pl.tokens[2];
    if (!engine_->ValidCrawlClasses(classes)) {
      w.Status("BADCLASS invalid class id");
      return r.line_len;
    }
    // memcached 1.6.45 answers OK, then the lines, then END (EN for mgdump).
    std::string out = "OK\r\n";
    for (const engine::DumpEntry& d : engine_->MetaDump(classes)) {
      if (mg) {
        // "mg <key>\r\n" (a binary key base64 with " b"), then "EN\r\n".
        out.append("mg ");
        if (d.key_binary) {
          char b64[512];  // a key is at most 250 bytes: 336 in base64
          out.append(b64, Base64Encode(d.key, b64));
          out.append(" b\r\n");
        } else {
          out.append(d.key);
          out.append("\r\n");
        }
        continue;
      }
      // "key=<uri> exp=<unix|-1> la=<unix> cas=<n> fetch=yes|no cls=<n> size=<n> flags=<n> \n"
      // (each field followed by a space, as memcached's writer does)
      out.append("key=");
      UriEncode(d.key, &out);  // metadump keys are URI-encoded
      out.append(" exp=");
      AppendI64(out, d.exp_unix);
      out.append(" la=");
      AppendI64(out, d.last_access_unix);
      out.append(" cas=");
      AppendU64(out, d.cas);
      out.append(d.fetched ? " fetch=yes" : " fetch=no");
      out.append(" cls=");
      AppendI64(out, d.slab_class);
      out.append(" size=");
      AppendU64(out, d.size);
      out.append(" flags=");
      AppendU64(out, d.flags);
      out.append(" \n");
    }
    out.append(mg ? "EN\r\n" : "END\r\n");
    w.Trusted(out);
    return r.line_len;
  }
  if (nt == 4 && (sub == "tocrawl" || sub == "sleep")) {
    uint32_t v = 0;
    if (!ParseFlags(pl.tokens[2], &v)) {
      w.ClientError(kBadFormat);
      return r.line_len;
    }
    if (sub == "sleep") {
      if (v > 1000000) {
        w.ClientError("sleep must be one second or less");
        return r.line_len;
      }
      engine_->CrawlerSetSleep(v);
    } else {
      engine_->CrawlerSetToCrawl(v);
    }
    w.Word("OK");
    return r.line_len;
  }
  if (nt == 3 && (sub == "enable" || sub == "disable")) {
    bool on = sub == "enable";
    if (engine_->CrawlerEnable(on)) {
      w.Word("OK");
    } else {
      w.Status(on ? "ERROR failed to start lru crawler thread"
                  : "ERROR failed to stop lru crawler thread");
    }
    return r.line_len;
  }
  w.Error();
  return r.line_len;
}

}  // namespace trove::memcache
