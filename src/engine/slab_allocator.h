// SlabAllocator: slab classes, pages and free chunks under one short global
// lock (memcached's slabs_lock). Called from workers and background threads.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "common/mutex.h"
#include "common/non_copyable.h"
#include "common/status.h"
#include "engine/item.h"

namespace trove::engine {

struct SlabOptions {
  size_t mem_limit;
  size_t page_size;        // = item_size_max
  double factor;
  size_t min_chunk;        // smallest chunk size (header + chunk_size_min)
  size_t slab_chunk_max;   // largest class
  bool prealloc;
  size_t initial_malloced = 0;  // EngineOptions::initial_malloced
  // -e: pages are carved in order from this mapping (the memory file) of
  // arena_size bytes instead of malloc'd, and never given back to the OS.
  char* arena = nullptr;
  size_t arena_size = 0;
};

// Per-class numbers for "stats slabs" (a snapshot).
struct SlabClassInfo {
  size_t chunk_size = 0;
  size_t chunks_per_page = 0;
  size_t pages = 0;
  size_t total_chunks = 0;
  size_t free_chunks = 0;
};

// Owner: Engine::Impl. Memory comes in pages of page_size bytes, each cut
// into chunks of one class. A page can move between classes through the
// rebalancer (BeginMove/FinishMove) and the global page pool; it goes back
// to the OS only from the global pool while a lowered limit (cache_memlimit)
// is exceeded.
//
// Thread safety: every method takes mu_ (LockRank::kSlabs) unless marked
// Locked; the lock covers only pushing and popping free memory and the page
// lists, never item contents beyond the free-list links and kItemSlabbed.
// Invariants:
//  1. a chunk has kItemSlabbed <=> it is on its class free list.
//  2. malloced_ = initial_malloced + page_size * (pages in classes + pages in
//     the global pool).
//  3. chunks of the page being moved never reach a free list: Free sets them
//     aside (kItemSetAside) and counts them in move_.set_aside.
class SlabAllocator : NonCopyable {
 public:
  explicit SlabAllocator(const SlabOptions& o);
  ~SlabAllocator();

  Status Init();

  // Smallest class whose chunks hold `size` bytes; 0 when none does.
  int ClassFor(size_t size) const;
  size_t ChunkSize(int cls) const { return sizes_[cls]; }
  int largest_class() const { return num_classes_; }
  int num_classes() const { return num_classes_; }
  size_t page_size() const { return opts_.page_size; }

  // A chunk of class cls with refcount 1, flags 0 and clsid set, or nullptr
  // when no free chunk exists and no page may be added. `owner` is stored in
  // h_next (chunk parts record their head item under the lock, so the
  // rebalancer can find it).
  Item* Alloc(int cls, Item* owner = nullptr) EXCLUDES(mu_);
  // Only from the free list: never adds a page (slab rebalancer rescues).
  Item* AllocFree(int cls) EXCLUDES(mu_);
  // Gives a chunk back. REQUIRES: refcount 0, not linked.
  void Free(Item* it) EXCLUDES(mu_);

  // Memory counters. Heap bytes (HeapValue) count against the same limit.
  void AddHeapBytes(int64_t delta) { heap_bytes_.fetch_add(delta, std::memory_order_relaxed); }
  int64_t heap_bytes() const { return heap_bytes_.load(std::memory_order_relaxed); }
  size_t malloced() const EXCLUDES(mu_);
  // 0 means no limit (memcached's -m 0, Redis's maxmemory 0).
  size_t mem_limit() const { return mem_limit_.load(std::memory_order_relaxed); }
  // False if `bytes` is below what is already in use and cannot shrink
  // (a preallocated arena).
  bool SetMemLimit(size_t bytes) EXCLUDES(mu_);
  // True after SetMemLimit lowered the limit below the slab pages already
  // allocated, until enough pages are given back (or the limit is raised).
  // The first page each class may take past the limit (NewPageLocked) does
  // not set it. No lock (a relaxed flag written under mu_ by SetMemLimit and
  // ReleaseOverLimitLocked): RESP's denyoom commands read it on every call
  // and answer -OOM while it holds, as Redis does over its maxmemory.
  bool over_limit() const { return over_limit_.load(std::memory_order_relaxed); }
  bool OverLimit(size_t extra) const EXCLUDES(mu_);
  SlabClassInfo Info(int cls) const EXCLUDES(mu_);
  size_t global_pool_pages() const EXCLUDES(mu_);

