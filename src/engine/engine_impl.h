// Engine::Impl: the engine's parts wired together, plus the item life-cycle
// (allocate, link, unlink, release) every operation shares. Private to
// src/engine; used by workers and the engine's background threads.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string_view>
#include <thread>

#include "common/mutex.h"
#include "engine/engine.h"
#include "engine/hash_table.h"
#include "engine/item.h"
#include "engine/item_locks.h"
#include "engine/item_observer.h"
#include "engine/lru.h"
#include "engine/slab_allocator.h"
#include "engine/stats.h"

namespace trove::engine {

class LruMaintainer;
class Crawler;
class SlabRebalancer;
class MemoryFile;
struct WarmStart;

// Owner: Engine. Thread safety: the components carry their own locks (see
// item_locks.h for the order); the remaining fields are atomics or fixed
// after construction. Invariants: see item.h (refcount, LINKED) and the
// component headers.
struct Engine::Impl {
  // `warm` (may be null): the -e memory file, taken over; when it is reused
  // the clock base comes from it too.
  Impl(Engine* e, const EngineOptions& o, const Clock* c, WarmStart* warm);
  ~Impl();

  // --- time (memcached's rel_time: seconds since engine start) ---
  // With the system clock and the background threads running, a ticker
  // refreshes cached_unix every 100 ms (memcached keeps a once-a-second
  // global too): a clock_gettime costs ~70 ns on kvm-clock, a third of a get.
  uint32_t Now() const {
    int64_t t = use_cached_time.load(std::memory_order_relaxed)
                    ? cached_unix.load(std::memory_order_relaxed)
                    : clock->UnixSeconds();
    return static_cast<uint32_t>(t - started);
  }
  void StartTicker();
  void StopTicker();
  // memcached's realtime(): 0 never; negative -> already expired; above
  // 30 days an absolute unix time; else relative to now.
  uint32_t RelTime(int64_t exptime) const;
  bool IsExpired(const Item* it, uint32_t now) const {
    uint32_t e = it->exptime.load(std::memory_order_relaxed);
    if (e == 0) return false;
    if (!HasFlag(it, kItemExpMs)) return e <= now;
    // A far expiry lies past every second the 32-bit clock can show.
    if (ExpiryIsFar(it)) return false;
    // A millisecond expiry: `now` is a cached second that may lag, so only
    // an item due this second or the next reads the clock.
    if (e < now) return true;
    if (e > now + 1) return false;
    return NowRelMs() >= int64_t{e} * 1000 + ExpiryMsPart(it);
  }
  // Milliseconds since `started`, read from the clock.
  int64_t NowRelMs() const { return clock->UnixMicros() / 1000 - started * 1000; }
  // Sets the expiry of `it` (under its stripe, or not yet linked) to a unix
  // time in ms (0 never; at or before now: already expired).
  void SetExpiryMs(Item* it, int64_t unix_ms) const;
  bool IsFlushed(const Item* it, uint32_t now) const;
  bool IsDead(const Item* it, uint32_t now) const { return IsExpired(it, now) || IsFlushed(it, now); }
  // CLIENT PAUSE holds expiry: one relaxed load while it does not.
  bool ExpiryHeld() const {
    const int64_t h = expiry_hold_until_ns.load(std::memory_order_relaxed);
    return h != 0 && clock->MonoNanos() < h;
  }
  // Dead and removable now (an expired item stays while expiry is held).
  bool Reclaimable(const Item* it, uint32_t now) const {
    return IsFlushed(it, now) || (IsExpired(it, now) && !ExpiryHeld());
  }
  uint64_t NextCas() { return opts.use_cas ? cas_id.fetch_add(1, std::memory_order_relaxed) + 1 : 0; }

