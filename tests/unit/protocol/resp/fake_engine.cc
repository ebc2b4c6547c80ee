// A stand-in for engine::Engine (an ordered map under one mutex) so the RESP
// front can be tested before, and independently of, the real engine. It
// enforces the locking contract the RESP layer relies on: *Locked calls need a
// live KeyLockSet on this thread, plain calls must not run under one, and one
// KeyLockSet per thread at a time.
#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/limits.h"
#include "common/mutex.h"
#include "engine/engine.h"

namespace trove::engine {

struct Item {
  std::string key;
  std::string value;
  std::unique_ptr<HeapValue> heap;
  ValueType type = ValueType::kString;
  uint32_t flags = 0;
  uint64_t cas = 0;
  int64_t exptime_ms = 0;  // absolute unix milliseconds, 0 = never
  int64_t last_access = 0;  // unix seconds; 0 = when it was stored (idle 0)
  bool linked = false;
  int refs = 0;
};

struct ThreadStats {
  int unused = 0;
};

namespace {
thread_local bool t_lockset_held = false;
char kCrlf[] = "\r\n";
}  // namespace

struct Engine::Impl {
  Mutex mu{LockRank::kLeaf};
  std::map<std::string, Item*, std::less<>> items;
  uint64_t next_cas = 0;
  int64_t heap_bytes = 0;
  size_t mem_limit = 0;  // CONFIG SET maxmemory; never enforced here
  bool evict = true;     // CONFIG SET maxmemory-policy; never acted on here
  std::vector<std::unique_ptr<ThreadStats>> stats;

