// Collection values (list, hash, set, sorted set) kept in engine items as
// HeapValues, plus the helpers that load and create them under the key's
// stripe. Used on the calling worker while its KeyLockSet is held.
#pragma once

#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "engine/engine.h"
#include "protocol/resp/core/command.h"
#include "protocol/resp/types/hash_field_ttl.h"
#include "protocol/resp/types/ptr_index.h"

namespace trove::resp {

// The order HSCAN/SSCAN/ZSCAN walk a large collection in: every element by
// ScanPosition of its member (scan_util.h). Built on the first scan call and
// dropped by any change to the collection, so its pointers never dangle.
struct ScanOrder {
  struct Ref {
    uint64_t pos;
    std::string_view member;
    std::string_view value;  // hash field values; else empty
    double score;            // sorted sets
  };
  std::vector<Ref> refs;  // ascending pos
};

// Base of every RESP collection. version() changes on every in-place update
// so WATCH sees changes that keep the item (and its CAS) the same.
// Thread safety: only under the key's stripe lock (engine::HeapValue rule).
// Invariant: bytes_ approximates the memory of the contents (what -m counts).
class CollectionBase : public engine::HeapValue {
 public:
  CollectionBase() = default;
  // Copies the contents' accounting; a scan order is never shared.
  CollectionBase(const CollectionBase& o) : bytes_(o.bytes_), version_(o.version_) {}
  CollectionBase& operator=(const CollectionBase&) = delete;
  size_t MemoryUsage() const override { return static_cast<size_t>(bytes_) + 64; }
  uint64_t version() const { return version_; }
  void Bump() { ++version_; }
  // Redis's OBJECT ENCODING name for the current state.
  virtual const char* encoding() const = 0;
  virtual size_t size() const = 0;
  // A deep copy (RENAME, COPY, MOVE need a second owner of the contents).
  virtual std::unique_ptr<CollectionBase> Clone() const = 0;
  // True while below Redis's thresholds: the value is then kept as a compact
  // byte string in item memory (Encode) instead of as a HeapValue.
  virtual bool compact() const = 0;
  // The compact byte form: a varint count, then length-prefixed entries
  // (zset: member then an 8-byte score).
  virtual void Encode(std::string* out) const = 0;
  // Replaces the contents with Encode's form `in`; false on corrupt bytes
  // (the contents are then unspecified).
  virtual bool Decode(std::string_view in) = 0;
  // The earliest expiry of an element (unix ms), 0 when none has one: a
  // hash's field TTLs (hash_field_ttl.h); the other types have none. The
  // stores in collection_access.cc register it for active expiry.
  virtual int64_t next_field_expiry() const { return 0; }

  // The scan order of the current contents (building it if needed): only
  // for a collection past its compact thresholds.
  const ScanOrder& scan_order() const;
  void DropScanOrder() const { scan_order_.reset(); }

 protected:
  // Fills refs (any order) for scan_order().
  virtual void CollectScanRefs(std::vector<ScanOrder::Ref>* refs) const = 0;

  int64_t bytes_ = 0;
  uint64_t version_ = 0;

 private:
  mutable std::unique_ptr<ScanOrder> scan_order_;
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
  // Redis 7.0 keeps small lists in one listpack node (list-max-listpack-size
  // -2: 8 KiB); Trove stores those as bytes.
  bool compact() const override { return d_.size() <= 128 && bytes_ <= 8192; }
  void Encode(std::string* out) const override;
  bool Decode(std::string_view in) override;
  size_t size() const override { return d_.size(); }
  const std::deque<std::string>& items() const { return d_; }
  void PushBack(std::string_view v) {
    bytes_ += Cost(v);
    d_.emplace_back(v);
  }
  void PushFront(std::string_view v) {
    bytes_ += Cost(v);
    d_.emplace_front(v);
  }
  std::string PopFront() {
    std::string s = std::move(d_.front());
    d_.pop_front();
    bytes_ -= Cost(s);
    return s;
  }
  std::string PopBack() {
    std::string s = std::move(d_.back());
    d_.pop_back();
    bytes_ -= Cost(s);
    return s;
  }
  void Set(size_t i, std::string_view v) {
    bytes_ += Cost(v) - Cost(d_[i]);
    d_[i].assign(v);
  }
  void Insert(size_t i, std::string_view v) {
    bytes_ += Cost(v);
    d_.insert(d_.begin() + static_cast<std::ptrdiff_t>(i), std::string(v));
  }
  void Erase(size_t i) {
    bytes_ -= Cost(d_[i]);
    d_.erase(d_.begin() + static_cast<std::ptrdiff_t>(i));
  }
  // Keeps [start, end] (inclusive, already clamped, start <= end < size).
  void Trim(size_t start, size_t end);
  void Clear() {
    d_.clear();
    bytes_ = 0;
  }

