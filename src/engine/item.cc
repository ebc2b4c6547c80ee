// Item life-cycle (allocate, link, unlink, release, free), payload copies
// across chunk parts, and ItemRef's accessors. Runs on any engine thread.
#include "engine/item.h"

#include <algorithm>
#include <thread>

#include "common/limits.h"
#include "engine/engine_impl.h"

namespace trove::engine {

void WritePayload(Item* it, size_t off, const char* src, size_t len) {
  if (!HasFlag(it, kItemChunked)) {
    std::memcpy(ItemData(it) + off, src, len);
    return;
  }
  Item* const* parts = PartArray(it);
  size_t base = 0;
  for (size_t i = 0; len > 0; ++i) {
    Item* p = parts[i];
    size_t cap = p->nbytes;
    if (off < base + cap) {
      size_t in = off - base;
      size_t n = std::min(len, cap - in);
      std::memcpy(PartData(p) + in, src, n);
      src += n;
      len -= n;
      off += n;
    }
    base += cap;
  }
}

void ReadPayload(const Item* it, size_t off, char* dst, size_t len) {
  if (!HasFlag(it, kItemChunked)) {
    std::memcpy(dst, ItemData(it) + off, len);
    return;
  }
  Item* const* parts = PartArray(it);
  size_t base = 0;
  for (size_t i = 0; len > 0; ++i) {
    Item* p = parts[i];
    size_t cap = p->nbytes;
    if (off < base + cap) {
      size_t in = off - base;
      size_t n = std::min(len, cap - in);
      std::memcpy(dst, PartData(p) + in, n);
      dst += n;
      len -= n;
      off += n;
    }
    base += cap;
  }
}

// --- Engine::Impl item life-cycle ---

void Engine::Impl::SetExpiryMs(Item* it, int64_t unix_ms) const {
  uint32_t sec = 0;
  uint32_t ms = 0;
  if (unix_ms != 0) {
    int64_t rel = unix_ms - started * 1000;
    if (rel < 1000) {
      sec = 1;  // rel time 1 is always in the past
    } else {
      sec = static_cast<uint32_t>(std::min<int64_t>(rel / 1000, UINT32_MAX));
      ms = static_cast<uint32_t>(rel % 1000);
    }
  }
  StoreExpiry(it, sec, ms);
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
                              size_t nbytes, ValueType type, AllocStatus* status) {
  const size_t payload = nbytes + 2;
  const size_t ntotal = header + key.size() + payload;
  if (key.size() > limits::kEngineMaxKey || ntotal > opts.item_size_max) {
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
    // Chunked: a small head (header, key, part array) plus value parts from
    // the largest class, the last part from the class that fits it.
    const size_t part_cap = slabs.ChunkSize(slabs.largest_class()) - kItemHeader;
    const size_t nparts = PartsFor(payload, part_cap);
    const size_t head_size = PartArrayOffset(header, key.size()) + nparts * sizeof(Item*);
    int hcls = slabs.ClassFor(head_size);
    it = hcls == 0 ? nullptr : AllocChunk(hcls, nullptr);
    if (it == nullptr) {
      *status = hcls == 0 ? AllocStatus::kTooLarge : AllocStatus::kNoMemory;
      return nullptr;
    }
    it->flags.store(base_flags | kItemChunked, std::memory_order_relaxed);
    it->nkey = static_cast<uint16_t>(key.size());
    Item** parts = PartArray(it);
    size_t left = payload;
    for (size_t i = 0; i < nparts; ++i) {
      size_t n = std::min(left, part_cap);
      Item* p = AllocChunk(slabs.ClassFor(kItemHeader + n), it);
      if (p == nullptr) {
        for (size_t j = 0; j < i; ++j) {
          parts[j]->refcount.store(0, std::memory_order_relaxed);
          slabs.Free(parts[j]);
        }
        it->refcount.store(0, std::memory_order_relaxed);
        slabs.Free(it);
        *status = AllocStatus::kNoMemory;
        return nullptr;
      }
      p->nbytes = static_cast<uint32_t>(n);
      parts[i] = p;
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
  uint32_t now = Now();
  SetCas(it, cas);
  it->time.store(now, std::memory_order_relaxed);
  // memcached's do_item_alloc: TEMP for short TTLs, then HOT, or only COLD
  // when the LRU is not segmented.
  Segment seg = opts.lru_segmented ? Segment::kHot : Segment::kCold;
  uint32_t exp = it->exptime.load(std::memory_order_relaxed);
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
  const uint32_t exp = it->exptime.load(std::memory_order_relaxed);
  const uint32_t last = it->time.load(std::memory_order_relaxed);
  ItemRemoval r;
  r.cause = cause;
  r.key = KeyOf(it);
  r.clsid = ClassOf(it);
  r.value_bytes = it->nbytes;
  r.ttl = exp == 0 ? -1 : (exp > now ? int64_t{exp} - now : 0);
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
    HeapValue* hv;
    std::memcpy(&hv, ItemData(it), sizeof(hv));
    if (hv != nullptr) {
      slabs.AddHeapBytes(-static_cast<int64_t>(hv->MemoryUsage()));
      delete hv;
    }
  }
  if (HasFlag(it, kItemChunked)) {
    const size_t part_cap = slabs.ChunkSize(slabs.largest_class()) - kItemHeader;
    size_t nparts = PartsFor(size_t{it->nbytes} + 2, part_cap);
    Item** parts = PartArray(it);
    for (size_t i = 0; i < nparts; ++i) {
      parts[i]->refcount.store(0, std::memory_order_relaxed);
      slabs.Free(parts[i]);
    }
  }
  slabs.Free(it);
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
  uint32_t e = item_->exptime.load(std::memory_order_relaxed);
  return e == 0 ? 0 : engine_->impl_->started + e;
}

int64_t ItemRef::expires_at_unix_ms() const {
  uint32_t e = item_->exptime.load(std::memory_order_relaxed);
  if (e == 0) return 0;
  return (engine_->impl_->started + e) * 1000 + ExpiryMsPart(item_);
}

int ItemRef::ValueSpans(iovec* out, int max, bool with_crlf) const {
  size_t total = size_t{item_->nbytes} + (with_crlf ? 2 : 0);
  if (!HasFlag(item_, kItemChunked)) {
    if (max < 1) return 0;
    out[0].iov_base = const_cast<char*>(ItemData(item_));
    out[0].iov_len = total;
    return 1;
  }
  Item* const* parts = PartArray(item_);
  int n = 0;
  for (size_t i = 0; total > 0 && n < max; ++i) {
    size_t len = std::min<size_t>(total, parts[i]->nbytes);
    out[n].iov_base = PartData(parts[i]);
    out[n].iov_len = len;
    ++n;
    total -= len;
  }
  DCHECK(total == 0);
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

int ItemRef::WritableSpans(iovec* out, int max) {
  DCHECK(!HasFlag(item_, kItemLinked));
  return ValueSpans(out, max, false);
}

HeapValue* ItemRef::heap() const {
  HeapValue* hv;
  std::memcpy(&hv, ItemData(item_), sizeof(hv));
  return hv;
}

void Engine::ReleaseRaw(void* engine, void* item) {
  static_cast<Engine*>(engine)->impl_->Release(static_cast<Item*>(item));
}

}  // namespace trove::engine
