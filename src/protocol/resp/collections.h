// Collection values (list, hash, set, sorted set) kept in engine items as
// HeapValues, plus the helpers that load and create them under the key's
// stripe. Used on the calling worker while its KeyLockSet is held.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "engine/engine.h"
#include "protocol/resp/command.h"

namespace trove::resp {

// Base of every RESP collection. version() changes on every in-place update
// so WATCH sees changes that keep the item (and its CAS) the same.
// Thread safety: only under the key's stripe lock (engine::HeapValue rule).
// Invariant: bytes_ approximates the memory of the contents (what -m counts).
class CollectionBase : public engine::HeapValue {
 public:
  size_t MemoryUsage() const override { return static_cast<size_t>(bytes_) + 64; }
  uint64_t version() const { return version_; }
  void Bump() { ++version_; }
  // Redis's OBJECT ENCODING name for the current state.
  virtual const char* encoding() const = 0;
  virtual size_t size() const = 0;
  // A deep copy (RENAME, COPY, MOVE need a second owner of the contents).
  virtual std::unique_ptr<CollectionBase> Clone() const = 0;

 protected:
  int64_t bytes_ = 0;
  uint64_t version_ = 0;
};

// Per-entry overhead used in memory accounting (pointers, allocator slack).
inline constexpr int64_t kEntryOverhead = 32;

class ListValue final : public CollectionBase {
 public:
  std::unique_ptr<CollectionBase> Clone() const override {
    return std::make_unique<ListValue>(*this);
  }
  static constexpr engine::ValueType kType = engine::ValueType::kList;
  const char* encoding() const override { return "quicklist"; }
  size_t size() const override { return d_.size(); }
  const std::deque<std::string>& items() const { return d_; }
  void PushBack(std::string_view v) { bytes_ += Cost(v); d_.emplace_back(v); }
  void PushFront(std::string_view v) { bytes_ += Cost(v); d_.emplace_front(v); }
  std::string PopFront() { std::string s = std::move(d_.front()); d_.pop_front(); bytes_ -= Cost(s); return s; }
  std::string PopBack() { std::string s = std::move(d_.back()); d_.pop_back(); bytes_ -= Cost(s); return s; }
  void Set(size_t i, std::string_view v) { bytes_ += Cost(v) - Cost(d_[i]); d_[i].assign(v); }
  void Insert(size_t i, std::string_view v) { bytes_ += Cost(v); d_.insert(d_.begin() + static_cast<std::ptrdiff_t>(i), std::string(v)); }
  void Erase(size_t i) { bytes_ -= Cost(d_[i]); d_.erase(d_.begin() + static_cast<std::ptrdiff_t>(i)); }
  // Keeps [start, end] (inclusive, already clamped, start <= end < size).
  void Trim(size_t start, size_t end);
  void Clear() { d_.clear(); bytes_ = 0; }

 private:
  static int64_t Cost(std::string_view v) { return static_cast<int64_t>(v.size()) + kEntryOverhead; }
  std::deque<std::string> d_;
};

class HashValue final : public CollectionBase {
 public:
  std::unique_ptr<CollectionBase> Clone() const override {
    return std::make_unique<HashValue>(*this);
  }
  static constexpr engine::ValueType kType = engine::ValueType::kHash;
  const char* encoding() const override { return compact_ ? "listpack" : "hashtable"; }
  size_t size() const override { return m_.size(); }
  const std::string* Find(std::string_view f) const;
  // True if the field is new.
  bool Set(std::string_view f, std::string_view v);
  bool Erase(std::string_view f);
  // Field/value pairs; in insertion order while compact (as a listpack).
  std::vector<std::pair<const std::string*, const std::string*>> Entries() const;
  // Leaves the compact encoding once past Redis's thresholds (never back).
  void CheckEncoding(int64_t max_entries, int64_t max_value);

