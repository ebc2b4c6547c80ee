// HashTable: lookups, inserts, incremental 2x expansion and the scan cursor.
// Workers call the *Locked functions; the expander thread runs Grow().
#include "engine/hash_table.h"

#include <sys/mman.h>

#include <cstring>

namespace trove::engine {

namespace {
constexpr uint64_t kP1 = 0x9E3779B185EBCA87ull;
constexpr uint64_t kP2 = 0xC2B2AE3D27D4EB4Full;
constexpr uint64_t kP3 = 0x165667B19E3779F9ull;
constexpr uint64_t kP4 = 0x85EBCA77C2B2AE63ull;
constexpr uint64_t kP5 = 0x27D4EB2F165667C5ull;
// The table never grows past 2^32 buckets (memcached's limit as well).
constexpr int kMaxHashPower = 32;

inline uint64_t Rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
inline uint64_t Read64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
inline uint32_t Read32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
inline uint64_t Round(uint64_t acc, uint64_t in) { return Rotl(acc + in * kP2, 31) * kP1; }
inline uint64_t Merge(uint64_t acc, uint64_t v) { return (acc ^ Round(0, v)) * kP1 + kP4; }

// Bucket slots may be read by PrefetchHead without the stripe (class comment).
inline void StoreSlot(Item** slot, Item* v) {
  std::atomic_ref<Item*>(*slot).store(v, std::memory_order_relaxed);
}

inline uint64_t ReverseBits(uint64_t v) {
  v = ((v >> 1) & 0x5555555555555555ull) | ((v & 0x5555555555555555ull) << 1);
  v = ((v >> 2) & 0x3333333333333333ull) | ((v & 0x3333333333333333ull) << 2);
  v = ((v >> 4) & 0x0F0F0F0F0F0F0F0Full) | ((v & 0x0F0F0F0F0F0F0F0Full) << 4);
  return __builtin_bswap64(v);
}
inline uint64_t NextCursor(uint64_t v, uint64_t mask) {
  v |= ~mask;
  v = ReverseBits(v);
  ++v;
  return ReverseBits(v);
}
}  // namespace

uint64_t HashKey(std::string_view key) {
  const char* p = key.data();
  const char* end = p + key.size();
  uint64_t h;
  if (key.size() >= 32) {
    uint64_t v1 = kP1 + kP2, v2 = kP2, v3 = 0, v4 = 0 - kP1;
    const char* limit = end - 32;
    do {
      v1 = Round(v1, Read64(p));
      v2 = Round(v2, Read64(p + 8));
      v3 = Round(v3, Read64(p + 16));
      v4 = Round(v4, Read64(p + 24));
      p += 32;
    } while (p <= limit);
    h = Rotl(v1, 1) + Rotl(v2, 7) + Rotl(v3, 12) + Rotl(v4, 18);
    h = Merge(h, v1);
    h = Merge(h, v2);
    h = Merge(h, v3);
    h = Merge(h, v4);
  } else {
    h = kP5;
  }
  h += key.size();
  for (; p + 8 <= end; p += 8) h = Rotl(h ^ Round(0, Read64(p)), 27) * kP1 + kP4;
  if (p + 4 <= end) {
    h = Rotl(h ^ (static_cast<uint64_t>(Read32(p)) * kP1), 23) * kP2 + kP3;
    p += 4;
  }
  for (; p < end; ++p) h = Rotl(h ^ (static_cast<uint64_t>(static_cast<uint8_t>(*p)) * kP5), 11) * kP1;
  h ^= h >> 33;
  h *= kP2;
  h ^= h >> 29;
  h *= kP3;
  h ^= h >> 32;
  return h;
}

HashTable::HashTable(ItemLocks* locks, int hashpower)
    : locks_(locks), primary_(MapTable(hashpower)), hashpower_(hashpower) {
  CHECK(locks_->power() <= hashpower);
}

HashTable::~HashTable() {
  StopExpander();
  ::munmap(primary_.load(std::memory_order_relaxed), (size_t{1} << hashpower()) * sizeof(Item*));
  if (old_ != nullptr) ::munmap(old_, (size_t{1} << (hashpower() - 1)) * sizeof(Item*));
  for (auto& [t, hp] : retired_) ::munmap(t, (size_t{1} << hp) * sizeof(Item*));
}

Item** HashTable::MapTable(int hashpower) {
  // Anonymous mappings start zeroed: every bucket empty.
  void* p = ::mmap(nullptr, (size_t{1} << hashpower) * sizeof(Item*), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CHECK(p != MAP_FAILED);
  return static_cast<Item**>(p);
}

void HashTable::RetireTable(Item** t, int hashpower) {
  ::madvise(t, (size_t{1} << hashpower) * sizeof(Item*), MADV_DONTNEED);
  retired_.emplace_back(t, hashpower);
}

Item** HashTable::UnlockedSlot(uint64_t hv) const {
  // hashpower_ first: primary_ is then at least that big (class comment).
  int hp = hashpower_.load(std::memory_order_acquire);
  Item** t = primary_.load(std::memory_order_acquire);
  return &t[hv & ((uint64_t{1} << hp) - 1)];
}

void HashTable::PrefetchSlot(uint64_t hv) const { __builtin_prefetch(UnlockedSlot(hv)); }

void HashTable::PrefetchHead(uint64_t hv) const {
  Item* head = std::atomic_ref<Item*>(*UnlockedSlot(hv)).load(std::memory_order_relaxed);
  // The item may be unlinked or freed by now: a prefetch never faults, and
  // slab memory stays mapped anyway.
  if (head != nullptr) {
    // The header and, for most small items, the key and value: slab chunks
    // are not line-aligned, so the key often starts in the second line.
    __builtin_prefetch(head);
    __builtin_prefetch(reinterpret_cast<const char*>(head) + 64);
  }
}

Item** HashTable::BucketLocked(uint64_t hv) const {
  int hp = hashpower_.load(std::memory_order_relaxed);
  if (expanding_.load(std::memory_order_relaxed)) {
    uint64_t ob = hv & ((uint64_t{1} << (hp - 1)) - 1);
    if (ob >= expand_bucket_.load(std::memory_order_relaxed)) return &old_[ob];
  }
  return &primary_.load(std::memory_order_relaxed)[hv & ((uint64_t{1} << hp) - 1)];
}

Item* HashTable::FindLocked(std::string_view key, uint64_t hv) const {
  DCHECK(locks_->HeldByMe(locks_->StripeOf(hv)));
  for (Item* it = *BucketLocked(hv); it != nullptr; it = it->h_next) {
    if (it->nkey == key.size() && std::memcmp(ItemKey(it), key.data(), key.size()) == 0) return it;
  }
  return nullptr;
}

void HashTable::InsertLocked(Item* it, uint64_t hv) {
  DCHECK(locks_->HeldByMe(locks_->StripeOf(hv)));
  Item** b = BucketLocked(hv);
  it->h_next = *b;
  StoreSlot(b, it);
  items_.fetch_add(1, std::memory_order_relaxed);
  if (NeedsGrowth() && !grow_pending_.exchange(true, std::memory_order_relaxed)) {
    wake_.fetch_add(1, std::memory_order_relaxed);
    wake_.notify_one();
  }
}

void HashTable::RemoveLocked(Item* it, uint64_t hv) {
  DCHECK(locks_->HeldByMe(locks_->StripeOf(hv)));
  for (Item** p = BucketLocked(hv); *p != nullptr; p = &(*p)->h_next) {
    if (*p == it) {
      StoreSlot(p, it->h_next);
      it->h_next = nullptr;
      items_.fetch_sub(1, std::memory_order_relaxed);
      return;
    }
  }
  CHECK(false && "linked item missing from its bucket");
}

bool HashTable::NeedsGrowth() const {
  int hp = hashpower();
  if (expanding() || hp >= kMaxHashPower) return false;
  // Grow past 1.5 items per bucket (memcached's threshold).
  return items() > ((uint64_t{1} << hp) * 3) / 2;
}

void HashTable::Grow() {
  int hp = hashpower();
  Item** bigger = MapTable(hp + 1);
  locks_->LockAll();
  old_ = primary_.load(std::memory_order_relaxed);
  primary_.store(bigger, std::memory_order_release);
  hashpower_.store(hp + 1, std::memory_order_release);
  expand_bucket_.store(0, std::memory_order_relaxed);
  expanding_.store(true, std::memory_order_relaxed);
  locks_->UnlockAll();

  const uint64_t old_size = uint64_t{1} << hp;
  const uint64_t new_mask = (old_size << 1) - 1;
  for (uint64_t ob = 0; ob < old_size; ++ob) {
    StripeLock l(locks_, locks_->StripeOf(ob));
    Item* it = old_[ob];
    while (it != nullptr) {
      Item* next = it->h_next;
      Item** nb = &bigger[HashKey(KeyOf(it)) & new_mask];
      it->h_next = *nb;
      StoreSlot(nb, it);
      it = next;
    }
    StoreSlot(&old_[ob], nullptr);
    expand_bucket_.store(ob + 1, std::memory_order_relaxed);
  }

  locks_->LockAll();
  Item** done = old_;
  old_ = nullptr;
  expanding_.store(false, std::memory_order_relaxed);
  locks_->UnlockAll();
  RetireTable(done, hp);
  expansions_.fetch_add(1, std::memory_order_relaxed);
}

void HashTable::StartExpander() {
  if (expander_.joinable()) return;
  stop_.store(false, std::memory_order_relaxed);
  expander_ = std::thread([this] { ExpanderLoop(); });
}

void HashTable::StopExpander() {
  if (!expander_.joinable()) return;
  stop_.store(true, std::memory_order_relaxed);
  wake_.fetch_add(1, std::memory_order_relaxed);
  wake_.notify_one();
  expander_.join();
}

void HashTable::ExpanderLoop() {
  while (!stop_.load(std::memory_order_relaxed)) {
    uint32_t seen = wake_.load(std::memory_order_relaxed);
    if (NeedsGrowth()) {
      Grow();
      grow_pending_.store(false, std::memory_order_relaxed);
      continue;
    }
    grow_pending_.store(false, std::memory_order_relaxed);
    if (NeedsGrowth()) continue;  // an insert raced with the flag reset
    wake_.wait(seen, std::memory_order_relaxed);
  }
}

uint64_t HashTable::ScanStep(uint64_t cursor, const std::function<void(Item*)>& visit) {
  StripeLock l(locks_, locks_->StripeOf(cursor));
  int hp = hashpower_.load(std::memory_order_relaxed);
  uint64_t mask;
  auto walk = [&](Item* it) {
    while (it != nullptr) {
      Item* next = it->h_next;  // visit may unlink it
      visit(it);
      it = next;
    }
  };
  if (expanding_.load(std::memory_order_relaxed)) {
    mask = (uint64_t{1} << (hp - 1)) - 1;
    uint64_t ob = cursor & mask;
    if (ob >= expand_bucket_.load(std::memory_order_relaxed)) {
      walk(old_[ob]);
    } else {
      Item** t = primary_.load(std::memory_order_relaxed);
      walk(t[ob]);
      walk(t[ob + mask + 1]);
    }
  } else {
    mask = (uint64_t{1} << hp) - 1;
    walk(primary_.load(std::memory_order_relaxed)[cursor & mask]);
  }
  return NextCursor(cursor, mask);
}

}  // namespace trove::engine