 private:
  void CollectScanRefs(std::vector<ScanOrder::Ref>*) const override {}  // lists have no SCAN
  static int64_t Cost(std::string_view v) {
    return static_cast<int64_t>(v.size()) + kEntryOverhead;
  }
  std::deque<std::string> d_;
};

// One hash field and its value in one allocation. Short form (field < 255
// and value < 256 bytes, the usual case): [flen][vlen][field][value], so a
// 10-byte field with a 10-byte value takes one 32-byte malloc chunk; long
// form: [255][flen:4][vlen:4][field][value]. Owned by its HashValue.
struct HashEntry {
  unsigned char tag;  // flen in the short form, 255 in the long
  std::string_view field() const { return {data(), flen()}; }
  std::string_view value() const { return {data() + flen(), vlen()}; }
  size_t flen() const { return tag != 255 ? tag : Long(0); }
  size_t vlen() const { return tag != 255 ? bytes()[1] : Long(4); }
  static HashEntry* New(std::string_view f, std::string_view v);
  static void Free(HashEntry* e);
  // Overwrites the value in place (same length only).
  void SetValueBytes(std::string_view v) { std::memcpy(data() + flen(), v.data(), v.size()); }

 private:
  const unsigned char* bytes() const { return &tag; }
  size_t Long(size_t at) const {
    uint32_t n;
    std::memcpy(&n, bytes() + 1 + at, sizeof n);
    return n;
  }
  const char* data() const { return reinterpret_cast<const char*>(bytes()) + (tag != 255 ? 2 : 9); }
  char* data() { return const_cast<char*>(static_cast<const HashEntry*>(this)->data()); }
};
struct HashEntryKey {
  std::string_view operator()(const HashEntry* e) const { return e->field(); }
};

class HashValue final : public CollectionBase {
 public:
  HashValue() = default;
  HashValue(const HashValue& o);
  ~HashValue() override;
  std::unique_ptr<CollectionBase> Clone() const override {
    return std::make_unique<HashValue>(*this);
  }
  static constexpr engine::ValueType kType = engine::ValueType::kHash;
  // Redis 7.4 calls a small hash that has (or had) field TTLs "listpackex".
  const char* encoding() const override {
    return !compact_ ? "hashtable" : ttls_ != nullptr ? "listpackex" : "listpack";
  }
  bool compact() const override { return compact_; }
  // Without field TTLs, the form CollectionBase describes. With the side
  // table (even emptied): a 0 byte (no count of that form: an empty hash is
  // never stored), the version byte 1, a varint of the earliest expiry (0
  // none), the varint count, then per entry the field, the value and a
  // varint expiry (0 none). Decode reads both.
  void Encode(std::string* out) const override;
  bool Decode(std::string_view in) override;
  // The earliest field expiry of Encode's bytes without decoding them: 0
  // for a hash without field TTLs (or bytes that are not a hash's).
  static int64_t PeekNextFieldExpiry(std::string_view bytes);
  size_t size() const override { return idx_.size(); }
  // The value of field f, or nullopt. Valid until the next change. A field
  // whose TTL has passed is still found: the commands decide (lazy expiry).
  std::optional<std::string_view> Find(std::string_view f) const {
    const HashEntry* e = idx_.Find(f);
    if (e == nullptr) return std::nullopt;
    return e->value();
  }
  // True if the field is new. An existing field loses its TTL (HSET), unless
  // keep_ttl (HINCRBY, HINCRBYFLOAT keep it, as Redis's HASH_SET_KEEP_TTL).
  bool Set(std::string_view f, std::string_view v, bool keep_ttl = false);
  bool Erase(std::string_view f);
  // Field/value pairs; in insertion order while compact (as a listpack; with
  // field TTLs as Redis's listpackex: the fields with a TTL first, earliest
  // first, then the others). Valid until the next change.
  std::vector<std::pair<std::string_view, std::string_view>> Entries() const;
  // Leaves the compact encoding once past Redis's thresholds (never back).
  void CheckEncoding(int64_t max_entries, int64_t max_value);

  // Field TTLs. The side table, or null while no field ever had a TTL.
  const FieldTtls* field_ttls() const { return ttls_.get(); }
  // f's expiry (unix ms), 0 when it has none (or is missing).
  int64_t FieldExpiry(std::string_view f) const { return ttls_ ? ttls_->Get(f) : 0; }
  // True when f has a TTL that has passed at now_ms (it is then gone for
  // every read, whether or not it was deleted yet).
  bool FieldPassed(std::string_view f, int64_t now_ms) const {
    return ttls_ != nullptr && FieldTtlPassed(ttls_->Get(f), now_ms);
  }
  // REQUIRES: f present, 0 < at_ms <= kMaxFieldExpiryMs. Sets f's TTL
  // (creating the side table on the first one).
  void SetFieldExpiry(std::string_view f, int64_t at_ms);
  // Creates the side table, empty, if there is none: RESTORE of a hash form
  // with field TTLs, which Redis loads as listpackex even when no field has
  // a TTL.
  void EnableFieldTtls();
  // Removes f's TTL (HPERSIST); false when it had none.
  bool PersistField(std::string_view f);
  int64_t next_field_expiry() const override { return ttls_ ? ttls_->earliest() : 0; }