 private:
  std::unordered_map<std::string, std::string> m_;
  std::vector<std::string> order_;  // field order, kept only while compact_
  bool compact_ = true;
  bool long_entry_seen_ = false;
  size_t longest_ = 0;
};

class SetValue final : public CollectionBase {
 public:
  std::unique_ptr<CollectionBase> Clone() const override {
    return std::make_unique<SetValue>(*this);
  }
  static constexpr engine::ValueType kType = engine::ValueType::kSet;
  const char* encoding() const override { return intset_ ? "intset" : "hashtable"; }
  size_t size() const override { return s_.size(); }
  bool Contains(std::string_view m) const { return s_.count(std::string(m)) > 0; }
  bool Add(std::string_view m);
  bool Remove(std::string_view m);
  const std::unordered_set<std::string>& members() const { return s_; }
  // Members in Redis's order when it is defined (intset: ascending numbers).
  std::vector<std::string> Ordered() const;
  void CheckEncoding(int64_t max_intset);

 private:
  std::unordered_set<std::string> s_;
  bool intset_ = true;
  bool all_int_ = true;
};

class ZsetValue final : public CollectionBase {
 public:
  std::unique_ptr<CollectionBase> Clone() const override {
    return std::make_unique<ZsetValue>(*this);
  }
  static constexpr engine::ValueType kType = engine::ValueType::kZset;
  using Entry = std::pair<double, std::string>;
  const char* encoding() const override { return compact_ ? "listpack" : "skiplist"; }
  size_t size() const override { return scores_.size(); }
  const double* Score(std::string_view m) const;
  // Adds or updates; true if new.
  bool Put(std::string_view m, double score);
  bool Remove(std::string_view m);
  const std::set<Entry>& ordered() const { return by_score_; }
  // 0-based rank in ascending order; -1 if missing.
  int64_t Rank(std::string_view m) const;
  void CheckEncoding(int64_t max_entries, int64_t max_value);

 private:
  std::set<Entry> by_score_;
  std::unordered_map<std::string, double> scores_;
  bool compact_ = true;
  size_t longest_ = 0;
};

enum class LoadStatus : uint8_t { kMissing, kOk, kWrongType };

// REQUIRES: ctx.locked. Finds the collection of type T at ekey.
template <typename T>
LoadStatus LoadCollection(CommandContext& ctx, std::string_view ekey, T** out,
                          engine::ItemRef* item_out = nullptr) {
  engine::ItemRef it = ctx.engine->GetLocked(ekey, ctx.ts);
  *out = nullptr;
  if (!it) return LoadStatus::kMissing;
  if (it.type() != T::kType || !it.is_heap()) return LoadStatus::kWrongType;
  *out = static_cast<T*>(it.heap());
  if (item_out != nullptr) *item_out = std::move(it);
  return LoadStatus::kOk;
}

// REQUIRES: ctx.locked. Stores a new collection at ekey (replacing what is
// there), keeping the given engine exptime. Returns the stored object, or
// nullptr after writing an OOM error.
CollectionBase* StoreNewCollection(CommandContext& ctx, std::string_view ekey,
                                   engine::ValueType type, std::unique_ptr<CollectionBase> v,
                                   int64_t exptime = 0);

// REQUIRES: ctx.locked. Finishes an in-place update: accounts the size
// change, bumps the version and deletes the key when the collection emptied.
void FinishUpdate(CommandContext& ctx, std::string_view ekey, CollectionBase* v,
                  size_t bytes_before);

// REQUIRES: ctx.locked. Stores a copy of item (string or collection) at
// dst with the given engine exptime; false after writing an error.
bool CopyItemLocked(CommandContext& ctx, const engine::ItemRef& item, std::string_view dst,
                    int64_t exptime);

// Loads a collection for writing, creating it if missing. Writes WRONGTYPE
// (and returns nullptr) if the key holds another type.
template <typename T>
T* LoadOrCreate(CommandContext& ctx, std::string_view ekey, bool* created) {
  T* v = nullptr;
  LoadStatus s = LoadCollection<T>(ctx, ekey, &v);
  *created = false;
  if (s == LoadStatus::kWrongType) {
    ctx.WrongType();
    return nullptr;
  }
  if (s == LoadStatus::kOk) return v;
  *created = true;
  return static_cast<T*>(StoreNewCollection(ctx, ekey, T::kType, std::make_unique<T>()));
}

}  // namespace trove::resp