  // --- warm restart (-e; warm_restart.cc) ---
  // The class of each arena page handed out so far, in arena order (0 = in
  // the global pool): what the metadata file records.
  std::vector<uint8_t> ArenaPageClasses() const EXCLUDES(mu_);
  // Takes back the first page_classes.size() arena pages as a previous run
  // left them: each page joins its class (0: the global pool), its chunks
  // marked kItemSlabbed or kItemSetAside go on the free list, and `visit`
  // is called (under mu_, so it must not call back) for every other chunk
  // that is not a chunk part (kItemChunkPart). False if a class id is out
  // of range or the pages do not fit the arena.
  // REQUIRES: nothing allocated yet, an arena.
  bool AdoptArenaPages(std::span<const uint8_t> page_classes,
                       const std::function<void(Item*)>& visit) EXCLUDES(mu_);

  // --- page moves (slab rebalancer only; one move at a time) ---
  // Picks a page of src, takes its free chunks off the free list and marks it
  // moving. False if src has fewer than 2 pages (memcached keeps one).
  bool BeginMove(int src) EXCLUDES(mu_);
  // Chunk i of the moving page (nullptr past the end).
  Item* MovingChunk(size_t i) const EXCLUDES(mu_);
  size_t moving_chunks() const EXCLUDES(mu_);
  // For a chunk of the moving page that is not set aside: takes a reference
  // on the item that owns it (the head for chunk parts) and returns it, or
  // nullptr when the chunk is free, set aside or being freed right now.
  // *chunk is the chunk itself (the owner unless it is a part).
  Item* RefMovingChunkOwner(size_t i, Item** chunk) EXCLUDES(mu_);
  bool MoveComplete() const EXCLUDES(mu_);
  // Gives the page to dst (0 = global pool) once every chunk is set aside.
  void FinishMove(int dst) EXCLUDES(mu_);
  // Gives up: set-aside chunks go back to the free list of src.
  void AbortMove() EXCLUDES(mu_);

 private:
  struct Class {
    size_t size = 0;
    size_t per_page = 0;
    std::vector<char*> pages;
    Item* free_head = nullptr;
    size_t free_count = 0;
  };
  struct Move {
    bool active = false;
    int src = 0;
    char* page = nullptr;
    size_t set_aside = 0;
  };

  char* NewPageLocked(int cls) REQUIRES(mu_);
  void SplitPageLocked(int cls, char* page) REQUIRES(mu_);
  void PushFreeLocked(int cls, Item* it) REQUIRES(mu_);
  void RemoveFreeLocked(int cls, Item* it) REQUIRES(mu_);
  bool InMovingPageLocked(const Item* it) const REQUIRES(mu_);

  const SlabOptions opts_;
  std::atomic<size_t> mem_limit_;
  std::atomic<int64_t> heap_bytes_{0};  // relaxed counter
  size_t sizes_[kMaxClasses] = {};      // immutable after construction
  int num_classes_ = 0;                 // immutable after construction

  mutable Mutex mu_{LockRank::kSlabs};
  Class classes_[kMaxClasses] GUARDED_BY(mu_);
  std::vector<char*> global_pool_ GUARDED_BY(mu_);
  std::vector<char*> all_pages_ GUARDED_BY(mu_);  // for the destructor
  // While malloced_ is over the limit, frees global-pool pages (to the OS).
  void ReleaseOverLimitLocked() REQUIRES(mu_);
  // The limit with 0 read as "none".
  size_t EffectiveLimit() const {
    const size_t l = mem_limit();
    return l == 0 ? SIZE_MAX : l;
  }
  // Recomputes over_limit_ after malloced_ or the limit changed.
  void NoteUsageLocked() REQUIRES(mu_) {
    over_limit_.store(malloced_ > EffectiveLimit(), std::memory_order_relaxed);
  }
  std::atomic<bool> over_limit_{false};
  size_t malloced_ GUARDED_BY(mu_);
  size_t arena_next_ GUARDED_BY(mu_) = 0;  // arena pages handed out
  Move move_ GUARDED_BY(mu_);
};

}  // namespace trove::engine