 private:
  void CollectScanRefs(std::vector<ScanOrder::Ref>* refs) const override;
  // Drops f's TTL if it has one (accounting included); true if it had one.
  bool DropTtl(std::string_view f);
  // While compact with field TTLs: moves e to its listpackex place, before
  // the first field that has no TTL or one at or after at_ms (at_ms 0: to
  // the end, where Redis puts a field that lost its TTL).
  void Reposition(HashEntry* e, int64_t at_ms);
  // Invariant: idx_ owns every entry; while compact_, order_ holds the same
  // entries in insertion order (Redis's listpack order; with field TTLs its
  // listpackex order, see Entries), else it is empty.
  PtrIndex<HashEntry, HashEntryKey> idx_;
  std::vector<HashEntry*> order_;
  bool compact_ = true;
  size_t longest_ = 0;
  // Invariant: every field named in ttls_ is in idx_; null until the first
  // field TTL, then kept (an emptied table still says "listpackex").
  std::unique_ptr<FieldTtls> ttls_;
};

class SetValue final : public CollectionBase {
 public:
  std::unique_ptr<CollectionBase> Clone() const override {
    return std::make_unique<SetValue>(*this);
  }
  static constexpr engine::ValueType kType = engine::ValueType::kSet;
  // Redis 7.2's three set encodings. Only the intset is a storage format
  // here (compact()); "listpack" is what OBJECT ENCODING reports for a
  // small set of strings within set-max-listpack-entries/-value, which
  // Trove keeps in the same hash table as a large one (docs/resp.md).
  const char* encoding() const override {
    return intset_ ? "intset" : listpack_ ? "listpack" : "hashtable";
  }
  bool compact() const override { return intset_; }
  void Encode(std::string* out) const override;
  bool Decode(std::string_view in) override;
  size_t size() const override { return s_.size(); }
  bool Contains(std::string_view m) const { return s_.count(std::string(m)) > 0; }
  bool Add(std::string_view m);
  bool Remove(std::string_view m);
  const std::unordered_set<std::string>& members() const { return s_; }
  // Members in Redis's order when it is defined (intset: ascending numbers).
  std::vector<std::string> Ordered() const;
  // After a change: leaves the intset, then the listpack, for good once a
  // limit is passed (Redis never converts back).
  void CheckEncoding(int64_t max_intset, int64_t max_listpack_entries, int64_t max_listpack_value);

 private:
  void CollectScanRefs(std::vector<ScanOrder::Ref>* refs) const override;
  std::unordered_set<std::string> s_;
  bool intset_ = true;
  bool listpack_ = true;
  bool all_int_ = true;
  size_t longest_ = 0;
};

class ZsetValue final : public CollectionBase {
 public:
  ZsetValue() = default;
  ZsetValue(const ZsetValue& o);
  std::unique_ptr<CollectionBase> Clone() const override {
    return std::make_unique<ZsetValue>(*this);
  }
  static constexpr engine::ValueType kType = engine::ValueType::kZset;
  using Entry = std::pair<double, std::string>;
  const char* encoding() const override { return compact_ ? "listpack" : "skiplist"; }
  bool compact() const override { return compact_; }
  void Encode(std::string* out) const override;
  bool Decode(std::string_view in) override;
  size_t size() const override { return index_.size(); }
  const double* Score(std::string_view m) const;
  // Adds or updates; true if new.
  bool Put(std::string_view m, double score);
  bool Remove(std::string_view m);
  const std::set<Entry>& ordered() const { return by_score_; }
  // 0-based rank in ascending order; -1 if missing.
  int64_t Rank(std::string_view m) const;
  void CheckEncoding(int64_t max_entries, int64_t max_value);

