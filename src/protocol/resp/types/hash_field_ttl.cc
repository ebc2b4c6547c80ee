// FieldTtls: one hash's field expiries by field and by time. Runs under the
// key's stripe.
#include "protocol/resp/types/hash_field_ttl.h"

namespace trove::resp {

FieldTtls::FieldTtls(const FieldTtls& o) : by_field_(o.by_field_) {
  // The time index points into this copy's own map keys (invariant 1).
  for (const auto& [field, at] : by_field_) by_time_.emplace(at, field);
}

int64_t FieldTtls::Get(std::string_view f) const {
  auto it = by_field_.find(f);
  return it == by_field_.end() ? 0 : it->second;
}

void FieldTtls::Set(std::string_view f, int64_t at_ms) {
  auto it = by_field_.find(f);
  if (it == by_field_.end()) {
    it = by_field_.emplace(std::string(f), at_ms).first;
  } else {
    by_time_.erase({it->second, it->first});
    it->second = at_ms;
  }
  by_time_.emplace(at_ms, it->first);
}

bool FieldTtls::Erase(std::string_view f) {
  auto it = by_field_.find(f);
  if (it == by_field_.end()) return false;
  by_time_.erase({it->second, it->first});
  by_field_.erase(it);
  return true;
}

void FieldTtls::CollectPassed(int64_t now_ms, size_t max, std::vector<std::string>* out) const {
  for (const auto& [at, field] : by_time_) {
    if (max == 0 || !FieldTtlPassed(at, now_ms)) break;
    out->emplace_back(field);
    --max;
  }
}

size_t FieldTtls::CountPassed(int64_t now_ms) const {
  size_t n = 0;
  for (const auto& [at, field] : by_time_) {
    if (!FieldTtlPassed(at, now_ms)) break;
    ++n;
  }
  return n;
}

}  // namespace trove::resp
