// HashTable: the central key -> item index (power-of-two buckets, chaining),
// grown 2x by its expander thread a bucket at a time while workers keep
// using it (memcached's assoc design). Workers and background threads.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "common/non_copyable.h"
#include "engine/item.h"
#include "engine/item_locks.h"

namespace trove::engine {

// 64-bit hash of a key: an implementation of the public-domain XXH64
// algorithm, written from its specification (seed 0).
uint64_t HashKey(std::string_view key);

// Owner: Engine::Impl. Thread safety: bucket access REQUIRES the stripe of
// the key's hash (ItemLocks::StripeOf(hv)); because the stripe count never
// exceeds the bucket count, one stripe covers whole buckets of both tables.
// primary_/old_/hashpower_ change only while every stripe is held
// (LockAll), so any one stripe is enough to read them. expand_bucket_ moves
// bucket b's items under stripe(b) before it passes b.
//
// The one unlocked reader is PrefetchHead, a hint: it reads a bucket slot
// with a relaxed atomic load, so every slot store is a relaxed atomic store
// (same code as a plain one on x86), and bucket arrays are never unmapped
// while the table lives: a replaced array's pages go back to the kernel
// (MADV_DONTNEED, reads then see zeros) and the mapping stays until ~HashTable.
// Retired arrays add up to less than the live one, in address space only.
// Invariants:
//  1. when expanding_, an old bucket ob < expand_bucket_ has been moved into
//     primary buckets ob and ob + old size; ob >= expand_bucket_ still lives
//     in old_[ob].
//  2. items_ counts linked items (relaxed; exact at rest).
class HashTable : NonCopyable {
 public:
  HashTable(ItemLocks* locks, int hashpower);
  ~HashTable();

  // REQUIRES: stripe(hv) held.
  Item* FindLocked(std::string_view key, uint64_t hv) const;
  void InsertLocked(Item* it, uint64_t hv);
  void RemoveLocked(Item* it, uint64_t hv);

  uint64_t items() const { return items_.load(std::memory_order_relaxed); }
  int hashpower() const { return hashpower_.load(std::memory_order_relaxed); }
  bool expanding() const { return expanding_.load(std::memory_order_relaxed); }
  size_t hash_bytes() const { return (size_t{1} << hashpower()) * sizeof(Item*); }
  uint64_t expansions() const { return expansions_.load(std::memory_order_relaxed); }

  // Batch hints; any thread, no lock, no effect but on the cache.
  // The bucket slot of hv.
  void PrefetchSlot(uint64_t hv) const;
  // The first item of hv's bucket (reads the slot: call it a few requests
  // after PrefetchSlot, when the slot is likely cached).
  void PrefetchHead(uint64_t hv) const;

  // Growth, run by the expander thread (or a test, synchronously).
  bool NeedsGrowth() const;
  void Grow();

  void StartExpander();
  void StopExpander();

  // One Scan step (Redis dictScan cursor, reverse-binary increment): calls
  // visit for each item of the buckets the cursor names, with that stripe
  // held, and returns the next cursor (0 when the walk is complete).
  uint64_t ScanStep(uint64_t cursor, const std::function<void(Item*)>& visit);

 private:
  Item** BucketLocked(uint64_t hv) const;
  // hv's slot in the primary array, found without a stripe (prefetch only;
  // during growth it may be the wrong bucket, never out of bounds).
  Item** UnlockedSlot(uint64_t hv) const;
  void ExpanderLoop();
  static Item** MapTable(int hashpower);
  // Returns the array's pages to the kernel; the mapping stays (see above).
  void RetireTable(Item** t, int hashpower);

  ItemLocks* locks_;
  // Swapped under all stripes; one stripe to use. Atomic only for
  // PrefetchHead: stored (release) before hashpower_, so a reader that
  // loads hashpower_ then primary_ (acquire) indexes an array at least that big.
  std::atomic<Item**> primary_;
  Item** old_ = nullptr;              // same guard
  std::atomic<int> hashpower_;        // written under all stripes; relaxed reads for stats
  std::vector<std::pair<Item**, int>> retired_;  // expander thread (or ~HashTable)
  std::atomic<bool> expanding_{false};      // same as hashpower_
  std::atomic<uint64_t> expand_bucket_{0};  // see class comment
  std::atomic<uint64_t> items_{0};
  std::atomic<uint64_t> expansions_{0};

  // Expander wakeup: workers cannot take a background mutex under a stripe
  // (rank order), so they bump wake_ and notify (C++20 atomic wait).
  std::atomic<uint32_t> wake_{0};
  std::atomic<bool> grow_pending_{false};
  std::atomic<bool> stop_{false};
  std::thread expander_;
};

}  // namespace trove::engine