 private:
  void CollectScanRefs(std::vector<ScanOrder::Ref>* refs) const override;
  struct EntryKey {
    std::string_view operator()(const Entry* e) const { return e->second; }
  };
  // Invariant: index_ points at every node of by_score_ (set nodes never
  // move), keyed by member: one 8-byte slot per member instead of a second
  // node holding a copy of it.
  std::set<Entry> by_score_;
  PtrIndex<const Entry, EntryKey> index_;
  bool compact_ = true;
  size_t longest_ = 0;
};

enum class LoadStatus : uint8_t { kMissing, kOk, kWrongType };

// A collection decoded from a compact item (or created) during one command.
// Session::Run owns the list and clears it after each command, so a pointer
// from LoadCollection stays valid for the whole command, and a key loaded
// twice in one command (SMOVE s s, SINTERSTORE d d x) is decoded once.
struct ScratchEntry {
  std::string key;
  std::unique_ptr<CollectionBase> owned;  // null once handed to the engine
  CollectionBase* obj = nullptr;          // null after the key was deleted
  engine::ValueType type = engine::ValueType::kList;
  int64_t exptime = 0;         // absolute unix milliseconds, 0 = never
  bool heap_resident = false;  // now a HeapValue of a linked item
};

// REQUIRES: ctx.locked. Finds the collection at ekey as type T (kOk) or
// reports a missing key / another type. Untyped variant for set/zset inputs.
LoadStatus LoadAnyCollection(CommandContext& ctx, std::string_view ekey, CollectionBase** out,
                             engine::ValueType* type);
template <typename T>
LoadStatus LoadCollection(CommandContext& ctx, std::string_view ekey, T** out) {
  CollectionBase* c = nullptr;
  engine::ValueType t;
  *out = nullptr;
  LoadStatus s = LoadAnyCollection(ctx, ekey, &c, &t);
  if (s != LoadStatus::kOk) return s;
  if (t != T::kType) return LoadStatus::kWrongType;
  *out = static_cast<T*>(c);
  return LoadStatus::kOk;
}

// REQUIRES: ctx.locked. The read-side LoadCollection of every command family
// (T deduced from v): false after writing WRONGTYPE; otherwise true with *v
// the collection, or nullptr when the key is missing. Allocates nothing
// beyond LoadCollection; *v lives as long as LoadCollection's result.
template <typename T>
bool ReadCollection(CommandContext& ctx, std::string_view ekey, T** v) {
  if (LoadCollection<T>(ctx, ekey, v) == LoadStatus::kWrongType) {
    ctx.WrongType();
    return false;
  }
  return true;
}

// REQUIRES: ctx.locked. ReadCollection for a command with a fixed answer for
// a missing key: true with *v the collection; false after WRONGTYPE, or after
// on_missing() wrote the missing key's reply (*v nullptr).
template <typename T, typename OnMissing>
bool ReadExisting(CommandContext& ctx, std::string_view ekey, T** v, OnMissing on_missing) {
  if (!ReadCollection(ctx, ekey, v)) return false;
  if (*v == nullptr) {
    on_missing();
    return false;
  }
  return true;
}

// REQUIRES: ctx.locked. Stores a new collection at ekey (replacing what is
// there) as bytes or as a HeapValue per v->compact(), expiring at exptime
// (unix ms, 0 never). Returns the stored object, or nullptr after writing an
// OOM error.
CollectionBase* StoreNewCollection(CommandContext& ctx, std::string_view ekey,
                                   engine::ValueType type, std::unique_ptr<CollectionBase> v,
                                   int64_t exptime = 0);

// REQUIRES: ctx.locked. Finishes an update of a collection from
// LoadCollection/LoadOrCreate: deletes the key when it emptied, re-stores a
// compact value (new item, new CAS), moves one past the thresholds to the
// heap, or accounts an in-place heap change and bumps its version.
void FinishUpdate(CommandContext& ctx, std::string_view ekey, CollectionBase* v,
                  size_t bytes_before);

// REQUIRES: ctx.locked. Stores a copy of item (string or collection) at
// dst expiring at exptime (unix ms, 0 never); false after writing an error.
bool CopyItemLocked(CommandContext& ctx, const engine::ItemRef& item, std::string_view dst,
                    int64_t exptime);

// OBJECT ENCODING of a collection item (compact or heap). REQUIRES: stripe held.
std::string CollectionEncoding(const engine::ItemRef& item);

// Loads a collection for writing, creating it (unstored until FinishUpdate)
// if missing. Writes WRONGTYPE (and returns nullptr) for another type.
CollectionBase* CreateScratch(CommandContext& ctx, std::string_view ekey, engine::ValueType type,
                              std::unique_ptr<CollectionBase> v);
template <typename T>
T* LoadOrCreate(CommandContext& ctx, std::string_view ekey) {
  T* v = nullptr;
  LoadStatus s = LoadCollection<T>(ctx, ekey, &v);
  if (s == LoadStatus::kWrongType) {
    ctx.WrongType();
    return nullptr;
  }
  if (s == LoadStatus::kOk) return v;
  return static_cast<T*>(CreateScratch(ctx, ekey, T::kType, std::make_unique<T>()));
}

}  // namespace trove::resp
