// Engine: what the RESP front uses under stripes it holds (KeyLockSet): the
// *Locked operations, heap-valued items, millisecond expiry, TTLs, and the
// keyspace scan. Worker threads.
#include <algorithm>
#include <thread>

#include "common/limits.h"
#include "engine/engine.h"
#include "engine/engine_impl.h"

namespace trove::engine {

ItemRef Engine::GetLocked(std::string_view key, ThreadStats* ts, bool bump) {
  Impl* m = impl_.get();
  const auto [hv, now] = m->StartKeyOp(key, &ts);
  m->locks.AssertHeld(m->locks.StripeOf(hv));
  Item* it = m->FindLocked(key, hv, now, ts);
  if (it != nullptr && bump) Impl::Bump(it, now);
  return ItemRef(this, it);
}

namespace {
// Runs change(item, hv) on key's live item; false when there is none.
// REQUIRES: stripe(hv) held by the caller.
template <typename Change>
bool ChangeHeldLocked(Engine::Impl* m, std::string_view key, ThreadStats* ts, Change change) {
  const uint64_t hv = HashKey(key);
  m->locks.AssertHeld(m->locks.StripeOf(hv));
  Item* it = m->PeekLocked(key, hv, m->Now(), m->Ts(ts));
  if (it == nullptr) return false;
  change(it, hv);
  return true;
}
}  // namespace

bool Engine::UnlinkLocked(std::string_view key, ThreadStats* ts) {
  Impl* m = impl_.get();
  return ChangeHeldLocked(m, key, ts, [m](Item* it, uint64_t hv) { m->UnlinkLocked(it, hv); });
}

bool Engine::SetExpiryMsLocked(std::string_view key, int64_t unix_ms_or_zero, ThreadStats* ts) {
  Impl* m = impl_.get();
  return ChangeHeldLocked(m, key, ts,
                          [&](Item* it, uint64_t) { m->SetExpiryMs(it, unix_ms_or_zero); });
}

void Engine::SetNewItemExpiryMs(ItemRef& item, int64_t unix_ms_or_zero) {
  DCHECK(!HasFlag(item.raw(), kItemLinked));
  impl_->SetExpiryMs(item.raw(), unix_ms_or_zero);
}

AllocOutput Engine::AllocateHeap(std::string_view key, int64_t exptime, ValueType type,
                                 std::unique_ptr<HeapValue> value, ThreadStats* ts) {
  Impl* m = impl_.get();
  const size_t usage = value->MemoryUsage();
  // Heap memory shares -m: make room by evicting from the classes heap
  // items live in (their headers are small) before giving up.
  const int cls = m->slabs.ClassFor(m->header + key.size() + sizeof(HeapValue*) + 2);
  for (int i = 0; i < 64 && m->slabs.OverLimit(usage) && cls != 0; ++i) {
    if (!m->evict_to_free.load(std::memory_order_relaxed) || !m->FreeSomething(cls)) break;
  }
  AllocOutput out;
  if (m->slabs.OverLimit(usage)) {
    m->Ts(ts)->store_no_memory.Add();
    out.status = AllocStatus::kNoMemory;
    return out;
  }
  out = Allocate(key, 0, exptime, sizeof(HeapValue*), ts, type);
  if (out.status != AllocStatus::kOk) return out;
  Item* it = out.item.raw();
  SetHeapValue(it, value.release());
  SetFlag(it, kItemHeap);
  m->slabs.AddHeapBytes(static_cast<int64_t>(usage));
  return out;
}

void Engine::AdjustHeapBytes(int64_t delta) { impl_->slabs.AddHeapBytes(delta); }

uint64_t Engine::Scan(uint64_t cursor, size_t count, const std::function<void(const ItemRef&)>& fn) {
  Impl* m = impl_.get();
  std::vector<ItemRef> batch;
  const uint32_t now = m->Now();
  do {
    cursor = m->table.ScanStep(cursor, [&](Item* it) {
      if (m->IsDead(it, now)) return;
      it->refcount.fetch_add(1, std::memory_order_relaxed);
      batch.emplace_back(this, it);
    });
  } while (cursor != 0 && batch.size() < count);
  for (const ItemRef& r : batch) fn(r);
  return cursor;
}

uint64_t Engine::curr_items() const { return impl_->table.items(); }

int64_t Engine::TtlSeconds(const ItemRef& ref) const {
  return ExpiryTtlSec(ref.raw(), impl_->Now());
}

int64_t Engine::IdleSeconds(const ItemRef& ref) const {
  const uint32_t now = impl_->Now();
  const uint32_t last = ref.raw()->time.load(std::memory_order_relaxed);
  return now > last ? now - last : 0;
}

void Engine::SetIdleSecondsLocked(const ItemRef& ref, uint64_t seconds) {
  Impl* m = impl_.get();
  m->locks.AssertHeld(m->locks.StripeOf(HashKey(ref.key())));
  const uint32_t now = m->Now();
  uint64_t floor = 0;
  const uint32_t ol = m->oldest_live.load(std::memory_order_relaxed);
  if (ol != 0 && ol <= now) floor = uint64_t{ol} + 1;  // IsFlushed: time <= oldest_live
  const uint64_t want = seconds >= now ? 0 : now - seconds;
  // Never after now: an item linked this second has time == now already.
  const uint64_t t = std::min<uint64_t>(std::max(want, floor), now);
  ref.raw()->time.store(static_cast<uint32_t>(t), std::memory_order_relaxed);
}

Engine::StripeTry Engine::TryLockKeyStripe(std::string_view key) {
  ItemLocks& locks = impl_->locks;
  const uint32_t stripe = locks.StripeOf(HashKey(key));
  if (locks.HeldByMe(stripe)) return StripeTry::kHeld;
  return locks.TryLock(stripe) ? StripeTry::kLocked : StripeTry::kBusy;
}

void Engine::UnlockKeyStripe(std::string_view key) {
  ItemLocks& locks = impl_->locks;
  locks.Unlock(locks.StripeOf(HashKey(key)));
}

void Engine::LockAllKeyStripes() { impl_->locks.LockAll(); }

uint32_t Engine::KeyStripe(std::string_view key) const {
  return impl_->locks.StripeOf(HashKey(key));
}
void Engine::UnlockAllKeyStripes() { impl_->locks.UnlockAll(); }

// --- KeyLockSet ---

namespace {
thread_local bool t_keylockset_live = false;
}

void KeyLockSet::ComputeStripes(std::span<const std::string_view> keys) {
  ItemLocks& locks = engine_->impl_->locks;
  if (keys.size() > kInline) {
    spill_.resize(keys.size());
    stripes_ = spill_.data();
  }
  for (size_t i = 0; i < keys.size(); ++i) stripes_[i] = locks.StripeOf(HashKey(keys[i]));
  std::sort(stripes_, stripes_ + keys.size());
  count_ = static_cast<size_t>(std::unique(stripes_, stripes_ + keys.size()) - stripes_);
}

KeyLockSet::KeyLockSet(Engine* engine, std::span<const std::string_view> keys) : engine_(engine) {
  CHECK(!t_keylockset_live);
  t_keylockset_live = true;
  ComputeStripes(keys);
  ItemLocks& locks = engine_->impl_->locks;
  // ascending: no deadlock between sets
  for (size_t i = 0; i < count_; ++i) locks.Lock(stripes_[i]);
}

KeyLockSet::KeyLockSet(Engine* engine, std::span<const std::string_view> keys,
                       const std::function<bool()>& give_up)
    : engine_(engine) {
  CHECK(!t_keylockset_live);
  t_keylockset_live = true;
  ComputeStripes(keys);
  ItemLocks& locks = engine_->impl_->locks;
  // Ascending, as the blocking form: a thread waiting here holds only lower
  // stripes, so no cycle forms with the blocking form either.
  for (size_t i = 0; i < count_; ++i) {
    while (!locks.TryLock(stripes_[i])) {
      if (give_up()) {
        for (size_t j = i; j-- > 0;) locks.Unlock(stripes_[j]);
        held_ = false;
        return;
      }
      std::this_thread::yield();
    }
  }
}

KeyLockSet::KeyLockSet(Engine* engine, std::string_view key)
    : KeyLockSet(engine, std::span<const std::string_view>(&key, 1)) {}

KeyLockSet::~KeyLockSet() {
  ItemLocks& locks = engine_->impl_->locks;
  if (held_) {
    for (size_t i = count_; i-- > 0;) locks.Unlock(stripes_[i]);
  }
  t_keylockset_live = false;
}

}  // namespace trove::engine
