// memcached's watcher line formats (logger.c of 1.6.45, written anew).
#include "protocol/memcache/watch_log.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <string>

namespace trove::memcache {

namespace {
// One scratch line per thread: logging allocates nothing once warm.
std::string& Scratch() {
  thread_local std::string s;
  s.clear();
  return s;
}

void AppendF(std::string* out, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
void AppendF(std::string* out, const char* fmt, ...) {
  char buf[160];
  va_list ap;
  va_start(ap, fmt);
  const int n = std::vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  if (n > 0) out->append(buf, std::min<size_t>(static_cast<size_t>(n), sizeof(buf) - 1));
}
}  // namespace

void UriEncode(std::string_view in, std::string* out) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  for (unsigned char c : in) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                       c == '-' || c == '.' || c == '_' || c == '~';
    if (plain) {
      out->push_back(static_cast<char>(c));
    } else {
      out->push_back('%');
      out->push_back(kHex[c >> 4]);
      out->push_back(kHex[c & 15]);
    }
  }
}

void LogItemGet(net::LogHub* hub, std::string_view key, const engine::ItemRef& it, int cfd) {
  // memcached also has flushed and expired; Trove's reads report both as
  // not_found.
  const ItemShape sh = ShapeOf(it);
  std::string& s = Scratch();
  s += "type=item_get key=";
  UriEncode(key, &s);
  AppendF(&s, " status=%s clsid=%d cfd=%d size=%u", it ? "found" : "not_found", sh.clsid, cfd,
          sh.size);
  hub->Log(net::kLogFetchers, s);
}

void LogItemStore(net::LogHub* hub, std::string_view key, engine::StoreResult status,
                  std::string_view cmd, int64_t ttl, int clsid, int cfd, uint32_t size) {
  const char* st = "stored";
  switch (status) {
    case engine::StoreResult::kStored: st = "stored"; break;
    case engine::StoreResult::kNotStored: st = "not_stored"; break;
    case engine::StoreResult::kExists: st = "exists"; break;
    case engine::StoreResult::kNotFound: st = "not_found"; break;
    case engine::StoreResult::kTooLarge: st = "too_large"; break;
    case engine::StoreResult::kNoMemory: st = "no_memory"; break;
  }
  std::string& s = Scratch();
  s += "type=item_store key=";
  UriEncode(key, &s);
  AppendF(&s, " status=%s cmd=%.*s ttl=%lld clsid=%d cfd=%d size=%u", st,
          static_cast<int>(cmd.size()), cmd.data(), static_cast<long long>(ttl), clsid, cfd, size);
  hub->Log(net::kLogMutations, s);
}

void LogDeleted(net::LogHub* hub, std::string_view key, std::string_view cmd, ItemShape old) {
  std::string& s = Scratch();
  s += "type=deleted key=";
  UriEncode(key, &s);
  AppendF(&s, " cmd=%.*s clsid=%d size=%u", static_cast<int>(cmd.size()), cmd.data(), old.clsid,
          old.size);
  hub->Log(net::kLogDeletions, s);
}

void LogRawCmd(net::LogHub* hub, int cfd, std::string_view line) {
  std::string& s = Scratch();
  AppendF(&s, "<%d ", cfd);
  s.append(line);
  hub->Log(net::kLogRawcmds, s);
}

void EvictionLog::OnRemoved(const engine::ItemRemoval& r) {
  if (r.cause != engine::RemovalCause::kEvicted) return;
  std::string& s = Scratch();
  s += "type=eviction key=";
  UriEncode(r.key, &s);
  AppendF(&s, " fetch=%s ttl=%lld la=%u clsid=%d size=%u", r.fetched ? "yes" : "no",
          static_cast<long long>(r.ttl), r.idle, r.clsid, r.value_bytes);
  hub_->Log(net::kLogEvictions, s);
}

void EvictionLog::OnSysEvent(const engine::SysEvent& e) {
  std::string& s = Scratch();
  if (e.kind == engine::SysEvent::Kind::kCrawlerStatus) {
    AppendF(&s,
            "type=lru_crawler crawler=%d lru=all low_mark=0 next_reclaims=0 since_run=%u "
            "next_run=%d elapsed=%u examined=%llu reclaimed=%llu",
            e.clsid, e.since_run, e.next_run, e.elapsed,
            static_cast<unsigned long long>(e.examined),
            static_cast<unsigned long long>(e.reclaimed));
  } else {
    AppendF(&s, "type=slab_move src=%d dst=%d state=%s", e.src, e.dst, e.ok ? "ok" : "fail");
  }
  hub_->Log(net::kLogSysevents, s);
}

}  // namespace trove::memcache