  int64_t Abs(const Clock* c, int64_t e) const {
    if (e == 0) return 0;
    if (e < 0) return c->UnixSeconds() - 1;
    if (e <= limits::kRealtimeMaxDelta) return c->UnixSeconds() + e;
    return e;
  }
  // A linked item holds one reference for the table.
  void Unref(Item* it) {
    if (--it->refs == 0) delete it;
  }
  void Unlink(Item* it) {
    items.erase(it->key);
    it->linked = false;
    Unref(it);
  }
  Item* Find(const Clock* c, std::string_view key) {
    auto i = items.find(key);
    if (i == items.end()) return nullptr;
    Item* it = i->second;
    if (it->exptime_ms != 0 && it->exptime_ms <= c->UnixMicros() / 1000) {
      Unlink(it);
      return nullptr;
    }
    return it;
  }
  void Link(Item* it) {
    auto i = items.find(it->key);
    if (i != items.end()) Unlink(i->second);
    it->linked = true;
    it->cas = ++next_cas;
    items.emplace(it->key, it);
  }
};

void ItemRef::Reset() {
  if (item_ != nullptr) {
    Engine::ReleaseRaw(engine_, item_);
    item_ = nullptr;
  }
}
std::string_view ItemRef::key() const { return item_->key; }
uint32_t ItemRef::client_flags() const { return item_->flags; }
uint64_t ItemRef::cas() const { return item_->cas; }
uint32_t ItemRef::value_length() const { return static_cast<uint32_t>(item_->value.size()); }
ValueType ItemRef::type() const { return item_->type; }
bool ItemRef::is_heap() const { return item_->heap != nullptr; }
bool ItemRef::is_chunked() const { return false; }
int64_t ItemRef::expires_at_unix() const { return item_->exptime_ms / 1000; }
int64_t ItemRef::expires_at_unix_ms() const { return item_->exptime_ms; }
int ItemRef::ValueSpans(iovec* out, int max, bool with_crlf, size_t skip) const {
  if (max < 2 || skip > 0) return 0;
  out[0].iov_base = const_cast<char*>(item_->value.data());
  out[0].iov_len = item_->value.size();
  if (!with_crlf) return 1;
  out[1].iov_base = kCrlf;
  out[1].iov_len = 2;
  return 2;
}
std::string_view ItemRef::value() const { return item_->value; }
void ItemRef::CopyValue(std::string* out) const { *out = item_->value; }
char* ItemRef::writable_value() { return item_->value.data(); }
size_t ItemRef::SpanCount(bool with_crlf) const { return with_crlf ? 2 : 1; }
void ItemRef::WriteValue(size_t off, const char* src, size_t len) {
  std::memcpy(item_->value.data() + off, src, len);
}
HeapValue* ItemRef::heap() const {
  CHECK(t_lockset_held);
  return item_->heap.get();
}

Engine::Engine(const EngineOptions& opts)
    : opts_(opts),
      clock_(opts.clock ? opts.clock : SystemClock::Default()),
      impl_(std::make_unique<Impl>()) {}
Engine::~Engine() {
  for (auto& [k, it] : impl_->items) {
    it->linked = false;
    if (--it->refs == 0) delete it;
  }
}
Result<std::unique_ptr<Engine>> Engine::Create(const EngineOptions& opts) {
  return std::unique_ptr<Engine>(new Engine(opts));
}
void Engine::Start() {}
void Engine::Stop() {}
ThreadStats* Engine::NewThreadStats() {
  MutexLock l(&impl_->mu);
  impl_->stats.push_back(std::make_unique<ThreadStats>());
  return impl_->stats.back().get();
}
void Engine::ReleaseRaw(void* engine, void* item) {
  auto* e = static_cast<Engine*>(engine);
  bool need_lock = !t_lockset_held;
  if (need_lock) e->impl_->mu.Lock();
  e->impl_->Unref(static_cast<Item*>(item));
  if (need_lock) e->impl_->mu.Unlock();
}

ItemRef Engine::Get(std::string_view key, ThreadStats*, bool) {
  CHECK(!t_lockset_held);
  MutexLock l(&impl_->mu);
  Item* it = impl_->Find(clock_, key);
  if (it == nullptr) return ItemRef();
  ++it->refs;
  return ItemRef(this, it);
}

DeleteResult Engine::Delete(std::string_view key, const DeleteArgs&, ThreadStats*) {
  CHECK(!t_lockset_held);
  MutexLock l(&impl_->mu);
  Item* it = impl_->Find(clock_, key);
  if (it == nullptr) return DeleteResult::kNotFound;
  impl_->Unlink(it);
  return DeleteResult::kDeleted;
}

void Engine::FlushAll(int64_t) {
  CHECK(!t_lockset_held);
  MutexLock l(&impl_->mu);
  while (!impl_->items.empty()) impl_->Unlink(impl_->items.begin()->second);
}

AllocOutput Engine::Allocate(std::string_view key, uint32_t flags, int64_t exptime,
                             size_t value_len, ThreadStats*, ValueType type,
                             size_t max_value) {
  AllocOutput out;
  if (value_len > (max_value == 0 ? opts_.item_size_max : max_value)) {
    out.status = AllocStatus::kTooLarge;
    return out;
  }
  auto* it = new Item();
  it->key.assign(key);
  it->value.assign(value_len, '\0');
  it->flags = flags;
  it->type = type;
  it->exptime_ms = impl_->Abs(clock_, exptime) * 1000;
  it->refs = 1;
  out.status = AllocStatus::kOk;
  out.item = ItemRef(this, it);
  return out;
}

AllocOutput Engine::AllocateHeap(std::string_view key, int64_t exptime, ValueType type,
                                 std::unique_ptr<HeapValue> value, ThreadStats*) {
  AllocOutput out;
  auto* it = new Item();
  it->key.assign(key);
  it->type = type;
  it->exptime_ms = impl_->Abs(clock_, exptime) * 1000;
  it->heap = std::move(value);
  it->refs = 1;
  out.status = AllocStatus::kOk;
  out.item = ItemRef(this, it);
  return out;
}

void Engine::AdjustHeapBytes(int64_t delta) { impl_->heap_bytes += delta; }
bool Engine::SetMemLimit(size_t bytes) {
  impl_->mem_limit = bytes;
  return true;
}
size_t Engine::mem_limit() const { return impl_->mem_limit; }
bool Engine::over_mem_limit() const { return false; }
// The fake is single-threaded: every stripe is free, and taking all is a no-op.
Engine::StripeTry Engine::TryLockKeyStripe(std::string_view) { return StripeTry::kHeld; }
void Engine::UnlockKeyStripe(std::string_view) {}
void Engine::LockAllKeyStripes() {}
void Engine::UnlockAllKeyStripes() {}
uint32_t Engine::KeyStripe(std::string_view key) const {
  return static_cast<uint32_t>(std::hash<std::string_view>{}(key) & 1023);
}
uint64_t Engine::EvictToLimit() { return 0; }  // the fake never evicts
bool Engine::evict_to_free() const { return impl_->evict; }
void Engine::SetEvictToFree(bool on) { impl_->evict = on; }

uint64_t Engine::KeyHash(std::string_view key) { return std::hash<std::string_view>{}(key); }
// Recorded so tests can check what a look-ahead asked for (single thread).
std::vector<uint64_t> g_fake_prefetched_keys;
std::vector<uint64_t> g_fake_prefetched_items;
void Engine::PrefetchKey(uint64_t hv) const { g_fake_prefetched_keys.push_back(hv); }
void Engine::PrefetchItem(uint64_t hv) const { g_fake_prefetched_items.push_back(hv); }

ItemRef Engine::GetLocked(std::string_view key, ThreadStats*, bool bump) {
  CHECK(t_lockset_held);
  Item* it = impl_->Find(clock_, key);
  if (it == nullptr) return ItemRef();
  if (bump) it->last_access = 0;
  ++it->refs;
  return ItemRef(this, it);
}

StoreResult Engine::StoreItemLocked(ItemRef& item, const StoreArgs& args, ThreadStats*,
                                    uint64_t* cas_out) {
  CHECK(t_lockset_held);
  Item* it = item.raw();
  Item* old = impl_->Find(clock_, it->key);
  if (args.mode == StoreMode::kAdd && old) return StoreResult::kNotStored;
  if (args.mode == StoreMode::kReplace && !old) return StoreResult::kNotStored;
  if (args.keep_ttl && old) it->exptime_ms = old->exptime_ms;
  ++it->refs;  // the table's reference
  impl_->Link(it);
  if (cas_out) *cas_out = it->cas;
  return StoreResult::kStored;
}

bool Engine::UnlinkLocked(std::string_view key, ThreadStats*) {
  CHECK(t_lockset_held);
  Item* it = impl_->Find(clock_, key);
  if (it == nullptr) return false;
  impl_->Unlink(it);
  return true;
}

bool Engine::SetExpiryMsLocked(std::string_view key, int64_t unix_ms, ThreadStats*) {
  CHECK(t_lockset_held);
  Item* it = impl_->Find(clock_, key);
  if (it == nullptr) return false;
  it->exptime_ms = unix_ms;
  return true;
}

void Engine::SetNewItemExpiryMs(ItemRef& item, int64_t unix_ms) { item.raw()->exptime_ms = unix_ms; }

uint64_t Engine::Scan(uint64_t cursor, size_t count,
                      const std::function<void(const ItemRef&)>& fn) {
  CHECK(!t_lockset_held);
  MutexLock l(&impl_->mu);
  auto it = impl_->items.begin();
  uint64_t pos = 0;
  while (it != impl_->items.end() && pos < cursor) {
    ++it;
    ++pos;
  }
  size_t n = 0;
  while (it != impl_->items.end() && n < count) {
    Item* item = it->second;
    ++it;
    ++pos;
    if (item->exptime_ms != 0 && item->exptime_ms <= clock_->UnixMicros() / 1000) continue;
    ++item->refs;
    {
      // Visits run under the engine lock, like the real engine's stripe.
      t_lockset_held = true;
      ItemRef ref(this, item);
      fn(ref);
      --item->refs;
      ref.Detach();
      t_lockset_held = false;
    }
    ++n;
  }
  return it == impl_->items.end() ? 0 : pos;
}

uint64_t Engine::curr_items() const { return impl_->items.size(); }

// The fake does not model the expiry hold (engine_test covers the real one).
uint64_t Engine::ExpiredTotal() const { return 0; }
void Engine::HoldExpiryUntil(int64_t /*mono_ns*/) {}

StatList Engine::Stats() const {
  StatList s;
  s.emplace_back("curr_items", std::to_string(impl_->items.size()));
  s.emplace_back("bytes", std::to_string(impl_->heap_bytes));
  s.emplace_back("evictions", "0");
  return s;
}

StatList Engine::SlabStats() const {
  StatList s;
  s.emplace_back("total_malloced", std::to_string(impl_->heap_bytes));
  return s;
}

int64_t Engine::TtlSeconds(const ItemRef& ref) const {
  if (ref.expires_at_unix() == 0) return -1;
  return ref.expires_at_unix() - clock_->UnixSeconds();
}

int64_t Engine::IdleSeconds(const ItemRef& ref) const {
  const int64_t last = ref.raw()->last_access;
  return last == 0 ? 0 : std::max<int64_t>(0, clock_->UnixSeconds() - last);
}
void Engine::SetIdleSecondsLocked(const ItemRef& ref, uint64_t seconds) {
  CHECK(t_lockset_held);
  const int64_t now = clock_->UnixSeconds();
  ref.raw()->last_access = now - static_cast<int64_t>(std::min<uint64_t>(seconds, now - 1));
}

KeyLockSet::KeyLockSet(Engine* engine, std::span<const std::string_view>) : engine_(engine) {
  CHECK(!t_lockset_held);
  engine_->impl_->mu.Lock();
  t_lockset_held = true;
}
KeyLockSet::KeyLockSet(Engine* engine, std::string_view) : engine_(engine) {
  CHECK(!t_lockset_held);
  engine_->impl_->mu.Lock();
  t_lockset_held = true;
}
// The fake's one mutex is never held for good by another thread: the
// give-up form simply waits.
KeyLockSet::KeyLockSet(Engine* engine, std::span<const std::string_view>,
                       const std::function<bool()>&)
    : engine_(engine) {
  CHECK(!t_lockset_held);
  engine_->impl_->mu.Lock();
  t_lockset_held = true;
}
KeyLockSet::~KeyLockSet() {
  t_lockset_held = false;
  engine_->impl_->mu.Unlock();
}

}  // namespace trove::engine