  // --- item life-cycle (item.cc) ---
  // A new unlinked item with refcount 1, key copied and CRLF written, or
  // nullptr with *status set. May evict (skipping stripes this thread holds).
  // max_value 0 limits the whole item to item_size_max (-I, memcached's
  // rule); otherwise the value may be up to max_value bytes (RESP's
  // proto-max-bulk-len), as a chunked item past -I.
  Item* AllocItem(std::string_view key, uint32_t flags, uint32_t exptime, size_t nbytes,
                  ValueType type, AllocStatus* status, size_t max_value = 0);
  // A chunk of class `cls`, freeing memory from that class's LRU when there
  // is none; a chunked item's parts (owner set) also free from the largest
  // class's LRU, where chunked items live (Lru::LruClassOf).
  Item* AllocChunk(int cls, Item* owner);
  uint32_t Ntotal(const Item* it) const {
    return static_cast<uint32_t>(HeaderSize(it) + it->nkey + it->nbytes + 2);
  }
  // REQUIRES: stripe(hv) held.
  void LinkLocked(Item* it, uint64_t hv, ThreadStats* ts, uint64_t cas);
  void UnlinkLocked(Item* it, uint64_t hv);
  // Tells the observers that `it` is being removed for `cause`. REQUIRES:
  // stripe held, `it` still readable. Costs one load per observer while
  // nobody listens.
  void ReportRemoval(const Item* it, RemovalCause cause) {
    if (cause == RemovalCause::kExpired) expired_total.fetch_add(1, std::memory_order_relaxed);
    for (int i = 0; i < num_observers; ++i) {
      if (observers[i]->WantsRemovals()) ReportRemovalSlow(it, cause, observers[i]);
    }
  }
  void ReportRemovalSlow(const Item* it, RemovalCause cause, ItemObserver* o);
  // True if an observer wants background events (checked before building one).
  bool WantsSysEvents() const {
    for (int i = 0; i < num_observers; ++i) {
      if (observers[i]->WantsSysEvents()) return true;
    }
    return false;
  }
  // REQUIRES: no engine lock held.
  void ReportSysEvent(const SysEvent& e) {
    for (int i = 0; i < num_observers; ++i) {
      if (observers[i]->WantsSysEvents()) observers[i]->OnSysEvent(e);
    }
  }
  // REQUIRES: stripe(hv) held and `list` (the item's LRU list) locked.
  void UnlinkLruHeld(Item* it, uint64_t hv, Lru::List& list) REQUIRES(list.mu);
  void ReplaceLocked(Item* old_it, Item* new_it, uint64_t hv, ThreadStats* ts, uint64_t cas);
  // Drops one reference; frees the item at zero.
  void Release(Item* it);
  void FreeItem(Item* it);
  // Gives a chunked head's parts back to the slabs (head left chunk-less).
  void FreeParts(Item* head);
  // Live item for key with a reference taken, or nullptr. Dead (expired or
  // flushed) items found are unlinked and counted. REQUIRES: stripe held.
  Item* FindLocked(std::string_view key, uint64_t hv, uint32_t now, ThreadStats* ts);
  // Same without taking a reference (the caller keeps the stripe).
  Item* PeekLocked(std::string_view key, uint64_t hv, uint32_t now, ThreadStats* ts);
  // A hit: FETCHED, then ACTIVE on the second hit; last-access time.
  static void Bump(Item* it, uint32_t now) {
    if (!HasFlag(it, kItemFetched)) {
      SetFlag(it, kItemFetched);
    } else {
      SetFlag(it, kItemActive);
    }
    if (it->time.load(std::memory_order_relaxed) != now) it->time.store(now, std::memory_order_relaxed);
  }
  ThreadStats* Ts(ThreadStats* ts) { return ts != nullptr ? ts : shared_ts; }
  // What an operation on one key reads once, before it takes the stripe:
  // the key's hash and the time.
  struct KeyOpStart {
    uint64_t hv;
    uint32_t now;
  };
  // Starts an operation on `key`: resolves *ts (see Ts), hashes the key and
  // reads the clock.
  KeyOpStart StartKeyOp(std::string_view key, ThreadStats** ts) {
    *ts = Ts(*ts);
    return {HashKey(key), Now()};
  }

