// SlabAllocator: class sizes, page carving, free lists and page moves.
// Runs on workers (Alloc/Free) and the slab rebalancer (moves).
#include "engine/slab_allocator.h"

#include <algorithm>
#include <cstdlib>

namespace trove::engine {

SlabAllocator::SlabAllocator(const SlabOptions& o)
    : opts_(o), mem_limit_(o.mem_limit), malloced_(o.initial_malloced) {
  // Class sizes grow by `factor` from min_chunk, 8-aligned, until the next
  // would pass slab_chunk_max / factor; the last class is slab_chunk_max
  // (memcached's slabs_init).
  size_t size = (opts_.min_chunk + 7) & ~size_t{7};
  int i = 1;
  while (i < kMaxClasses - 1 &&
         static_cast<double>(size) <= static_cast<double>(opts_.slab_chunk_max) / opts_.factor) {
    sizes_[i++] = size;
    size_t next = static_cast<size_t>(static_cast<double>(size) * opts_.factor);
    next = (next + 7) & ~size_t{7};
    if (next <= size) next = size + 8;
    size = next;
  }
  sizes_[i] = opts_.slab_chunk_max;
  num_classes_ = i;
  MutexLock l(&mu_);
  for (int c = 1; c <= num_classes_; ++c) {
    classes_[c].size = sizes_[c];
    classes_[c].per_page = opts_.page_size / sizes_[c];
  }
}

SlabAllocator::~SlabAllocator() {
  MutexLock l(&mu_);
  for (char* p : all_pages_) std::free(p);
}

Status SlabAllocator::Init() {
  if (!opts_.prealloc) return Status::Ok();
  MutexLock l(&mu_);
  for (int c = 1; c <= num_classes_; ++c) {
    char* page = NewPageLocked(c);
    if (page == nullptr) return Status(StatusCode::kResourceExhausted, "slab prealloc failed");
    SplitPageLocked(c, page);
  }
  return Status::Ok();
}

int SlabAllocator::ClassFor(size_t size) const {
  if (size == 0 || size > sizes_[num_classes_]) return 0;
  // Few classes (< 64): a binary search over the sorted sizes.
  const size_t* first = sizes_ + 1;
  const size_t* last = sizes_ + num_classes_ + 1;
  return static_cast<int>(std::lower_bound(first, last, size) - sizes_);
}

char* SlabAllocator::NewPageLocked(int cls) {
  if (!global_pool_.empty()) {
    char* p = global_pool_.back();
    global_pool_.pop_back();
    return p;
  }
  // Every class may take its first page even past the limit (memcached does
  // the same), so a tiny -m still stores items of every size.
  size_t used = malloced_ + static_cast<size_t>(std::max<int64_t>(0, heap_bytes()));
  if (used + opts_.page_size > EffectiveLimit() && !classes_[cls].pages.empty()) return nullptr;
  if (opts_.arena != nullptr) {
    // The memory file holds exactly -m: no first page past the limit here.
    if ((arena_next_ + 1) * opts_.page_size > opts_.arena_size) return nullptr;
    char* a = opts_.arena + arena_next_++ * opts_.page_size;
    malloced_ += opts_.page_size;
    return a;
  }
  char* p = static_cast<char*>(std::malloc(opts_.page_size));
  if (p == nullptr) return nullptr;
  malloced_ += opts_.page_size;
  all_pages_.push_back(p);
  return p;
}

void SlabAllocator::SplitPageLocked(int cls, char* page) {
  Class& c = classes_[cls];
  c.pages.push_back(page);
  for (size_t i = c.per_page; i-- > 0;) {
    auto* it = reinterpret_cast<Item*>(page + i * c.size);
    it->refcount.store(0, std::memory_order_relaxed);
    it->clsid.store(static_cast<uint8_t>(cls), std::memory_order_relaxed);
    it->flags.store(0, std::memory_order_relaxed);
    PushFreeLocked(cls, it);
  }
}

void SlabAllocator::PushFreeLocked(int cls, Item* it) {
  Class& c = classes_[cls];
  it->flags.store(kItemSlabbed, std::memory_order_relaxed);
  it->prev = nullptr;
  it->next = c.free_head;
  if (c.free_head != nullptr) c.free_head->prev = it;
  c.free_head = it;
  ++c.free_count;
}

void SlabAllocator::RemoveFreeLocked(int cls, Item* it) {
  Class& c = classes_[cls];
  if (it->prev != nullptr) it->prev->next = it->next;
  if (it->next != nullptr) it->next->prev = it->prev;
  if (c.free_head == it) c.free_head = it->next;
  it->next = it->prev = nullptr;
  --c.free_count;
}

bool SlabAllocator::InMovingPageLocked(const Item* it) const {
  if (!move_.active) return false;
  auto* p = reinterpret_cast<const char*>(it);
  return p >= move_.page && p < move_.page + opts_.page_size;
}

Item* SlabAllocator::Alloc(int cls, Item* owner) {
  DCHECK(cls >= 1 && cls <= num_classes_);
  MutexLock l(&mu_);
  Class& c = classes_[cls];
  if (c.free_head == nullptr) {
    char* page = NewPageLocked(cls);
    if (page == nullptr) return nullptr;
    SplitPageLocked(cls, page);
  }
  Item* it = c.free_head;
  RemoveFreeLocked(cls, it);
  it->refcount.store(1, std::memory_order_relaxed);
  it->flags.store(owner != nullptr ? kItemChunkPart : 0, std::memory_order_relaxed);
  it->clsid.store(static_cast<uint8_t>(cls), std::memory_order_relaxed);
  it->h_next = owner;
  return it;
}

Item* SlabAllocator::AllocFree(int cls) {
  MutexLock l(&mu_);
  Class& c = classes_[cls];
  Item* it = c.free_head;
  if (it == nullptr) return nullptr;
  RemoveFreeLocked(cls, it);
  it->refcount.store(1, std::memory_order_relaxed);
  it->flags.store(0, std::memory_order_relaxed);
  it->clsid.store(static_cast<uint8_t>(cls), std::memory_order_relaxed);
  it->h_next = nullptr;
  return it;
}

void SlabAllocator::Free(Item* it) {
  MutexLock l(&mu_);
  CHECK(!HasFlag(it, kItemSlabbed));
  CHECK(it->refcount.load(std::memory_order_relaxed) == 0);
  if (InMovingPageLocked(it)) {
    it->flags.store(kItemSetAside, std::memory_order_relaxed);
    ++move_.set_aside;
    return;
  }
  PushFreeLocked(ClassOf(it), it);
}

size_t SlabAllocator::malloced() const {
  MutexLock l(&mu_);
  return malloced_;
}

bool SlabAllocator::SetMemLimit(size_t bytes) {
  MutexLock l(&mu_);
  // As memcached: a preallocated arena cannot change; otherwise the limit
  // may drop below what is allocated, and pages are given back to the OS as
  // they come free (ReleaseOverLimitLocked).
  if (opts_.prealloc && bytes < malloced_) return false;
  mem_limit_.store(bytes, std::memory_order_relaxed);
  ReleaseOverLimitLocked();
  NoteUsageLocked();
  return true;
}

void SlabAllocator::ReleaseOverLimitLocked() {
  // Arena pages (-e) belong to the memory file and stay in the pool.
  while (malloced_ > EffectiveLimit() && !global_pool_.empty() && !opts_.prealloc &&
         opts_.arena == nullptr) {
    char* p = global_pool_.back();
    global_pool_.pop_back();
    all_pages_.erase(std::find(all_pages_.begin(), all_pages_.end(), p));
    std::free(p);
    malloced_ -= opts_.page_size;
  }
  NoteUsageLocked();
}

bool SlabAllocator::OverLimit(size_t extra) const {
  MutexLock l(&mu_);
  size_t used = malloced_ + static_cast<size_t>(std::max<int64_t>(0, heap_bytes()));
  return used + extra > EffectiveLimit();
}

SlabClassInfo SlabAllocator::Info(int cls) const {
  MutexLock l(&mu_);
  const Class& c = classes_[cls];
  SlabClassInfo i;
  i.chunk_size = c.size;
  i.chunks_per_page = c.per_page;
  i.pages = c.pages.size();
  i.total_chunks = c.pages.size() * c.per_page;
  i.free_chunks = c.free_count;
  return i;
}

size_t SlabAllocator::global_pool_pages() const {
  MutexLock l(&mu_);
  return global_pool_.size();
}

bool SlabAllocator::BeginMove(int src) {
  MutexLock l(&mu_);
  if (move_.active || src < 1 || src > num_classes_) return false;
  Class& c = classes_[src];
  if (c.pages.size() < 2) return false;
  move_.active = true;
  move_.src = src;
  move_.page = c.pages.front();
  move_.set_aside = 0;
  for (size_t i = 0; i < c.per_page; ++i) {
    auto* it = reinterpret_cast<Item*>(move_.page + i * c.size);
    if (HasFlag(it, kItemSlabbed)) {
      RemoveFreeLocked(src, it);
      it->flags.store(kItemSetAside, std::memory_order_relaxed);
      ++move_.set_aside;
    }
  }
  return true;
}

size_t SlabAllocator::moving_chunks() const {
  MutexLock l(&mu_);
  return move_.active ? classes_[move_.src].per_page : 0;
}

Item* SlabAllocator::MovingChunk(size_t i) const {
  MutexLock l(&mu_);
  if (!move_.active || i >= classes_[move_.src].per_page) return nullptr;
  return reinterpret_cast<Item*>(move_.page + i * classes_[move_.src].size);
}

Item* SlabAllocator::RefMovingChunkOwner(size_t i, Item** chunk) {
  MutexLock l(&mu_);
  if (!move_.active || i >= classes_[move_.src].per_page) return nullptr;
  auto* it = reinterpret_cast<Item*>(move_.page + i * classes_[move_.src].size);
  uint16_t f = it->flags.load(std::memory_order_relaxed);
  if ((f & (kItemSetAside | kItemSlabbed)) != 0) return nullptr;
  // Chunk parts name their head; the head is freed only after its parts, so
  // while we see the part under the lock the head's memory is still an item.
  Item* owner = (f & kItemChunkPart) != 0 ? it->h_next : it;
  *chunk = it;
  if (owner->refcount.fetch_add(1, std::memory_order_relaxed) == 0) {
    // Being freed right now: its Free (waiting on our lock) sets it aside.
    owner->refcount.fetch_sub(1, std::memory_order_relaxed);
    return nullptr;
  }
  return owner;
}

bool SlabAllocator::MoveComplete() const {
  MutexLock l(&mu_);
  return move_.active && move_.set_aside == classes_[move_.src].per_page;
}

void SlabAllocator::FinishMove(int dst) {
  MutexLock l(&mu_);
  CHECK(move_.active && move_.set_aside == classes_[move_.src].per_page);
  Class& s = classes_[move_.src];
  s.pages.erase(std::find(s.pages.begin(), s.pages.end(), move_.page));
  if (dst == 0) {
    global_pool_.push_back(move_.page);
    ReleaseOverLimitLocked();  // over a lowered limit: back to the OS
  } else {
    SplitPageLocked(dst, move_.page);
  }
  move_ = Move{};
}

void SlabAllocator::AbortMove() {
  MutexLock l(&mu_);
  if (!move_.active) return;
  Class& s = classes_[move_.src];
  for (size_t i = 0; i < s.per_page; ++i) {
    auto* it = reinterpret_cast<Item*>(move_.page + i * s.size);
    if (HasFlag(it, kItemSetAside)) {
      it->clsid.store(static_cast<uint8_t>(move_.src), std::memory_order_relaxed);
      PushFreeLocked(move_.src, it);
    }
  }
  move_ = Move{};
}

std::vector<uint8_t> SlabAllocator::ArenaPageClasses() const {
  MutexLock l(&mu_);
  std::vector<uint8_t> out(arena_next_, 0);
  if (opts_.arena == nullptr) return out;
  for (int c = 1; c <= num_classes_; ++c) {
    for (char* p : classes_[c].pages) {
      out[static_cast<size_t>(p - opts_.arena) / opts_.page_size] = static_cast<uint8_t>(c);
    }
  }
  return out;
}

bool SlabAllocator::AdoptArenaPages(std::span<const uint8_t> page_classes,
                                    const std::function<void(Item*)>& visit) {
  MutexLock l(&mu_);
  if (opts_.arena == nullptr || arena_next_ != 0 ||
      page_classes.size() * opts_.page_size > opts_.arena_size) {
    return false;
  }
  for (uint8_t c : page_classes) {
    if (c > num_classes_) return false;
  }
  for (size_t i = 0; i < page_classes.size(); ++i) {
    char* page = opts_.arena + i * opts_.page_size;
    const int cls = page_classes[i];
    ++arena_next_;
    malloced_ += opts_.page_size;
    if (cls == 0) {
      global_pool_.push_back(page);
      continue;
    }
    Class& c = classes_[cls];
    c.pages.push_back(page);
    // Backwards, so the free list hands out low addresses first (as a fresh
    // SplitPageLocked does).
    for (size_t k = c.per_page; k-- > 0;) {
      auto* it = reinterpret_cast<Item*>(page + k * c.size);
      const uint16_t f = it->flags.load(std::memory_order_relaxed);
      if ((f & (kItemSlabbed | kItemSetAside)) != 0) {
        it->refcount.store(0, std::memory_order_relaxed);
        it->clsid.store(static_cast<uint8_t>(cls), std::memory_order_relaxed);
        PushFreeLocked(cls, it);
      } else if ((f & kItemChunkPart) == 0) {
        visit(it);
      }
    }
  }
  return true;
}

}  // namespace trove::engine
