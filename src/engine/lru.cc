// Segmented LRU lists and the tail pull (memcached's lru_pull_tail): the
// eviction path of workers and the juggling of the LRU maintainer.
#include "engine/lru.h"

#include "engine/engine_impl.h"

namespace trove::engine {

void Lru::LinkLocked(List& l, Item* it, uint32_t ntotal) {
  it->prev = nullptr;
  it->next = l.head;
  if (l.head != nullptr) l.head->prev = it;
  l.head = it;
  if (l.tail == nullptr) l.tail = it;
  ++l.items;
  l.bytes += ntotal;
}

void Lru::UnlinkLocked(List& l, Item* it, uint32_t ntotal) {
  if (l.head == it) l.head = it->next;
  if (l.tail == it) l.tail = it->prev;
  if (it->next != nullptr) it->next->prev = it->prev;
  if (it->prev != nullptr) it->prev->next = it->next;
  it->next = it->prev = nullptr;
  --l.items;
  l.bytes -= ntotal;
}

void Lru::Link(Item* it, uint32_t ntotal) {
  List& l = list(LruClassOf(it), SegmentOf(it));
  MutexLock g(&l.mu);
  LinkLocked(l, it, ntotal);
}

void Lru::Unlink(Item* it, uint32_t ntotal) {
  List& l = list(LruClassOf(it), SegmentOf(it));
  MutexLock g(&l.mu);
  UnlinkLocked(l, it, ntotal);
}

uint64_t Lru::Items(int cls, Segment s) {
  List& l = list(cls, s);
  MutexLock g(&l.mu);
  return l.items;
}

uint64_t Lru::Bytes(int cls, Segment s) {
  List& l = list(cls, s);
  MutexLock g(&l.mu);
  return l.bytes;
}

uint32_t Lru::TailAge(int cls, Segment s, uint32_t now) {
  List& l = list(cls, s);
  MutexLock g(&l.mu);
  if (l.tail == nullptr) return 0;
  uint32_t t = l.tail->time.load(std::memory_order_relaxed);
  return now > t ? now - t : 0;
}

namespace {
// REQUIRES: l.mu held and it on l.
void Rotate(Lru::List& l, Item* it) NO_THREAD_SAFETY_ANALYSIS {
  if (l.head == it) return;
  const uint32_t n = static_cast<uint32_t>(HeaderSize(it) + it->nkey + it->nbytes + 2);
  Lru::UnlinkLocked(l, it, n);
  Lru::LinkLocked(l, it, n);
}
}  // namespace

namespace {
// An active item kept in its own list: moved back to the head.
// REQUIRES: l.mu held.
void RelinkAtHead(Lru::List& l, Item* it, uint32_t ntotal, LruClassStats& st) REQUIRES(l.mu) {
  Lru::UnlinkLocked(l, it, ntotal);
  Lru::LinkLocked(l, it, ntotal);
  st.moves_within_lru.fetch_add(1, std::memory_order_relaxed);
}
}  // namespace

int Engine::Impl::PullTail(int cls, Segment seg, uint64_t total_bytes, PullMode mode,
                           uint32_t max_age) {
  Lru::List& l = lru.list(cls, seg);
  LruClassStats& st = lru.stats(cls);
  const uint32_t now = Now();
  int removed = 0;
  Item* move_it = nullptr;  // kept with its stripe and a reference
  uint32_t move_stripe = 0;
  Segment move_to = seg;
  {
    MutexLock g(&l.mu);
    Item* search = l.tail;
    // Walk at most 5 items past busy ones (memcached's tries).
    for (int tries = 5; tries > 0 && search != nullptr; --tries) {
      Item* next = search->prev;
      const uint64_t hv = HashKey(KeyOf(search));
      const uint32_t stripe = locks.StripeOf(hv);
      // LRU -> stripe: the one reverse step, so only a try-lock.
      if (!locks.TryLock(stripe)) {
        // Rotate it to the head (links only; the LRU lock guards them): a
        // stripe held for a while must not pin every walk to the same tail.
        Rotate(l, search);
        search = next;
        continue;
      }
      // The link holds one reference; any other means a reader is sending it.
      if (search->refcount.fetch_add(1, std::memory_order_acquire) != 1) {
        search->refcount.fetch_sub(1, std::memory_order_relaxed);
        st.lrutail_reflocked.fetch_add(1, std::memory_order_relaxed);
        locks.Unlock(stripe);
        Rotate(l, search);
        search = next;
        continue;
      }
      if (Reclaimable(search, now)) {
        if (IsExpired(search, now)) ReportRemoval(search, RemovalCause::kExpired);
        st.reclaimed.fetch_add(1, std::memory_order_relaxed);
        if (!HasFlag(search, kItemFetched)) st.expired_unfetched.fetch_add(1, std::memory_order_relaxed);
        UnlinkLruHeld(search, hv, l);
        Release(search);
        locks.Unlock(stripe);
        ++removed;
        search = next;
        continue;
      }
      switch (seg) {
        case Segment::kHot:
        case Segment::kWarm: {
          if (mode != PullMode::kJuggle) break;
          const int pct = seg == Segment::kHot ? opts.hot_lru_pct : opts.warm_lru_pct;
          const uint64_t limit = total_bytes * static_cast<uint64_t>(pct) / 100;
          const uint32_t last = search->time.load(std::memory_order_relaxed);
          const uint32_t age = now > last ? now - last : 0;
          if (HasFlag(search, kItemActive)) {
            ClearFlag(search, kItemActive);
            ++removed;
            if (seg == Segment::kWarm) {
              RelinkAtHead(l, search, Ntotal(search), st);  // rescued in place: back to the head of WARM
            } else {
              move_it = search;
              move_to = Segment::kWarm;
              st.moves_to_warm.fetch_add(1, std::memory_order_relaxed);
            }
          } else if (l.bytes > limit || age > max_age) {
            move_it = search;
            move_to = Segment::kCold;
            st.moves_to_cold.fetch_add(1, std::memory_order_relaxed);
            ++removed;
          }
          break;
        }
        case Segment::kCold:
          if (mode == PullMode::kEvict) {
            st.evicted.fetch_add(1, std::memory_order_relaxed);
            const uint32_t last = search->time.load(std::memory_order_relaxed);
            st.evicted_time.store(now > last ? now - last : 0, std::memory_order_relaxed);
            if (search->exptime.load(std::memory_order_relaxed) != 0) {
              st.evicted_nonzero.fetch_add(1, std::memory_order_relaxed);
            }
            if (!HasFlag(search, kItemFetched)) st.evicted_unfetched.fetch_add(1, std::memory_order_relaxed);
            if (HasFlag(search, kItemActive)) st.evicted_active.fetch_add(1, std::memory_order_relaxed);
            ReportRemoval(search, RemovalCause::kEvicted);
            UnlinkLruHeld(search, hv, l);
            ++removed;
          } else if (mode == PullMode::kJuggle && HasFlag(search, kItemActive)) {
            ClearFlag(search, kItemActive);
            ++removed;
            if (!opts.lru_segmented) {
              RelinkAtHead(l, search, Ntotal(search), st);  // unsegmented: back to the head of COLD
            } else {
              move_it = search;
              move_to = Segment::kWarm;
              st.moves_to_warm.fetch_add(1, std::memory_order_relaxed);
            }
          }
          break;
        case Segment::kTemp:
          break;  // TEMP items only leave by expiring
      }
      if (move_it != nullptr) {
        Lru::UnlinkLocked(l, move_it, Ntotal(move_it));
        move_stripe = stripe;
      } else {
        Release(search);
        locks.Unlock(stripe);
      }
      break;  // past the reclaims, one item decides the pull
    }
  }
  if (move_it != nullptr) {
    // Between lists with the stripe held: nobody can unlink it meanwhile.
    SetSegment(move_it, move_to);
    lru.Link(move_it, Ntotal(move_it));
    Release(move_it);
    locks.Unlock(move_stripe);
  }
  return removed;
}

bool Engine::Impl::FreeSomething(int cls) {
  const PullMode mode =
      evict_to_free.load(std::memory_order_relaxed) ? PullMode::kEvict : PullMode::kReclaim;
  if (PullTail(cls, Segment::kCold, 0, mode, 0) > 0) return true;
  // COLD had nothing to give: push HOT (then WARM) tails down into COLD.
  if (PullTail(cls, Segment::kHot, 0, PullMode::kJuggle, 0) > 0) return true;
  if (PullTail(cls, Segment::kWarm, 0, PullMode::kJuggle, 0) > 0) return true;
  return PullTail(cls, Segment::kTemp, 0, PullMode::kReclaim, 0) > 0;
}

int Engine::Impl::Juggle(int cls) {
  const uint32_t now = Now();
  if (opts.temp_lru) PullTail(cls, Segment::kTemp, 0, PullMode::kReclaim, 0);
  const uint32_t cold_age = lru.TailAge(cls, Segment::kCold, now);
  const auto hot_age = static_cast<uint32_t>(cold_age * opts.hot_max_factor);
  const auto warm_age = static_cast<uint32_t>(cold_age * opts.warm_max_factor);
  const uint64_t total = lru.Bytes(cls, Segment::kHot) + lru.Bytes(cls, Segment::kWarm) +
                         lru.Bytes(cls, Segment::kCold);
  int did = 0;
  for (int i = 0; i < 500; ++i) {
    int more = PullTail(cls, Segment::kHot, total, PullMode::kJuggle, hot_age);
    more += PullTail(cls, Segment::kWarm, total, PullMode::kJuggle, warm_age);
    more += PullTail(cls, Segment::kCold, 0, PullMode::kJuggle, 0);
    if (more == 0) break;
    ++did;
  }
  return did;
}

}  // namespace trove::engine
