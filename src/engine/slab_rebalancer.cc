// SlabRebalancer thread: page moves and the automove policy. Background.
#include "engine/slab_rebalancer.h"

#include <chrono>
#include <cstring>
#include <iterator>
#include <thread>

#include "engine/engine_impl.h"

namespace trove::engine {

namespace {
// memcached's automove looks once a second.
constexpr int64_t kAutomoveMs = 1000;
// A move gives up after this many passes over the page (busy items: a
// reader holding a reference, or a value still being read from a client).
constexpr int kMovePasses = 4000;
// After this many passes a chunked item still being read is deleted, and a
// rescue still waiting for memory may evict to get it.
constexpr int kBusyDeletePass = 1000;
constexpr int kEvictAfterPass = 20;
}  // namespace

SlabRebalancer::SlabRebalancer(Engine::Impl* impl)
    : impl_(impl),
      automove_(impl->opts.slab_automove),
      ratio_(impl->opts.slab_automove_ratio),
      window_(impl->opts.slab_automove_window),
      freeratio_(impl->opts.slab_automove_freeratio) {}

std::string SlabRebalancer::Reassign(int src, int dst) {
  const int n = impl_->slabs.num_classes();
  if (src == dst) return "SAME src and dst class are identical";
  if (src < 1 || src > n || dst < 0 || dst > n) return "BADCLASS invalid src or dst class id";
  if (impl_->slabs.Info(src).pages < 2) return "NOSPARE source class has no spare pages";
  MutexLock l(&mu_);
  if (req_dst_ >= 0 || impl_->reassign_running.load(std::memory_order_relaxed)) {
    return "BUSY currently processing reassign request";
  }
  if (!bg_.running()) return "BUSY currently processing reassign request";
  req_src_ = src;
  req_dst_ = dst;
  cv_.SignalAll();
  return "OK";
}

const char* MoveStatusName(uint8_t status) {
  static constexpr const char* kNames[] = {"none", "pass", "from_slab", "from_lru", "busy",
                                            "busy_uploading", "busy_active", "busy_floating",
                                            "locked"};
  return status < std::size(kNames) ? kNames[status] : "none";
}

Item* SlabRebalancer::RescueChunk(int cls, bool allow_evictions) {
  Engine::Impl* m = impl_;
  // Never a chunk of the moving page: its chunks are not on the free list.
  if (Item* n = m->slabs.AllocFree(cls)) return n;
  if (!allow_evictions) return nullptr;
  // As memcached's slab_rebalance_prep: memory is full and the pool empty,
  // so ordinary evictions from the class's tails make room (counted as
  // evictions). Try-locks only, so holding a stripe here is safe.
  for (int x = 0; x < 10; ++x) {
    if (m->PullTail(cls, Segment::kCold, 0, PullMode::kEvict, 0) <= 0 && m->opts.lru_segmented) {
      m->PullTail(cls, Segment::kHot, 0, PullMode::kJuggle, 0);
    }
    if (Item* n = m->slabs.AllocFree(cls)) return n;
  }
  return nullptr;
}

SlabRebalancer::Rescued SlabRebalancer::Rescue(Item* owner, Item* chunk, uint64_t hv,
                                               bool allow_evictions) {
  if (chunk != owner) return RescuePart(owner, chunk, allow_evictions);
  Engine::Impl* m = impl_;
  const bool chunked = HasFlag(owner, kItemChunked);
  // Its parts are repointed at the copy: nobody else may be reading them.
  // (Link + our reference; new references need the stripe we hold.) Acquire
  // pairs with Release's acq_rel decrement, so every earlier holder's reads
  // of the part links happen before the rewrite below.
  if (chunked && owner->refcount.load(std::memory_order_acquire) != 2) return Rescued::kBusy;
  const int cls = ClassOf(owner);
  Item* n = RescueChunk(cls, allow_evictions);
  if (n == nullptr) return Rescued::kNoMemory;
  constexpr uint16_t kKeep = kItemCas | kItemFetched | kItemActive | kItemHeap | kItemStale |
                             kItemTokenSent | kItemKeyBinary | kItemExpMs | kItemExpFar |
                             kItemChunked;
  n->flags.store(owner->flags.load(std::memory_order_relaxed) & kKeep, std::memory_order_relaxed);
  n->nkey = owner->nkey;
  n->nbytes = owner->nbytes;
  n->client_flags.store(owner->client_flags.load(std::memory_order_relaxed),
                        std::memory_order_relaxed);
  n->type = owner->type;
  n->exptime.store(owner->exptime.load(std::memory_order_relaxed), std::memory_order_relaxed);
  if (chunked) {
    std::memcpy(ItemKey(n), ItemKey(owner), owner->nkey);
    Item* first = FirstPart(owner);
    SetFirstPart(n, first);
    for (Item* p = first; p != nullptr; p = p->next) p->h_next = n;
    // The old head gives back only itself when released (its kItemChunked
    // stays until it is unlinked: it names the LRU it sits on).
    SetFirstPart(owner, nullptr);
  } else {
    std::memcpy(ItemKey(n), ItemKey(owner), size_t{owner->nkey} + owner->nbytes + 2);
  }
  // A heap value moves with the item: the old copy must not delete it.
  ClearFlag(owner, kItemHeap);
  const uint32_t last_access = owner->time.load(std::memory_order_relaxed);
  m->ReplaceLocked(owner, n, hv, m->bg_ts, CasOf(owner));
  if (chunked) ClearFlag(owner, kItemChunked);
  n->time.store(last_access, std::memory_order_relaxed);
  m->Release(n);  // the link holds it
  m->reassign_rescues.fetch_add(1, std::memory_order_relaxed);
  return Rescued::kYes;
}

SlabRebalancer::Rescued SlabRebalancer::RescuePart(Item* owner, Item* part,
                                                   bool allow_evictions) {
  Engine::Impl* m = impl_;
  if (owner->refcount.load(std::memory_order_acquire) != 2) return Rescued::kBusy;
  Item* n = RescueChunk(ClassOf(part), allow_evictions);
  if (n == nullptr) return Rescued::kNoMemory;
  n->flags.store(kItemChunkPart, std::memory_order_relaxed);
  n->h_next = owner;
  n->nbytes = part->nbytes;
  n->prev = part->prev;
  n->next = part->next;
  std::memcpy(PartData(n), PartData(part), part->nbytes);
  if (part->prev != nullptr) {
    part->prev->next = n;
  } else {
    SetFirstPart(owner, n);
  }
  if (part->next != nullptr) part->next->prev = n;
  part->refcount.store(0, std::memory_order_relaxed);
  m->slabs.Free(part);  // in the moving page: set aside
  m->reassign_chunk_rescues.fetch_add(1, std::memory_order_relaxed);
  return Rescued::kYes;
}

bool SlabRebalancer::MovePage(int src, int dst) {
  Engine::Impl* m = impl_;
  if (!m->slabs.BeginMove(src)) return false;
  m->reassign_running.store(true, std::memory_order_relaxed);
  // As memcached: a move that starts with memory full and no free page may
  // evict to find room for its rescues; otherwise only after it has waited.
  bool allow_evictions =
      m->slabs.global_pool_pages() == 0 && m->slabs.OverLimit(m->opts.item_size_max);
  const size_t n = m->slabs.moving_chunks();
  bool done = false;
  for (int pass = 0; pass < kMovePasses && !done; ++pass) {
    uint64_t busy = 0;
    MoveStatus last = MoveStatus::kNone;
    bool nomem = false;
    for (size_t i = 0; i < n; ++i) {
      Item* chunk = nullptr;
      Item* owner = m->slabs.RefMovingChunkOwner(i, &chunk);
      if (owner == nullptr) continue;
      // Acquire pairs with LinkLocked's release: the key is complete.
      if ((owner->flags.load(std::memory_order_acquire) & kItemLinked) == 0) {
        ++busy;  // a value still being read from its client
        last = MoveStatus::kBusyFloating;
        m->Release(owner);
        continue;
      }
      const uint64_t hv = HashKey(KeyOf(owner));
      {
        StripeLock l(&m->locks, m->locks.StripeOf(hv));
        const uint32_t now = m->Now();
        if (!HasFlag(owner, kItemLinked)) {
          ++busy;
          last = MoveStatus::kBusyUploading;
        } else if (m->Reclaimable(owner, now)) {
          m->reassign_inline_reclaim.fetch_add(1, std::memory_order_relaxed);
          if (m->IsExpired(owner, now)) m->ReportRemoval(owner, RemovalCause::kExpired);
          m->UnlinkLocked(owner, hv);
        } else {
          switch (Rescue(owner, chunk, hv, allow_evictions)) {
            case Rescued::kYes:
              break;
            case Rescued::kNoMemory:
              ++busy;
              last = MoveStatus::kFromLru;
              nomem = true;
              m->reassign_busy_nomem.fetch_add(1, std::memory_order_relaxed);
              break;
            case Rescued::kBusy:
              ++busy;
              last = MoveStatus::kBusyActive;
              // A chunked item read for this long: delete it (memcached's
              // busy_deletes after SLAB_MOVE_MAX_LOOPS).
              if (pass >= kBusyDeletePass) {
                m->reassign_busy_deletes.fetch_add(1, std::memory_order_relaxed);
                m->ReportRemoval(owner, RemovalCause::kEvicted);
                m->UnlinkLocked(owner, hv);
              }
              break;
          }
        }
      }
      m->Release(owner);
    }
    if (busy > 0) {
      m->reassign_busy.fetch_add(busy, std::memory_order_relaxed);
      m->reassign_last_busy.store(static_cast<uint8_t>(last), std::memory_order_relaxed);
    }
    done = m->slabs.MoveComplete();
    if (done) break;
    // Waited long for memory that never came: make room by eviction.
    if (nomem && pass >= kEvictAfterPass) allow_evictions = true;
    std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
  if (done) {
    m->slabs.FinishMove(dst);
    m->slabs_moved.fetch_add(1, std::memory_order_relaxed);
  } else {
    m->slabs.AbortMove();
  }
  m->reassign_running.store(false, std::memory_order_relaxed);
  return done;
}

bool SlabRebalancer::Decide(int* src, int* dst) {
  Engine::Impl* m = impl_;
  const int mode = automove();
  const int n = m->slabs.num_classes();
  const uint32_t now = m->Now();
  const uint32_t win = window();
  if (win != hist_window_) {  // first call, or `slabs automove window`
    hist_window_ = win;
    hist_ticks_ = 0;
    samples_.assign(static_cast<size_t>(kMaxClasses) * win, Sample{});
    last_.assign(kMaxClasses, ClassHistory{});
    for (int c = 1; c <= n; ++c) {
      last_[c].evicted = m->lru.stats(c).evicted.load(std::memory_order_relaxed);
      last_[c].outofmemory = m->lru.stats(c).outofmemory.load(std::memory_order_relaxed);
      last_[c].pages = m->slabs.Info(c).pages;
    }
  }
  ++hist_ticks_;
  // As memcached's slab_automove.c: free memory goes back only once all
  // memory is allocated, from a class whose window saw no pressure.
  const bool mem_full = m->slabs.OverLimit(m->opts.item_size_max);
  const size_t pool = m->slabs.global_pool_pages();
  size_t total_pages = pool;
  uint64_t evicted_total = 0;
  for (int c = 1; c <= n; ++c) {
    evicted_total += m->lru.stats(c).evicted.load(std::memory_order_relaxed) - last_[c].evicted;
    total_pages += m->slabs.Info(c).pages;
  }
  // slab_automove_freeratio: keep that share of memory as free pages in
  // the global pool (at least 2), topped up from classes holding more than
  // a page of free chunks.
  const auto watermark = std::max<size_t>(
      2, static_cast<size_t>(static_cast<double>(total_pages) * freeratio()));
  int youngest = 0, oldest = 0, donor = 0;
  uint64_t young_age = UINT64_MAX, old_age = 0;
  bool youngest_evicting = false;
  int evicting = 0;
  uint64_t evict_delta_max = 0;
  for (int c = 1; c <= n; ++c) {
    const LruClassStats& ls = m->lru.stats(c);
    const uint64_t ev = ls.evicted.load(std::memory_order_relaxed);
    const uint64_t oom = ls.outofmemory.load(std::memory_order_relaxed);
    const SlabClassInfo info = m->slabs.Info(c);
    Sample& w = samples_[static_cast<size_t>(c) * win + hist_ticks_ % win];
    w = Sample{};
    const uint64_t delta = ev - last_[c].evicted;
    if (delta > 0) {
      w.evicted = true;
      w.dirty = true;
      w.evicted_share =
          evicted_total ? static_cast<double>(delta) / static_cast<double>(evicted_total) : 0;
    }
    if (oom > last_[c].outofmemory || info.pages > last_[c].pages) w.dirty = true;
    w.age = m->lru.TailAge(c, Segment::kCold, now);
    last_[c] = ClassHistory{ev, oom, info.pages};
    uint64_t age_sum = 0, seen = 0;
    bool dirty = false;
    double share = 0;
    for (uint32_t i = 0; i < win; ++i) {
      const Sample& x = samples_[static_cast<size_t>(c) * win + i];
      age_sum += x.age;
      seen += x.evicted ? 1 : 0;
      dirty = dirty || x.dirty;
      share += x.evicted_share;
    }
    const uint64_t age = age_sum / win;
    if (delta > evict_delta_max) {
      evict_delta_max = delta;
      evicting = c;
    }
    if (mode == 1 && mem_full && !dirty) {
      // 2.5 pages' worth of free chunks go back at once (memcached).
      if (info.free_chunks > info.chunks_per_page * 5 / 2) {
        *src = c;
        *dst = 0;
        return true;
      }
      if (donor == 0 && pool < watermark && info.pages > 1 &&
          info.free_chunks > info.chunks_per_page) {
        donor = c;
      }
    }
    if (age > old_age && info.pages > 2) {
      oldest = c;
      old_age = age;
    }
    if (age < young_age && (seen > win / 2 || share / win > 0.25)) {
      youngest = c;
      young_age = age;
      youngest_evicting = w.evicted;
    }
  }
  if (mode == 1 && donor != 0) {
    *src = donor;
    *dst = 0;
    return true;
  }
  if (mode == 2) {
    // Aggressive: any eviction pulls a page from the class with most pages.
    if (evicting == 0) return false;
    int giver = 0;
    size_t most = 1;
    for (int c = 1; c <= n; ++c) {
      size_t p = m->slabs.Info(c).pages;
      if (c != evicting && p > most) {
        most = p;
        giver = c;
      }
    }
    if (giver == 0) return false;
    *src = giver;
    *dst = evicting;
    return true;
  }
  // Mode 1 decides only once the window has filled.
  if (mode == 1 && youngest != 0 && oldest != 0 && youngest != oldest && youngest_evicting &&
      hist_ticks_ > win &&
      static_cast<double>(young_age) < static_cast<double>(old_age) * ratio()) {
    *src = oldest;
    *dst = youngest;
    return true;
  }
  return false;
}

void SlabRebalancer::Loop() {
  // memcached's pace: automove looks once a second, except right after it
  // gave a page back to the global pool, when it looks again at once (freed
  // memory returns promptly; only moves between classes are rate-limited).
  bool again = false;
  for (;;) {
    int src = 0, dst = -1;
    {
      MutexLock l(&mu_);
      if (bg_.stopping()) return;
      if (req_dst_ < 0 && !again) cv_.WaitFor(kAutomoveMs);
      again = false;
      if (bg_.stopping()) return;
      if (req_dst_ >= 0) {
        src = req_src_;
        dst = req_dst_;
        req_dst_ = -1;
        impl_->reassign_running.store(true, std::memory_order_relaxed);
      }
    }
    if (dst >= 0) {
      MovePage(src, dst);
    } else if (automove() > 0 && !impl_->ExpiryHeld()) {
      // While CLIENT PAUSE holds expiry it holds eviction too: a page move
      // evicts the items it cannot rescue, so automove waits for the end.
      int s, d;
      if (Decide(&s, &d)) {
        const bool ok = MovePage(s, d);
        again = ok && d == 0;
        // memcached logs automove's moves (not requested ones) as sysevents.
        if (impl_->WantsSysEvents()) {
          SysEvent e{SysEvent::Kind::kSlabMove};
          e.src = s;
          e.dst = d;
          e.ok = ok;
          impl_->ReportSysEvent(e);
        }
      }
    }
  }
}

}  // namespace trove::engine