  // --- LRU work (lru.cc) ---
  int PullTail(int cls, Segment seg, uint64_t total_bytes, PullMode mode, uint32_t max_age);
  // Allocation found no chunk: evict or reclaim something of class cls.
  bool FreeSomething(int cls);
  int Juggle(int cls);

  // --- stores (engine.cc) ---
  // On success *it may be replaced by the item actually stored (append and
  // prepend build a new one); the caller's reference moves with it.
  StoreResult StoreLocked(Item** it, uint64_t hv, const StoreArgs& args, ThreadStats* ts,
                          uint64_t* cas_out);

  // --- warm restart (engine_restart.cc) ---
  // Rebuilds the hash table, LRU lists, free lists and counters from the
  // memory file the previous run saved. REQUIRES: built from `w` (reuse),
  // nothing linked, no thread started.
  Status RestoreWarm(const WarmStart& w);
  // SaveForRestart. REQUIRES: no other thread running in the engine.
  Status SaveWarm();

  Engine* engine;
  const EngineOptions opts;
  // opts.evict_to_free at start (-M clears it); CONFIG SET maxmemory-policy
  // (allkeys-lru / noeviction) changes it at run time. Relaxed: each
  // allocation that needs room reads it once.
  std::atomic<bool> evict_to_free{opts.evict_to_free};
  const Clock* clock;
  const int64_t started;   // unix seconds at rel time 0 (kept across a warm restart)
  const size_t header;     // item header bytes incl. CAS
  // -e: the mapping the slab pages live in; declared before slabs, which
  // carves it, so it is unmapped after them.
  std::unique_ptr<MemoryFile> memfile;
  bool restored = false;           // main thread: Create reused the memory file
  bool saved_for_restart = false;  // main thread: SaveWarm ran; item memory is off limits
  SlabAllocator slabs;
  ItemLocks locks;
  HashTable table;
  Lru lru;
  StatsRegistry registry;
  PrefixStats prefix;
  ThreadStats* shared_ts;  // for callers passing nullptr (counts may be lossy)
  ThreadStats* bg_ts;      // background eviction/reclaim counters

  std::atomic<uint64_t> cas_id{0};
  std::atomic<uint32_t> oldest_live{0};   // flush_all: rel time, 0 = none
  std::atomic<uint64_t> oldest_cas{0};    // flush_all: items with lower CAS are gone
  std::atomic<uint64_t> cmd_flush{0};
  // Slab mover counters (memcached's slab_reassign_* stats).
  std::atomic<uint64_t> reassign_rescues{0}, reassign_chunk_rescues{0}, reassign_busy{0},
      reassign_inline_reclaim{0}, reassign_busy_deletes{0}, reassign_busy_nomem{0};
  std::atomic<uint8_t> reassign_last_busy{0};  // MoveStatus of the last busy pass
  std::atomic<uint64_t> slabs_moved{0};
  std::atomic<bool> reassign_running{false};
  std::atomic<uint64_t> maintainer_juggles{0};
  std::atomic<uint64_t> crawler_starts{0};
  std::atomic<bool> crawler_running{false};
  std::atomic<uint64_t> crawler_reclaimed_total{0};
  std::atomic<uint64_t> expired_total{0};         // ReportRemoval(kExpired)
  std::atomic<int64_t> expiry_hold_until_ns{0};  // HoldExpiryUntil
  std::atomic<bool> expiry_hold_used{false};     // set by the first hold, never cleared

  std::atomic<bool> use_cached_time{false};
  std::atomic<int64_t> cached_unix{0};
  Mutex ticker_mu{LockRank::kBackground};
  CondVar ticker_cv{&ticker_mu};
  bool ticker_stop GUARDED_BY(ticker_mu) = false;
  std::thread ticker;

  // Registered before Start (Engine::AddObserver); fixed afterwards.
  static constexpr int kMaxObservers = 4;
  ItemObserver* observers[kMaxObservers] = {};
  int num_observers = 0;

  std::unique_ptr<LruMaintainer> maintainer;
  std::unique_ptr<Crawler> crawler;
  std::unique_ptr<SlabRebalancer> rebalancer;
  bool started_threads = false;
};

}  // namespace trove::engine
