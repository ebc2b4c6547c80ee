// Lru: the segmented LRU (HOT/WARM/COLD/TEMP per slab class, one lock each)
// and the tail pull that evicts, reclaims and moves items between segments.
// Workers link/unlink and evict; the LRU maintainer juggles.
#pragma once

#include <atomic>
#include <cstdint>

#include "common/mutex.h"
#include "engine/item.h"

namespace trove::engine {

struct ThreadStats;

// memcached's per-class "stats items" counters. Relaxed atomics (several
// writers: any thread may evict).
struct LruClassStats {
  std::atomic<uint64_t> evicted{0}, evicted_nonzero{0}, outofmemory{0}, reclaimed{0};
  std::atomic<uint64_t> expired_unfetched{0}, evicted_unfetched{0}, evicted_active{0};
  std::atomic<uint64_t> crawler_reclaimed{0}, crawler_items_checked{0}, lrutail_reflocked{0};
  std::atomic<uint64_t> moves_to_cold{0}, moves_to_warm{0}, moves_within_lru{0};
  std::atomic<uint64_t> direct_reclaims{0};
  std::atomic<uint32_t> evicted_time{0};  // age of the last evicted item
};

// What a tail pull may do (memcached's lru_pull_tail flags).
enum class PullMode : uint8_t {
  kEvict,    // allocation path: reclaim expired, else evict the tail
  kReclaim,  // -M: only reclaim expired items
  kJuggle,   // maintainer: move HOT/WARM/COLD tails by size and age
};

class EngineCore;  // Engine::Impl, the owner (engine_impl.h)

// Thread safety: each list's fields are guarded by its own mu (LockRank::kLru).
// Items are linked and unlinked with the stripe held (item -> LRU order);
// the tail pull holds the LRU lock and try-locks stripes.
// Invariants: 1. an item is on list (ClassOf, SegmentOf) iff kItemLinked;
// 2. items/bytes are the count and ntotal sum of that list.
class Lru {
 public:
  struct List {
    Mutex mu{LockRank::kLru};
    Item* head GUARDED_BY(mu) = nullptr;
    Item* tail GUARDED_BY(mu) = nullptr;
    uint64_t items GUARDED_BY(mu) = 0;
    uint64_t bytes GUARDED_BY(mu) = 0;
  };

  List& list(int cls, Segment s) { return lists_[cls][static_cast<int>(s)]; }
  // The class whose LRU holds `it`: its head chunk's class, except that a
  // chunked item (a value past slab_chunk_max) lives in the largest class's
  // LRU, as in memcached (it->slabs_clsid is the class of its full size). Its
  // value parts come from that class, so evicting there frees what the next
  // large value needs; in the head's small class it was never found.
  int LruClassOf(const Item* it) const {
    return HasFlag(it, kItemChunked) ? largest_class_ : ClassOf(it);
  }
  void set_largest_class(int c) { largest_class_ = c; }
  LruClassStats& stats(int cls) { return stats_[cls]; }
  const LruClassStats& stats(int cls) const { return stats_[cls]; }

  // REQUIRES: stripe held. Takes the list lock.
  void Link(Item* it, uint32_t ntotal);
  void Unlink(Item* it, uint32_t ntotal);
  // REQUIRES: the item's list lock held.
  static void LinkLocked(List& l, Item* it, uint32_t ntotal) REQUIRES(l.mu);
  static void UnlinkLocked(List& l, Item* it, uint32_t ntotal) REQUIRES(l.mu);

  // Counts and tail age of one list (takes its lock).
  uint64_t Items(int cls, Segment s);
  uint64_t Bytes(int cls, Segment s);
  uint32_t TailAge(int cls, Segment s, uint32_t now);

 private:
  List lists_[kMaxClasses][kSegments];
  LruClassStats stats_[kMaxClasses];
  int largest_class_ = 1;  // set once by the engine before any item is linked
};

}  // namespace trove::engine
