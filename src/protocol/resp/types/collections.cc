// The collection values' own operations (list, hash, set, zset); their
// load/store through the engine is in collection_access.cc. Run under the
// key's stripe.
#include "protocol/resp/core/resp_server.h"
#include "protocol/resp/types/collections.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>

#include "common/check.h"

#include "protocol/resp/types/keyspace.h"
#include "protocol/resp/core/resp_parser.h"
#include "protocol/resp/core/scan_util.h"
#include "protocol/resp/core/client.h"

namespace trove::resp {

void ListValue::Trim(size_t start, size_t end) {
  while (d_.size() > end + 1) PopBack();
  for (size_t i = 0; i < start; ++i) PopFront();
}

HashEntry* HashEntry::New(std::string_view f, std::string_view v) {
  const bool small = f.size() < 255 && v.size() < 256;
  const size_t head = small ? 2 : 9;
  // operator new: out of memory ends the process, as every std::string here.
  auto* p = static_cast<unsigned char*>(::operator new(head + f.size() + v.size()));
  if (small) {
    p[0] = static_cast<unsigned char>(f.size());
    p[1] = static_cast<unsigned char>(v.size());
  } else {
    p[0] = 255;
    const auto fl = static_cast<uint32_t>(f.size()), vl = static_cast<uint32_t>(v.size());
    std::memcpy(p + 1, &fl, sizeof fl);
    std::memcpy(p + 5, &vl, sizeof vl);
  }
  if (!f.empty()) std::memcpy(p + head, f.data(), f.size());
  if (!v.empty()) std::memcpy(p + head + f.size(), v.data(), v.size());
  return reinterpret_cast<HashEntry*>(p);
}

void HashEntry::Free(HashEntry* e) { ::operator delete(e); }

HashValue::HashValue(const HashValue& o)
    : CollectionBase(o), compact_(o.compact_), longest_(o.longest_) {
  // Copy in insertion order while compact, so the copy keeps it.
  auto copy = [this](const HashEntry* e) {
    HashEntry* n = HashEntry::New(e->field(), e->value());
    idx_.Insert(n);
    if (compact_) order_.push_back(n);
  };
  if (o.compact_) {
    for (const HashEntry* e : o.order_) copy(e);
  } else {
    o.idx_.ForEach(copy);
  }
  if (o.ttls_ != nullptr) ttls_ = std::make_unique<FieldTtls>(*o.ttls_);  // bytes_ counts it
}

HashValue::~HashValue() { idx_.ForEach([](HashEntry* e) { HashEntry::Free(e); }); }

bool HashValue::Set(std::string_view f, std::string_view v, bool keep_ttl) {
  DropScanOrder();
  longest_ = std::max({longest_, f.size(), v.size()});
  HashEntry* e = idx_.Find(f);
  if (e == nullptr) {
    e = HashEntry::New(f, v);
    idx_.Insert(e);
    if (compact_) order_.push_back(e);
    bytes_ += static_cast<int64_t>(f.size() + v.size()) + kEntryOverhead;
    return true;
  }
  // HSET over a field with a TTL drops the TTL, and a listpackex moves the
  // field to its end (Redis re-inserts it there).
  const bool moves = !keep_ttl && DropTtl(f) && compact_;
  bytes_ += static_cast<int64_t>(v.size()) - static_cast<int64_t>(e->vlen());
  if (v.size() == e->vlen()) {
    if (!v.empty()) e->SetValueBytes(v);
    if (moves) Reposition(e, 0);
    return false;
  }
  HashEntry* n = HashEntry::New(f, v);
  idx_.Replace(n);
  if (compact_) *std::find(order_.begin(), order_.end(), e) = n;
  HashEntry::Free(e);
  if (moves) Reposition(n, 0);
  return false;
}

bool HashValue::Erase(std::string_view f) {
  DropScanOrder();
  HashEntry* e = idx_.Erase(f);
  if (e == nullptr) return false;
  bytes_ -= static_cast<int64_t>(e->flen() + e->vlen()) + kEntryOverhead;
  if (compact_) order_.erase(std::find(order_.begin(), order_.end(), e));
  DropTtl(f);  // before the free: f may point into the entry
  HashEntry::Free(e);
  return true;
}

bool HashValue::DropTtl(std::string_view f) {
  if (ttls_ == nullptr || !ttls_->Erase(f)) return false;
  bytes_ -= FieldTtls::Cost(f);
  return true;
}

void HashValue::SetFieldExpiry(std::string_view f, int64_t at_ms) {
  HashEntry* e = idx_.Find(f);
  DCHECK(e != nullptr && at_ms > 0);
  if (e == nullptr) return;
  DropScanOrder();
  EnableFieldTtls();
  if (ttls_->Get(f) == 0) bytes_ += FieldTtls::Cost(f);
  ttls_->Set(e->field(), at_ms);
  if (compact_) Reposition(e, at_ms);
}

void HashValue::EnableFieldTtls() {
  if (ttls_ != nullptr) return;
  ttls_ = std::make_unique<FieldTtls>();
  bytes_ += FieldTtls::kTableCost;
}

bool HashValue::PersistField(std::string_view f) {
  HashEntry* e = idx_.Find(f);
  if (e == nullptr || !DropTtl(f)) return false;
  DropScanOrder();
  if (compact_) Reposition(e, 0);
  return true;
}

void HashValue::Reposition(HashEntry* e, int64_t at_ms) {
  order_.erase(std::find(order_.begin(), order_.end(), e));
  auto pos = order_.end();
  if (at_ms != 0) {
    // The fields with a TTL lead, earliest first (Entries' invariant): the
    // first one without a TTL, or with one at or after at_ms, ends the scan.
    pos = std::find_if(order_.begin(), order_.end(), [&](const HashEntry* g) {
      const int64_t t = ttls_->Get(g->field());
      return t == 0 || t >= at_ms;
    });
  }
  order_.insert(pos, e);
}

const ScanOrder& CollectionBase::scan_order() const {
  if (scan_order_ == nullptr) {
    auto o = std::make_unique<ScanOrder>();
    o->refs.reserve(size());
    CollectScanRefs(&o->refs);
    std::sort(o->refs.begin(), o->refs.end(),
              [](const ScanOrder::Ref& a, const ScanOrder::Ref& b) { return a.pos < b.pos; });
    scan_order_ = std::move(o);
  }
  return *scan_order_;
}

void HashValue::CollectScanRefs(std::vector<ScanOrder::Ref>* refs) const {
  idx_.ForEach([refs](const HashEntry* e) {
    refs->push_back({ScanPosition(e->field()), e->field(), e->value(), 0});
  });
}

void SetValue::CollectScanRefs(std::vector<ScanOrder::Ref>* refs) const {
  for (const std::string& m : s_) refs->push_back({ScanPosition(m), m, {}, 0});
}

void ZsetValue::CollectScanRefs(std::vector<ScanOrder::Ref>* refs) const {
  for (const Entry& e : by_score_) refs->push_back({ScanPosition(e.second), e.second, {}, e.first});
}

std::vector<std::pair<std::string_view, std::string_view>> HashValue::Entries() const {
  std::vector<std::pair<std::string_view, std::string_view>> out;
  out.reserve(idx_.size());
  if (compact_) {
    for (const HashEntry* e : order_) out.emplace_back(e->field(), e->value());
  } else {
    idx_.ForEach([&out](const HashEntry* e) { out.emplace_back(e->field(), e->value()); });
  }
  return out;
}

void HashValue::CheckEncoding(int64_t max_entries, int64_t max_value) {
  DropScanOrder();
  if (!compact_) return;
  if (static_cast<int64_t>(idx_.size()) > max_entries ||
      static_cast<int64_t>(longest_) > max_value) {
    compact_ = false;
    order_.clear();
    order_.shrink_to_fit();
  }
}

bool SetValue::Add(std::string_view m) {
  DropScanOrder();
  auto [it, added] = s_.emplace(m);
  if (!added) return false;
  bytes_ += static_cast<int64_t>(m.size()) + kEntryOverhead;
  longest_ = std::max(longest_, m.size());
  int64_t v;
  if (!ParseStrictInt64(m, &v)) all_int_ = false;
  return true;
}

bool SetValue::Remove(std::string_view m) {
  DropScanOrder();
  auto it = s_.find(std::string(m));
  if (it == s_.end()) return false;
  bytes_ -= static_cast<int64_t>(m.size()) + kEntryOverhead;
  s_.erase(it);
  return true;
}

void SetValue::CheckEncoding(int64_t max_intset, int64_t max_listpack_entries,
                             int64_t max_listpack_value) {
  DropScanOrder();
  const auto n = static_cast<int64_t>(s_.size());
  if (intset_ && (!all_int_ || n > max_intset)) intset_ = false;
  if (!intset_ && listpack_ &&
      (n > max_listpack_entries || static_cast<int64_t>(longest_) > max_listpack_value)) {
    listpack_ = false;
  }
}

std::vector<std::string> SetValue::Ordered() const {
  std::vector<std::string> r(s_.begin(), s_.end());
  if (intset_) {
    std::sort(r.begin(), r.end(), [](const std::string& a, const std::string& b) {
      int64_t x = 0, y = 0;
      ParseStrictInt64(a, &x);
      ParseStrictInt64(b, &y);
      return x < y;
    });
  }
  return r;
}

ZsetValue::ZsetValue(const ZsetValue& o)
    : CollectionBase(o), by_score_(o.by_score_), compact_(o.compact_), longest_(o.longest_) {
  for (const Entry& e : by_score_) index_.Insert(&e);
}

const double* ZsetValue::Score(std::string_view m) const {
  const Entry* e = index_.Find(m);
  return e == nullptr ? nullptr : &e->first;
}

bool ZsetValue::Put(std::string_view m, double score) {
  DropScanOrder();
  longest_ = std::max(longest_, m.size());
  const Entry* e = index_.Find(m);
  if (e == nullptr) {
    auto [it, ok] = by_score_.emplace(score, std::string(m));
    index_.Insert(&*it);
    bytes_ += 2 * static_cast<int64_t>(m.size()) + 2 * kEntryOverhead;
    return true;
  }
  if (e->first == score) return false;
  // Move the node to its new place: its member string keeps its storage.
  auto node = by_score_.extract(by_score_.find(*e));
  node.value().first = score;
  auto pos = by_score_.insert(std::move(node)).position;
  index_.Replace(&*pos);
  return false;
}

bool ZsetValue::Remove(std::string_view m) {
  DropScanOrder();
  const Entry* e = index_.Erase(m);
  if (e == nullptr) return false;
  bytes_ -= 2 * static_cast<int64_t>(m.size()) + 2 * kEntryOverhead;
  by_score_.erase(by_score_.find(*e));
  return true;
}

int64_t ZsetValue::Rank(std::string_view m) const {
  const Entry* e = index_.Find(m);
  if (e == nullptr) return -1;
  auto it = by_score_.find(*e);
  return static_cast<int64_t>(std::distance(by_score_.begin(), it));
}

void ZsetValue::CheckEncoding(int64_t max_entries, int64_t max_value) {
  DropScanOrder();
  if (compact_ && (static_cast<int64_t>(index_.size()) > max_entries ||
                   static_cast<int64_t>(longest_) > max_value)) {
    compact_ = false;
  }
}

}  // namespace trove::resp
