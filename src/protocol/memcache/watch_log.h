// memcached's `watch` event lines (fetchers, mutations, deletions,
// evictions, rawcmds) as memcached 1.6.45's logger prints them, written to
// the server's LogHub. Called on workers (and, for evictions, on whichever
// engine thread evicts).
#pragma once

#include <cstdint>
#include <string_view>

#include "engine/engine.h"
#include "engine/item_observer.h"
#include "net/log_hub.h"

namespace trove::memcache {

// memcached's uriencode: every byte outside [A-Za-z0-9-._~] as %XX.
// Appends to *out.
void UriEncode(std::string_view in, std::string* out);

// The slab class and value size a line reports for an item (0 0: none).
struct ItemShape {
  int clsid = 0;
  uint32_t size = 0;
};
inline ItemShape ShapeOf(const engine::ItemRef& it) {
  return it ? ItemShape{it.slab_class(), it.value_length()} : ItemShape{};
}

// "type=item_get": status found when `it` holds an item, else not_found.
void LogItemGet(net::LogHub* hub, std::string_view key, const engine::ItemRef& it, int cfd);
// "type=item_store": status as engine::StoreResult; cmd is memcached's
// name (set, add, replace, append, prepend, cas); ttl in seconds (0 none).
void LogItemStore(net::LogHub* hub, std::string_view key, engine::StoreResult status,
                  std::string_view cmd, int64_t ttl, int clsid, int cfd, uint32_t size);
// "type=deleted": cmd "delete" or "md".
void LogDeleted(net::LogHub* hub, std::string_view key, std::string_view cmd, ItemShape old);
// rawcmds: "<cfd line" (memcached defines this entry; Trove fills it).
void LogRawCmd(net::LogHub* hub, int cfd, std::string_view line);

// `watch evictions`: the engine's evictions as "type=eviction" lines;
// `watch sysevents`: its background threads' "type=lru_crawler" (after each
// automatic crawl, per slab class; Trove crawls a class's LRUs together, so
// lru=all, and it schedules by time, so low_mark and next_reclaims are 0)
// and "type=slab_move" (automove) lines, as memcached 1.6.45 prints them.
class EvictionLog final : public engine::ItemObserver {
 public:
  explicit EvictionLog(net::LogHub* hub) : hub_(hub) {}
  bool WantsRemovals() const override { return hub_->Wants(net::kLogEvictions); }
  void OnRemoved(const engine::ItemRemoval& r) override;
  bool WantsSysEvents() const override { return hub_->Wants(net::kLogSysevents); }
  void OnSysEvent(const engine::SysEvent& e) override;

 private:
  net::LogHub* hub_;
};

}  // namespace trove::memcache
