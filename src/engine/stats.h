// Engine statistics: per-thread counters (ThreadStats, one writer each,
// summed on demand), the registry that owns them, and per-prefix detail
// stats. Written by workers and background threads; read by "stats".
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/mutex.h"
#include "engine/item.h"

namespace trove::engine {

// A counter with a single writer: load+store (no locked RMW) on the hot path;
// readers on other threads see a slightly old value.
class Counter {
 public:
  void Add(uint64_t n = 1) { v_.store(v_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed); }
  uint64_t Get() const { return v_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> v_{0};
};

// Counters memcached keeps per slab class per thread ("stats slabs").
struct SlabThreadStats {
  Counter get_hits, cmd_set, delete_hits, incr_hits, decr_hits, cas_hits, cas_badval, touch_hits;
};

// One per worker or background thread (Engine::NewThreadStats).
// Thread safety: written only by its thread (Counter), read by any.
struct ThreadStats {
  Counter get_cmds, get_misses, get_expired, get_flushed;
  Counter touch_cmds, touch_misses;
  Counter delete_misses, incr_misses, decr_misses, cas_misses;
  Counter store_too_large, store_no_memory;
  Counter total_items;  // items linked
  Counter meta_cmds;
  SlabThreadStats slab[kMaxClasses];
};

// The sums, minus the baseline taken at the last "stats reset".
struct ThreadTotals {
  uint64_t get_cmds = 0, get_misses = 0, get_expired = 0, get_flushed = 0;
  uint64_t touch_cmds = 0, touch_misses = 0;
  uint64_t delete_misses = 0, incr_misses = 0, decr_misses = 0, cas_misses = 0;
  uint64_t store_too_large = 0, store_no_memory = 0, total_items = 0, meta_cmds = 0;
  struct Slab {
    uint64_t get_hits = 0, cmd_set = 0, delete_hits = 0, incr_hits = 0, decr_hits = 0;
    uint64_t cas_hits = 0, cas_badval = 0, touch_hits = 0;
  } slab[kMaxClasses];
  uint64_t get_hits = 0, cmd_set = 0, delete_hits = 0, incr_hits = 0, decr_hits = 0;
  uint64_t cas_hits = 0, cas_badval = 0, touch_hits = 0;
};

// Owns every ThreadStats. Thread safety: mu_ (leaf) guards the list and the
// baseline; counters themselves are atomics.
class StatsRegistry {
 public:
  ThreadStats* New();
  ThreadTotals Sum() const;   // minus baseline
  void Reset();               // baseline = current sums

 private:
  ThreadTotals RawSumLocked() const REQUIRES(mu_);
  mutable Mutex mu_{LockRank::kLeaf};
  std::vector<std::unique_ptr<ThreadStats>> all_ GUARDED_BY(mu_);
  ThreadTotals baseline_ GUARDED_BY(mu_);
};

// "stats detail": counts per key prefix (up to the ':' delimiter).
// Thread safety: mu_ (leaf); the enabled flag is a relaxed atomic checked
// before taking it, so the disabled cost is one load.
class PrefixStats {
 public:
  void SetEnabled(bool on) { enabled_.store(on, std::memory_order_relaxed); }
  bool enabled() const { return enabled_.load(std::memory_order_relaxed); }
  void RecordGet(std::string_view key, bool hit);
  void RecordSet(std::string_view key);
  void RecordDelete(std::string_view key);
  std::string Dump() const;  // "PREFIX p get N hit N set N del N\r\n"... "END\r\n"
  void Clear() EXCLUDES(mu_);  // stats reset

 private:
  struct Entry {
    uint64_t get = 0, hit = 0, set = 0, del = 0;
  };
  Entry* FindLocked(std::string_view key) REQUIRES(mu_);
  std::atomic<bool> enabled_{false};
  mutable Mutex mu_{LockRank::kLeaf};
  std::unordered_map<std::string, Entry> map_ GUARDED_BY(mu_);
  std::vector<std::string> order_ GUARDED_BY(mu_);  // first-seen order for Dump
};

}  // namespace trove::engine
