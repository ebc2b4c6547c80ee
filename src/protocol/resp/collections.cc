// Collection values and their load/store helpers; run under the key's stripe.
#include "protocol/resp/collections.h"

#include <algorithm>

#include "protocol/resp/keyspace.h"
#include "protocol/resp/resp_parser.h"

namespace trove::resp {

void ListValue::Trim(size_t start, size_t end) {
  while (d_.size() > end + 1) PopBack();
  for (size_t i = 0; i < start; ++i) PopFront();
}

const std::string* HashValue::Find(std::string_view f) const {
  auto it = m_.find(std::string(f));
  return it == m_.end() ? nullptr : &it->second;
}

bool HashValue::Set(std::string_view f, std::string_view v) {
  longest_ = std::max({longest_, f.size(), v.size()});
  auto [it, added] = m_.try_emplace(std::string(f));
  if (added) {
    bytes_ += static_cast<int64_t>(f.size()) + kEntryOverhead;
    if (compact_) order_.emplace_back(f);
  }
  bytes_ += static_cast<int64_t>(v.size()) - static_cast<int64_t>(it->second.size());
  it->second.assign(v);
  return added;
}

bool HashValue::Erase(std::string_view f) {
  auto it = m_.find(std::string(f));
  if (it == m_.end()) return false;
  bytes_ -= static_cast<int64_t>(it->first.size() + it->second.size()) + kEntryOverhead;
  m_.erase(it);
  if (compact_) order_.erase(std::find(order_.begin(), order_.end(), f));
  return true;
}

std::vector<std::pair<const std::string*, const std::string*>> HashValue::Entries() const {
  std::vector<std::pair<const std::string*, const std::string*>> out;
  out.reserve(m_.size());
  if (compact_) {
    for (const std::string& f : order_) {
      auto it = m_.find(f);
      out.emplace_back(&it->first, &it->second);
    }
  } else {
    for (const auto& [f, v] : m_) out.emplace_back(&f, &v);
  }
  return out;
}

void HashValue::CheckEncoding(int64_t max_entries, int64_t max_value) {
  if (!compact_) return;
  if (static_cast<int64_t>(m_.size()) > max_entries ||
      static_cast<int64_t>(longest_) > max_value) {
    compact_ = false;
    order_.clear();
    order_.shrink_to_fit();
  }
}

bool SetValue::Add(std::string_view m) {
  auto [it, added] = s_.emplace(m);
  if (!added) return false;
  bytes_ += static_cast<int64_t>(m.size()) + kEntryOverhead;
  int64_t v;
  if (!ParseStrictInt64(m, &v)) all_int_ = false;
  return true;
}

bool SetValue::Remove(std::string_view m) {
  auto it = s_.find(std::string(m));
  if (it == s_.end()) return false;
  bytes_ -= static_cast<int64_t>(m.size()) + kEntryOverhead;
  s_.erase(it);
  return true;
}

void SetValue::CheckEncoding(int64_t max_intset) {
  if (intset_ && (!all_int_ || static_cast<int64_t>(s_.size()) > max_intset)) intset_ = false;
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

const double* ZsetValue::Score(std::string_view m) const {
  auto it = scores_.find(std::string(m));
  return it == scores_.end() ? nullptr : &it->second;
}

bool ZsetValue::Put(std::string_view m, double score) {
  longest_ = std::max(longest_, m.size());
  auto [it, added] = scores_.try_emplace(std::string(m), score);
  if (!added) {
    by_score_.erase({it->second, it->first});
    it->second = score;
  } else {
    bytes_ += 2 * static_cast<int64_t>(m.size()) + 2 * kEntryOverhead;
  }
  by_score_.emplace(score, it->first);
  return added;
}

bool ZsetValue::Remove(std::string_view m) {
  auto it = scores_.find(std::string(m));
  if (it == scores_.end()) return false;
  by_score_.erase({it->second, it->first});
  bytes_ -= 2 * static_cast<int64_t>(m.size()) + 2 * kEntryOverhead;
  scores_.erase(it);
  return true;
}

int64_t ZsetValue::Rank(std::string_view m) const {
  const double* s = Score(m);
  if (s == nullptr) return -1;
  auto it = by_score_.find({*s, std::string(m)});
  return static_cast<int64_t>(std::distance(by_score_.begin(), it));
}

void ZsetValue::CheckEncoding(int64_t max_entries, int64_t max_value) {
  if (compact_ && (static_cast<int64_t>(scores_.size()) > max_entries ||
                   static_cast<int64_t>(longest_) > max_value)) {
    compact_ = false;
  }
}

CollectionBase* StoreNewCollection(CommandContext& ctx, std::string_view ekey,
                                   engine::ValueType type, std::unique_ptr<CollectionBase> v,
                                   int64_t exptime) {
  DCHECK(ctx.locked);
  if (ekey.size() > limits::kEngineMaxKey) {
    ctx.Error("ERR key too long (Trove keys are at most 65535 bytes)");
    return nullptr;
  }
  CollectionBase* raw = v.get();
  engine::AllocOutput a = ctx.engine->AllocateHeap(ekey, exptime, type, std::move(v), ctx.ts);
  if (a.status != engine::AllocStatus::kOk) {
    ctx.Error("OOM command not allowed when used memory > 'maxmemory'.");
    return nullptr;
  }
  engine::StoreArgs args;
  engine::StoreResult r = ctx.engine->StoreItemLocked(a.item, args, ctx.ts);
  if (r != engine::StoreResult::kStored) {
    ctx.Error("OOM command not allowed when used memory > 'maxmemory'.");
    return nullptr;
  }
  return raw;
}

bool CopyItemLocked(CommandContext& ctx, const engine::ItemRef& item, std::string_view dst,
                    int64_t exptime) {
  if (item.is_heap()) {
    auto* src = static_cast<CollectionBase*>(item.heap());
    std::unique_ptr<CollectionBase> copy = src->Clone();
    size_t bytes = copy->MemoryUsage();
    CollectionBase* stored = StoreNewCollection(ctx, dst, item.type(), std::move(copy), exptime);
    (void)bytes;
    return stored != nullptr;
  }
  std::string v;
  item.CopyValue(&v);
  return StoreStringLocked(ctx, dst, v, exptime, false);
}

void FinishUpdate(CommandContext& ctx, std::string_view ekey, CollectionBase* v,
                  size_t bytes_before) {
  v->Bump();
  if (v->size() == 0) {
    ctx.engine->UnlinkLocked(ekey, ctx.ts);
    return;
  }
  size_t after = v->MemoryUsage();
  if (after != bytes_before) {
    ctx.engine->AdjustHeapBytes(static_cast<int64_t>(after) - static_cast<int64_t>(bytes_before));
  }
}

}  // namespace trove::resp
