// ItemObserver: how the engine reports items it removes on its own (expiry
// found by a read, the LRU tail, the crawler or the slab mover; eviction).
// Called on any engine thread; implemented by the server's watch log and by
// keyspace notifications.
#pragma once

#include <cstdint>
#include <string_view>

namespace trove::engine {

enum class RemovalCause : uint8_t {
  kExpired,  // its TTL passed (not a flush_all: flushed items are not reported)
  kEvicted,  // memory was needed
};

// One removal, valid only during the call.
struct ItemRemoval {
  RemovalCause cause;
  std::string_view key;
  int clsid;             // slab class of the head chunk
  uint32_t value_bytes;  // without the trailing CRLF
  int64_t ttl;           // seconds left when removed; -1 = no expiry (memcached's "ttl=")
  uint32_t idle;         // seconds since last access (memcached's "la=")
  bool fetched;          // read at least once since stored
  uint8_t value_type;    // engine ValueType (string, list, ...)
};

// A background thread's report (memcached's `watch sysevents`).
struct SysEvent {
  enum class Kind : uint8_t {
    kCrawlerStatus,  // one slab class after an automatic crawl
    kSlabMove,       // the automove policy moved (or failed to move) a page
  };
  Kind kind;
  // kCrawlerStatus
  int clsid = 0;
  uint32_t since_run = 0;  // seconds since this class's previous automatic crawl
  int32_t next_run = 0;    // seconds until its next
  uint32_t elapsed = 0;    // seconds the crawl took
  uint64_t examined = 0;
  uint64_t reclaimed = 0;
  // kSlabMove (dst 0: the page went back to the global pool)
  int src = 0;
  int dst = 0;
  bool ok = false;
};

// Thread safety: OnRemoved runs on whichever thread removed the item, with
// that item's stripe lock and possibly its LRU lock held. It must not block,
// must not call into the engine, and must bound the work it does: copy what
// it needs and return. Observers are registered before Engine::Start and
// outlive the engine's threads.
class ItemObserver {
 public:
  virtual ~ItemObserver() = default;
  // A cheap, lock-free check the engine makes before building the record;
  // false while nobody listens (the usual case).
  virtual bool WantsRemovals() const = 0;
  virtual void OnRemoved(const ItemRemoval& r) = 0;
  // Background events: called on the crawler / slab mover thread with no
  // engine lock held; same cost rule (a cheap check first).
  virtual bool WantsSysEvents() const { return false; }
  virtual void OnSysEvent(const SysEvent& /*e*/) {}
};

}  // namespace trove::engine
