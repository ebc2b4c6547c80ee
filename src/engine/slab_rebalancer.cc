// SlabRebalancer thread: page moves and the automove policy. Background.
#include "engine/slab_rebalancer.h"

#include <chrono>
#include <cstring>

#include "engine/engine_impl.h"

namespace trove::engine {

namespace {
// memcached's automove looks once a second.
constexpr int64_t kAutomoveMs = 1000;
// A move gives up after this many passes over the page (busy items: a
// reader holding a reference, or a value still being read from a client).
constexpr int kMovePasses = 1000;
}  // namespace

SlabRebalancer::SlabRebalancer(Engine::Impl* impl)
    : impl_(impl),
      automove_(impl->opts.slab_automove),
      last_evicted_(kMaxClasses, 0),
      evict_windows_(kMaxClasses, 0) {}

void SlabRebalancer::Start() {
  if (thread_.joinable()) return;
  {
    MutexLock l(&mu_);
    stop_ = false;
  }
  thread_ = std::thread([this] { Loop(); });
}

void SlabRebalancer::Stop() {
  if (!thread_.joinable()) return;
  {
    MutexLock l(&mu_);
    stop_ = true;
    cv_.SignalAll();
  }
  thread_.join();
}

std::string SlabRebalancer::Reassign(int src, int dst) {
  const int n = impl_->slabs.num_classes();
  if (src == dst) return "SAME src and dst class are identical";
  if (src < 1 || src > n || dst < 0 || dst > n) return "BADCLASS invalid src or dst class id";
  if (impl_->slabs.Info(src).pages < 2) return "NOSPARE source class has no spare pages";
  MutexLock l(&mu_);
  if (req_dst_ >= 0 || impl_->reassign_running.load(std::memory_order_relaxed)) {
    return "BUSY currently processing reassign request";
  }
  if (!thread_.joinable()) return "BUSY currently processing reassign request";
  req_src_ = src;
  req_dst_ = dst;
  cv_.SignalAll();
  return "OK";
}

bool SlabRebalancer::Rescue(Item* it, uint64_t hv) {
  // Chunked values are evicted (their parts span several pages).
  if (HasFlag(it, kItemChunked)) return false;
  Engine::Impl* m = impl_;
  const int cls = ClassOf(it);
  // A free chunk of the same class outside the moving page (its chunks are
  // never on the free list). No eviction here: that would defeat the move.
  Item* n = m->slabs.AllocFree(cls);
  if (n == nullptr) return false;
  constexpr uint16_t kKeep = kItemCas | kItemFetched | kItemActive | kItemHeap | kItemStale |
                             kItemTokenSent | kItemKeyBinary | kItemExpMs;
  n->flags.store(it->flags.load(std::memory_order_relaxed) & kKeep, std::memory_order_relaxed);
  n->nkey = it->nkey;
  n->nbytes = it->nbytes;
  n->client_flags.store(it->client_flags.load(std::memory_order_relaxed), std::memory_order_relaxed);
  n->type = it->type;
  n->exptime.store(it->exptime.load(std::memory_order_relaxed), std::memory_order_relaxed);
  std::memcpy(ItemKey(n), ItemKey(it), size_t{it->nkey} + it->nbytes + 2);
  // A heap value moves with the item: the old copy must not delete it.
  ClearFlag(it, kItemHeap);
  const uint32_t last_access = it->time.load(std::memory_order_relaxed);
  m->ReplaceLocked(it, n, hv, m->bg_ts, CasOf(it));
  n->time.store(last_access, std::memory_order_relaxed);
  m->Release(n);  // the link holds it
  m->reassign_rescues.fetch_add(1, std::memory_order_relaxed);
  return true;
}

bool SlabRebalancer::MovePage(int src, int dst) {
  Engine::Impl* m = impl_;
  if (!m->slabs.BeginMove(src)) return false;
  m->reassign_running.store(true, std::memory_order_relaxed);
  const size_t n = m->slabs.moving_chunks();
  bool done = false;
  for (int pass = 0; pass < kMovePasses && !done; ++pass) {
    for (size_t i = 0; i < n; ++i) {
      Item* owner = m->slabs.RefMovingChunkOwner(i);
      if (owner == nullptr) continue;
      // Acquire pairs with LinkLocked's release: the key is complete.
      if ((owner->flags.load(std::memory_order_acquire) & kItemLinked) != 0) {
        const uint64_t hv = HashKey(KeyOf(owner));
        StripeLock l(&m->locks, m->locks.StripeOf(hv));
        if (HasFlag(owner, kItemLinked)) {
          const uint32_t now = m->Now();
          if (m->IsDead(owner, now)) {
            m->reassign_inline_reclaim.fetch_add(1, std::memory_order_relaxed);
            if (m->IsExpired(owner, now)) m->ReportRemoval(owner, RemovalCause::kExpired);
            m->UnlinkLocked(owner, hv);
          } else if (!Rescue(owner, hv)) {
            m->reassign_evictions.fetch_add(1, std::memory_order_relaxed);
            m->ReportRemoval(owner, RemovalCause::kEvicted);
            m->UnlinkLocked(owner, hv);
          }
        }
        m->Release(owner);
      } else {
        m->reassign_busy.fetch_add(1, std::memory_order_relaxed);
        m->Release(owner);
      }
    }
    done = m->slabs.MoveComplete();
    if (!done) std::this_thread::sleep_for(std::chrono::microseconds(500));
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
  int youngest = 0, oldest = 0;
  uint32_t young_age = UINT32_MAX, old_age = 0;
  int evicting = 0;
  uint64_t evict_delta_max = 0;
  for (int c = 1; c <= n; ++c) {
    const uint64_t ev = m->lru.stats(c).evicted.load(std::memory_order_relaxed);
    const uint64_t delta = ev - last_evicted_[c];
    last_evicted_[c] = ev;
    evict_windows_[c] = delta > 0 ? evict_windows_[c] + 1 : 0;
    SlabClassInfo info = m->slabs.Info(c);
    // Mode 1: a class holding 2.5 pages' worth of free chunks gives a page
    // back to the global pool (memcached's free-memory reclaim).
    if (mode >= 1 && info.pages > 2 && info.free_chunks > info.chunks_per_page * 5 / 2) {
      *src = c;
      *dst = 0;
      return true;
    }
    if (delta > evict_delta_max) {
      evict_delta_max = delta;
      evicting = c;
    }
    const uint32_t age = m->lru.TailAge(c, Segment::kCold, now);
    if (info.pages > 1 && age > old_age) {
      old_age = age;
      oldest = c;
    }
    if (delta > 0 && age < young_age) {
      young_age = age;
      youngest = c;
    }
  }
  if (mode == 2) {
    // Aggressive: any eviction pulls a page from the class with most pages.
    if (evicting == 0) return false;
    int donor = 0;
    size_t most = 1;
    for (int c = 1; c <= n; ++c) {
      size_t p = m->slabs.Info(c).pages;
      if (c != evicting && p > most) {
        most = p;
        donor = c;
      }
    }
    if (donor == 0) return false;
    *src = donor;
    *dst = evicting;
    return true;
  }
  if (mode == 1 && youngest != 0 && oldest != 0 && youngest != oldest &&
      evict_windows_[youngest] >= 3 &&
      static_cast<double>(young_age) < static_cast<double>(old_age) * m->opts.slab_automove_ratio) {
    *src = oldest;
    *dst = youngest;
    evict_windows_[youngest] = 0;
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
      if (stop_) return;
      if (req_dst_ < 0 && !again) cv_.WaitFor(kAutomoveMs);
      again = false;
      if (stop_) return;
      if (req_dst_ >= 0) {
        src = req_src_;
        dst = req_dst_;
        req_dst_ = -1;
        impl_->reassign_running.store(true, std::memory_order_relaxed);
      }
    }
    if (dst >= 0) {
      MovePage(src, dst);
    } else if (automove() > 0) {
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
