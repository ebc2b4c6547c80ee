// Admin commands: verbosity, cache_memlimit, shutdown, slabs, lru_crawler,
// watch. Run on the connection's worker thread; the engine, ServerServices
// and LogHub calls they make are thread-safe.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

#include "common/str_append.h"
#include "protocol/memcache/dispatch.h"
#include "protocol/memcache/watch_log.h"

namespace trove::memcache {
namespace {

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

size_t MemcacheHandler::RefreshCerts(const Request& r, ReplyWriter& w) {
  // memcached: OK, or the loader's error line as it is (no SERVER_ERROR).
  std::string err = "Error TLS not enabled";
  if (ctx_->services != nullptr && ctx_->services->RefreshCerts(&err)) {
    w.Word("OK");
  } else {
    w.Word(err);
  }
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


size_t MemcacheHandler::Watch(const Request& r, ReplyWriter& w) {
  const ParsedLine& pl = *r.pl;
  if (!ctx_->opts.watch_enabled || ctx_->log == nullptr || control_ == nullptr) {
    w.ClientError("watch commands not allowed");
    return r.line_len;
  }
  // memcached refuses when replies of earlier pipelined commands are queued.
  if (w.buffer()->pending_bytes() > 0) {
    w.Status("ERROR cannot pipeline other commands before watch");
    return r.line_len;
  }
  struct Name {
    const char* word;
    uint32_t bit;
  };
  static constexpr Name kTypes[] = {
      {"rawcmds", net::kLogRawcmds},         {"evictions", net::kLogEvictions},
      {"fetchers", net::kLogFetchers},       {"mutations", net::kLogMutations},
      {"sysevents", net::kLogSysevents},     {"connevents", net::kLogConnevents},
      {"proxyreqs", net::kLogProxyreqs},     {"proxyevents", net::kLogProxyevents},
      {"proxyuser", net::kLogProxyuser},     {"deletions", net::kLogDeletions},
  };
  uint32_t mask = 0;
  for (size_t i = 1; i < pl.count; ++i) {
    uint32_t bit = 0;
    for (const Name& n : kTypes) {
      if (pl.tokens[i] == n.word) bit = n.bit;
    }
    if (bit == 0) {
      w.Error();
      return r.line_len;
    }
    mask |= bit;
  }
  if (mask == 0) mask = net::kLogFetchers;
  uint64_t id = 0;
  if (ctx_->log->AddWatcher(control_->id(), mask, &id) != net::LogHub::AddResult::kOk) {
    w.Status("WATCHER_TOO_MANY log watcher limit reached");
    return r.line_len;
  }
  watcher_id_ = id;
  w.Word("OK");
  return r.line_len;
}

}  // namespace trove::memcache
