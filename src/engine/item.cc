// Item life-cycle (allocate, link, unlink, release, free), payload copies
// across chunk parts, and ItemRef's accessors. Runs on any engine thread.
#include "engine/item.h"

#include <algorithm>
#include <thread>

#include "common/limits.h"
#include "engine/engine_impl.h"

namespace trove::engine {

namespace {
// Calls f(part_data, n) for payload bytes [off, off+len) of a chunked item.
template <typename F>
void VisitParts(Item* it, size_t off, size_t len, F&& f) {
  size_t base = 0;
  for (Item* p = FirstPart(it); p != nullptr && len > 0; p = p->next) {
    const size_t cap = p->nbytes;
    if (off < base + cap) {
      const size_t in = off - base;
      const size_t n = std::min(len, cap - in);
      f(PartData(p) + in, n);
      len -= n;
      off += n;
    }
    base += cap;
  }
  DCHECK(len == 0);
}
}  // namespace

void WritePayload(Item* it, size_t off, const char* src, size_t len) {
  if (!HasFlag(it, kItemChunked)) {
    std::memcpy(ItemData(it) + off, src, len);
    return;
  }
  VisitParts(it, off, len, [&](char* d, size_t n) {
    std::memcpy(d, src, n);
    src += n;
  });
}

void ReadPayload(const Item* it, size_t off, char* dst, size_t len) {
  if (!HasFlag(it, kItemChunked)) {
    std::memcpy(dst, ItemData(it) + off, len);
    return;
  }
  VisitParts(const_cast<Item*>(it), off, len, [&](const char* s, size_t n) {
    std::memcpy(dst, s, n);
    dst += n;
  });
}

// --- Engine::Impl item life-cycle ---

void Engine::Impl::SetExpiryMs(Item* it, int64_t unix_ms) const {
  if (unix_ms == 0) {
    StoreExpiry(it, 0, 0);
  } else if (unix_ms < started * 1000 + 1000) {  // compared, not subtracted: no overflow
    StoreExpiry(it, 1, 0);  // rel time 1 is always in the past
  } else {
    StoreExpiryRelMs(it, static_cast<uint64_t>(unix_ms - started * 1000));
  }
}

uint32_t Engine::Impl::RelTime(int64_t exptime) const {
  if (exptime == 0) return 0;
  if (exptime < 0) return 1;  // rel time 1 is always in the past
  int64_t rel;
  if (exptime > limits::kRealtimeMaxDelta) {
    if (exptime <= started) return 1;
    rel = exptime - started;
  } else {
    rel = exptime + Now();
  }
  return static_cast<uint32_t>(std::min<int64_t>(rel, UINT32_MAX));
}

bool Engine::Impl::IsFlushed(const Item* it, uint32_t now) const {
  uint32_t ol = oldest_live.load(std::memory_order_relaxed);
  if (ol == 0 || ol > now) return false;
  if (it->time.load(std::memory_order_relaxed) <= ol) return true;
  uint64_t oc = oldest_cas.load(std::memory_order_relaxed);
  uint64_t cas = CasOf(it);
  return oc != 0 && cas != 0 && cas < oc;
}

Item* Engine::Impl::AllocChunk(int cls, Item* owner) {
  // Bounded: each round either gets memory or frees some (memcached tries
  // 10). A round that frees nothing is retried a few times after a yield:
  // the tail's stripes may be briefly held by the hash expander or a
  // crawler, and failing the store for that would be a spurious OOM.
  int idle = 0;
  for (int tries = 0; tries < 10; ++tries) {
    // Unsegmented (memcached's compat mode): every allocation first looks at
    // the COLD tail for an expired or flushed item to reclaim (reused memory,
    // counted in `reclaimed`), as do_item_alloc_pull does.
    if (!opts.lru_segmented) PullTail(cls, Segment::kCold, 0, PullMode::kReclaim, 0);
    if (Item* it = slabs.Alloc(cls, owner)) return it;
    const int largest = slabs.largest_class();
    const bool freed = FreeSomething(cls) || (owner != nullptr && cls != largest &&
                                              FreeSomething(largest));
    if (!freed) {
      if (++idle > 3) break;
      std::this_thread::yield();
    }
  }
  lru.stats(cls).outofmemory.fetch_add(1, std::memory_order_relaxed);
  return nullptr;
}

Item* Engine::Impl::AllocItem(std::string_view key, uint32_t flags, uint32_t exptime,
                              size_t nbytes, ValueType type, AllocStatus* status,
                              size_t max_value) {
  const size_t payload = nbytes + 2;
  const size_t ntotal = header + key.size() + payload;
  // Item sizes are 32 bits (Ntotal): no limit lets an item pass that.
  const bool too_large = max_value == 0 ? ntotal > opts.item_size_max
                                        : nbytes > max_value || ntotal > UINT32_MAX;
  if (key.size() > limits::kEngineMaxKey || too_large) {
    *status = AllocStatus::kTooLarge;
    return nullptr;
  }
  const uint16_t base_flags = opts.use_cas ? kItemCas : 0;
  Item* it;
  if (ntotal <= slabs.ChunkSize(slabs.largest_class())) {
    it = AllocChunk(slabs.ClassFor(ntotal), nullptr);
    if (it == nullptr) {
      *status = AllocStatus::kNoMemory;
      return nullptr;
    }
    it->flags.store(base_flags, std::memory_order_relaxed);
  } else {
    // Chunked: a small head (header, key, first-part pointer) plus value
    // parts from the largest class, the last part from the class that fits
    // it (memcached's do_item_alloc_chunk). As many parts as the size needs.
    const int largest = slabs.largest_class();
    const size_t part_cap = slabs.ChunkSize(largest) - kItemHeader;
    const int hcls = slabs.ClassFor(ChunkedHeadSize(header, key.size()));
    it = hcls == 0 ? nullptr : AllocChunk(hcls, nullptr);
    if (it == nullptr) {
      *status = hcls == 0 ? AllocStatus::kTooLarge : AllocStatus::kNoMemory;
      return nullptr;
    }
    it->flags.store(base_flags | kItemChunked, std::memory_order_relaxed);
    it->nkey = static_cast<uint16_t>(key.size());
    SetFirstPart(it, nullptr);
    Item* last = nullptr;
    for (size_t left = payload; left > 0;) {
      const size_t n = std::min(left, part_cap);
      const int pcls = slabs.ClassFor(kItemHeader + n);
      Item* p = AllocChunk(pcls, it);
      // A tail whose class has run dry (its chunks all belong to live
      // chunked items, which evict from the largest class) takes a full
      // part instead: a little waste rather than a refused store.
      if (p == nullptr && pcls != largest) p = AllocChunk(largest, it);
      if (p == nullptr) {
        FreeParts(it);
        it->refcount.store(0, std::memory_order_relaxed);
        slabs.Free(it);
        *status = AllocStatus::kNoMemory;
        return nullptr;
      }
      p->nbytes = static_cast<uint32_t>(n);
      p->next = nullptr;
      p->prev = last;
      if (last == nullptr) {
        SetFirstPart(it, p);
      } else {
        last->next = p;
      }
      last = p;
      left -= n;
    }
  }
  it->next = it->prev = nullptr;
  it->h_next = nullptr;
  it->nkey = static_cast<uint16_t>(key.size());
  it->nbytes = static_cast<uint32_t>(nbytes);
  it->client_flags.store(flags, std::memory_order_relaxed);
  it->type = static_cast<uint8_t>(type);
  it->exptime.store(exptime, std::memory_order_relaxed);
  it->time.store(Now(), std::memory_order_relaxed);
  SetCas(it, 0);
  std::memcpy(ItemKey(it), key.data(), key.size());
  WritePayload(it, nbytes, "\r\n", 2);
  *status = AllocStatus::kOk;
  return it;
}

void Engine::Impl::LinkLocked(Item* it, uint64_t hv, ThreadStats* ts, uint64_t cas) {
  DCHECK(!HasFlag(it, kItemLinked));
  // While expiry is held an expired item may still be linked under this key
  // (PeekLocked left it): a write replaces it, so a key is never linked twice.
  // Checked from the first CLIENT PAUSE on (sticky), because a hold can end
  // between a writer's PeekLocked and this link: one more walk of a bucket
  // that is already in cache, per link, once a pause has ever happened.
  if (expiry_hold_used.load(std::memory_order_relaxed)) {
    if (Item* held = table.FindLocked(KeyOf(it), hv)) {
      ReportRemoval(held, RemovalCause::kExpired);
      UnlinkLocked(held, hv);
    }
  }
  uint32_t now = Now();
  SetCas(it, cas);
  it->time.store(now, std::memory_order_relaxed);
  // memcached's do_item_alloc: TEMP for short TTLs, then HOT, or only COLD
  // when the LRU is not segmented.
  Segment seg = opts.lru_segmented ? Segment::kHot : Segment::kCold;
  uint32_t exp = ExpirySecOf(it);
  if (opts.temp_lru && exp != 0 && exp - now < opts.temp_ttl) seg = Segment::kTemp;
  SetSegment(it, seg);
  it->refcount.fetch_add(1, std::memory_order_relaxed);  // the link's reference
  // Release: publishes key and value to the slab rebalancer, which reads the
  // key of a LINKED item before it knows which stripe to take.
  it->flags.fetch_or(kItemLinked, std::memory_order_release);
  table.InsertLocked(it, hv);
  lru.Link(it, Ntotal(it));
  Ts(ts)->total_items.Add();
}

void Engine::Impl::UnlinkLocked(Item* it, uint64_t hv) {
  if (!HasFlag(it, kItemLinked)) return;
  ClearFlag(it, kItemLinked);
  table.RemoveLocked(it, hv);
  lru.Unlink(it, Ntotal(it));
  Release(it);
}

void Engine::Impl::ReportRemovalSlow(const Item* it, RemovalCause cause, ItemObserver* o) {
  const uint32_t now = Now();
  const uint64_t exp = ExpiryRelSec(it);
  const uint32_t last = it->time.load(std::memory_order_relaxed);
  ItemRemoval r;
  r.cause = cause;
  r.key = KeyOf(it);
  r.clsid = ClassOf(it);
  r.value_bytes = it->nbytes;
  r.ttl = exp == 0 ? -1 : (exp > now ? static_cast<int64_t>(exp - now) : 0);
  r.idle = now > last ? now - last : 0;
  r.fetched = HasFlag(it, kItemFetched);
  r.value_type = it->type;
  o->OnRemoved(r);
}

void Engine::Impl::UnlinkLruHeld(Item* it, uint64_t hv, Lru::List& list) {
  DCHECK(HasFlag(it, kItemLinked));
  ClearFlag(it, kItemLinked);
  table.RemoveLocked(it, hv);
  Lru::UnlinkLocked(list, it, Ntotal(it));
  Release(it);
}

void Engine::Impl::ReplaceLocked(Item* old_it, Item* new_it, uint64_t hv, ThreadStats* ts,
                                 uint64_t cas) {
  UnlinkLocked(old_it, hv);
  LinkLocked(new_it, hv, ts, cas);
}

void Engine::Impl::Release(Item* it) {
  // acq_rel: the thread that frees sees every holder's last access.
  uint16_t prev = it->refcount.fetch_sub(1, std::memory_order_acq_rel);
  CHECK(prev != 0);
  if (prev == 1) FreeItem(it);
}

void Engine::Impl::FreeItem(Item* it) {
  CHECK(!HasFlag(it, kItemLinked));
  if (HasFlag(it, kItemHeap)) {
    HeapValue* hv = HeapValueOf(it);
    if (hv != nullptr) {
      slabs.AddHeapBytes(-static_cast<int64_t>(hv->MemoryUsage()));
      delete hv;
    }
  }
  if (HasFlag(it, kItemChunked)) FreeParts(it);
  slabs.Free(it);
}

void Engine::Impl::FreeParts(Item* head) {
  Item* p = FirstPart(head);
  SetFirstPart(head, nullptr);
  while (p != nullptr) {
    Item* next = p->next;
    p->refcount.store(0, std::memory_order_relaxed);
    slabs.Free(p);
    p = next;
  }
}

Item* Engine::Impl::PeekLocked(std::string_view key, uint64_t hv, uint32_t now, ThreadStats* ts) {
  Item* it = table.FindLocked(key, hv);
  if (it == nullptr) return nullptr;
  if (IsFlushed(it, now)) {
    Ts(ts)->get_flushed.Add();
    UnlinkLocked(it, hv);
    return nullptr;
  }
  if (IsExpired(it, now)) {
    if (ExpiryHeld()) return nullptr;  // reads as missing, stays (LinkLocked replaces it)
    Ts(ts)->get_expired.Add();
    ReportRemoval(it, RemovalCause::kExpired);
    UnlinkLocked(it, hv);
    return nullptr;
  }
  return it;
}

Item* Engine::Impl::FindLocked(std::string_view key, uint64_t hv, uint32_t now, ThreadStats* ts) {
  Item* it = PeekLocked(key, hv, now, ts);
  if (it == nullptr) return nullptr;
  // A 16-bit count: refuse a new reference near the top (memcached does too).
  if (it->refcount.fetch_add(1, std::memory_order_relaxed) >= 65000) {
    it->refcount.fetch_sub(1, std::memory_order_relaxed);
    return nullptr;
  }
  return it;
}

// --- ItemRef ---

void ItemRef::Reset() {
  if (item_ != nullptr) {
    engine_->impl_->Release(item_);
    item_ = nullptr;
  }
}

std::string_view ItemRef::key() const { return KeyOf(item_); }
uint32_t ItemRef::client_flags() const { return ClientFlagsOf(item_); }
uint64_t ItemRef::cas() const { return CasOf(item_); }
uint32_t ItemRef::value_length() const { return item_->nbytes; }
ValueType ItemRef::type() const { return static_cast<ValueType>(item_->type); }
int ItemRef::slab_class() const { return ClassOf(item_); }
bool ItemRef::is_heap() const { return HasFlag(item_, kItemHeap); }
bool ItemRef::is_chunked() const { return HasFlag(item_, kItemChunked); }
bool ItemRef::key_is_binary() const { return HasFlag(item_, kItemKeyBinary); }

int64_t ItemRef::expires_at_unix() const {
  const uint64_t e = ExpiryRelSec(item_);
  return e == 0 ? 0 : engine_->impl_->started + static_cast<int64_t>(e);
}

int64_t ItemRef::expires_at_unix_ms() const {
  const uint64_t e = ExpiryRelMs(item_);
  if (e == 0) return 0;
  // Every expiry stored came from an int64 unix time, so this fits; the
  // bound only matters to a reader racing a change without the stripe.
  const int64_t base = engine_->impl_->started * 1000;
  return static_cast<int64_t>(std::min<uint64_t>(e, static_cast<uint64_t>(INT64_MAX - base))) +
         base;
}

int ItemRef::ValueSpans(iovec* out, int max, bool with_crlf, size_t skip) const {
  size_t total = size_t{item_->nbytes} + (with_crlf ? 2 : 0);
  if (!HasFlag(item_, kItemChunked)) {
    if (max < 1 || skip > 0) return 0;
    out[0].iov_base = const_cast<char*>(ItemData(item_));
    out[0].iov_len = total;
    return 1;
  }
  int n = 0;
  for (Item* p = FirstPart(item_); p != nullptr && total > 0 && n < max; p = p->next) {
    const size_t len = std::min<size_t>(total, p->nbytes);
    total -= len;
    if (skip > 0) {
      --skip;
      continue;
    }
    out[n].iov_base = PartData(p);
    out[n].iov_len = len;
    ++n;
  }
  return n;
}

size_t ItemRef::SpanCount(bool with_crlf) const {
  if (!HasFlag(item_, kItemChunked)) return 1;
  size_t total = size_t{item_->nbytes} + (with_crlf ? 2 : 0);
  size_t n = 0;
  for (Item* p = FirstPart(item_); p != nullptr && total > 0; p = p->next) {
    total -= std::min<size_t>(total, p->nbytes);
    ++n;
  }
  return n;
}

std::string_view ItemRef::value() const {
  DCHECK(!HasFlag(item_, kItemChunked));
  return {ItemData(item_), item_->nbytes};
}

void ItemRef::CopyValue(std::string* out) const {
  out->resize(item_->nbytes);
  ReadPayload(item_, 0, out->data(), item_->nbytes);
}

char* ItemRef::writable_value() {
  DCHECK(!HasFlag(item_, kItemLinked));
  return HasFlag(item_, kItemChunked) ? nullptr : ItemData(item_);
}

void ItemRef::WriteValue(size_t off, const char* src, size_t len) {
  DCHECK(!HasFlag(item_, kItemLinked));
  DCHECK(off + len <= item_->nbytes);
  WritePayload(item_, off, src, len);
}

HeapValue* ItemRef::heap() const { return HeapValueOf(item_); }

void Engine::ReleaseRaw(void* engine, void* item) {
  static_cast<Engine*>(engine)->impl_->Release(static_cast<Item*>(item));
}

}  // namespace trove::engine
