// PtrIndex: the hash index of a large collection (hash fields, sorted-set
// members): an open-addressing table of pointers to entries that the
// collection owns, keyed by a string each entry carries. 8 bytes per slot and
// no node per element: a std::unordered_map node with its cached hash and
// allocator header costs 64-96 bytes per element, which made Trove's large
// hashes and sorted sets larger than Redis's (issue 16).
//
// Linear probing with backward-shift deletion (no tombstones); the load
// stays at most 3/4, so a hit probes about 2.5 slots and a miss about 8.5.
// Thread safety: none of its own; the owning collection's rule applies (the
// key's stripe lock). Invariant: every non-null slot holds a distinct key,
// reachable from its home slot through non-null slots only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

namespace trove::resp {

// KeyOf: a functor with `std::string_view operator()(const E*) const`.
template <typename E, typename KeyOf>
class PtrIndex {
 public:
  PtrIndex() = default;
  PtrIndex(const PtrIndex&) = delete;  // entries belong to the owner: rebuild instead
  PtrIndex& operator=(const PtrIndex&) = delete;
  PtrIndex(PtrIndex&&) noexcept = default;
  PtrIndex& operator=(PtrIndex&&) noexcept = default;

  size_t size() const { return size_; }
  size_t capacity() const { return slots_.size(); }
  size_t memory() const { return slots_.capacity() * sizeof(E*); }

  E* Find(std::string_view k) const {
    if (size_ == 0) return nullptr;
    size_t i = Home(k);
    while (E* e = slots_[i]) {
      if (KeyOf()(e) == k) return e;
      i = (i + 1) & mask_;
    }
    return nullptr;
  }

  // Adds e, whose key must not be present.
  void Insert(E* e) {
    if ((size_ + 1) * 4 > slots_.size() * 3) Grow();
    size_t i = Home(KeyOf()(e));
    while (slots_[i] != nullptr) i = (i + 1) & mask_;
    slots_[i] = e;
    ++size_;
  }

  // Points the slot of e's key (present) at e: the entry was reallocated.
  void Replace(E* e) {
    std::string_view k = KeyOf()(e);
    size_t i = Home(k);
    while (KeyOf()(slots_[i]) != k) i = (i + 1) & mask_;
    slots_[i] = e;
  }

  // Removes k; returns its entry (the caller frees it) or null.
  E* Erase(std::string_view k) {
    if (size_ == 0) return nullptr;
    size_t i = Home(k);
    while (slots_[i] != nullptr && KeyOf()(slots_[i]) != k) i = (i + 1) & mask_;
    E* found = slots_[i];
    if (found == nullptr) return nullptr;
    // Backward shift: pull later entries of the run into the hole when their
    // home does not lie cyclically in (hole, j].
    size_t hole = i;
    for (size_t j = (i + 1) & mask_; slots_[j] != nullptr; j = (j + 1) & mask_) {
      size_t home = Home(KeyOf()(slots_[j]));
      bool stays = hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
      if (!stays) {
        slots_[hole] = slots_[j];
        hole = j;
      }
    }
    slots_[hole] = nullptr;
    --size_;
    return found;
  }

  // f(E*) for every entry, in slot order.
  template <typename F>
  void ForEach(F&& f) const {
    for (E* e : slots_) {
      if (e != nullptr) f(e);
    }
  }

  void Clear() {
    slots_.clear();
    slots_.shrink_to_fit();
    size_ = 0;
    mask_ = 0;
  }

 private:
  size_t Home(std::string_view k) const {
    uint64_t h = std::hash<std::string_view>()(k);
    h ^= h >> 29;  // fold high bits in: the mask keeps only the low ones
    return static_cast<size_t>(h) & mask_;
  }

  void Grow() {
    std::vector<E*> old;
    old.swap(slots_);
    size_t cap = old.empty() ? 8 : old.size() * 2;
    slots_.assign(cap, nullptr);
    mask_ = cap - 1;
    for (E* e : old) {
      if (e == nullptr) continue;
      size_t i = Home(KeyOf()(e));
      while (slots_[i] != nullptr) i = (i + 1) & mask_;
      slots_[i] = e;
    }
  }

  std::vector<E*> slots_;
  size_t size_ = 0;
  size_t mask_ = 0;
};

}  // namespace trove::resp
