// The compact byte forms of RESP collections (CollectionBase::Encode and the
// Decode of each type): what a collection below Redis's thresholds keeps in
// its engine item, and what a warm restart saves of a large one. Runs under
// the key's stripe (or on the main thread for a restart).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "protocol/resp/core/resp_parser.h"
#include "protocol/resp/types/collections.h"

namespace trove::resp {

namespace {
void PutVarint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}
void PutString(std::string* out, std::string_view s) {
  PutVarint(out, s.size());
  out->append(s);
}
bool GetVarint(std::string_view* in, uint64_t* v) {
  *v = 0;
  for (int shift = 0; shift < 64 && !in->empty(); shift += 7) {
    auto b = static_cast<unsigned char>((*in)[0]);
    in->remove_prefix(1);
    *v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) return true;
  }
  return false;
}
bool GetString(std::string_view* in, std::string_view* s) {
  uint64_t n;
  if (!GetVarint(in, &n) || n > in->size()) return false;
  *s = in->substr(0, n);
  in->remove_prefix(n);
  return true;
}
// The string form of a list or set: a varint count, then that many strings,
// each handed to add. False when the bytes are cut short.
template <typename Add>
bool GetStrings(std::string_view in, Add add) {
  uint64_t n;
  if (!GetVarint(&in, &n)) return false;
  for (uint64_t i = 0; i < n; ++i) {
    std::string_view e;
    if (!GetString(&in, &e)) return false;
    add(e);
  }
  return true;
}
}  // namespace

void ListValue::Encode(std::string* out) const {
  out->clear();
  PutVarint(out, d_.size());
  for (const auto& e : d_) PutString(out, e);
}
bool ListValue::Decode(std::string_view in) {
  return GetStrings(in, [this](std::string_view e) { PushBack(e); });
}

// The field-TTL form (collections.h, HashValue::Encode): marker, version.
constexpr char kHashTtlMarker = '\0';
constexpr char kHashTtlVersion = '\1';

void HashValue::Encode(std::string* out) const {
  out->clear();
  if (ttls_ == nullptr) {  // the form of a hash that never had a field TTL: unchanged
    PutVarint(out, idx_.size());
    for (const auto& [f, v] : Entries()) {
      PutString(out, f);
      PutString(out, v);
    }
    return;
  }
  out->push_back(kHashTtlMarker);
  out->push_back(kHashTtlVersion);
  PutVarint(out, static_cast<uint64_t>(ttls_->earliest()));
  PutVarint(out, idx_.size());
  for (const auto& [f, v] : Entries()) {
    PutString(out, f);
    PutString(out, v);
    PutVarint(out, static_cast<uint64_t>(ttls_->Get(f)));
  }
}

bool HashValue::Decode(std::string_view in) {
  const bool with_ttls = !in.empty() && in[0] == kHashTtlMarker;
  uint64_t earliest = 0;
  if (with_ttls) {
    if (in.size() < 2 || in[1] != kHashTtlVersion) return false;  // a later version
    in.remove_prefix(2);
    if (!GetVarint(&in, &earliest)) return false;
    ttls_ = std::make_unique<FieldTtls>();
    bytes_ += FieldTtls::kTableCost;
  }
  uint64_t n;
  if (!GetVarint(&in, &n)) return false;
  for (uint64_t i = 0; i < n; ++i) {
    std::string_view f, v;
    if (!GetString(&in, &f) || !GetString(&in, &v)) return false;
    Set(f, v);
    if (!with_ttls) continue;
    uint64_t at;
    if (!GetVarint(&in, &at) || at > static_cast<uint64_t>(kMaxFieldExpiryMs)) return false;
    if (at == 0) continue;
    // Straight into the table: the bytes are already in listpackex order,
    // which SetFieldExpiry's repositioning would upset for equal expiries.
    ttls_->Set(f, static_cast<int64_t>(at));
    bytes_ += FieldTtls::Cost(f);
  }
  return !with_ttls || static_cast<int64_t>(earliest) == ttls_->earliest();
}

int64_t HashValue::PeekNextFieldExpiry(std::string_view bytes) {
  if (bytes.size() < 2 || bytes[0] != kHashTtlMarker || bytes[1] != kHashTtlVersion) return 0;
  bytes.remove_prefix(2);
  uint64_t earliest = 0;
  if (!GetVarint(&bytes, &earliest) || earliest > static_cast<uint64_t>(kMaxFieldExpiryMs))
    return 0;
  return static_cast<int64_t>(earliest);
}

// A compact set is an intset, kept as Redis keeps one: ascending integers of
// one width (2, 4 or 8 bytes, little-endian) behind [0][width][varint count].
// The leading 0 can be no count of the string form (an empty set is never
// stored), so both forms decode; the string form is for the rest.
void SetValue::Encode(std::string* out) const {
  out->clear();
  if (intset_) {
    std::vector<int64_t> ints;
    ints.reserve(s_.size());
    int64_t lo = 0, hi = 0;
    for (const std::string& m : s_) {
      int64_t v = 0;
      if (!ParseStrictInt64(m, &v) || std::to_string(v) != m) {
        ints.clear();
        break;  // not canonical: keep the string form, which is exact
      }
      ints.push_back(v);
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
    if (ints.size() == s_.size()) {
      std::sort(ints.begin(), ints.end());
      const unsigned width = (lo >= INT16_MIN && hi <= INT16_MAX)   ? 2
                             : (lo >= INT32_MIN && hi <= INT32_MAX) ? 4
                                                                    : 8;
      out->push_back('\0');
      out->push_back(static_cast<char>(width));
      PutVarint(out, ints.size());
      for (int64_t v : ints) {
        auto u = static_cast<uint64_t>(v);
        for (unsigned i = 0; i < width; ++i) out->push_back(static_cast<char>(u >> (8 * i)));
      }
      return;
    }
  }
  PutVarint(out, s_.size());
  for (const auto& m : Ordered()) PutString(out, m);
}
bool SetValue::Decode(std::string_view in) {
  if (!in.empty() && in[0] == '\0') {
    if (in.size() < 2) return false;
    const auto width = static_cast<unsigned>(in[1]);
    if (width != 2 && width != 4 && width != 8) return false;
    in.remove_prefix(2);
    uint64_t n;
    if (!GetVarint(&in, &n) || n > in.size() / width) return false;
    s_.reserve(static_cast<size_t>(n));
    for (uint64_t i = 0; i < n; ++i) {
      uint64_t u = 0;
      for (unsigned b = 0; b < width; ++b) {
        u |= static_cast<uint64_t>(static_cast<unsigned char>(in[b])) << (8 * b);
      }
      in.remove_prefix(width);
      if (width < 8 && (u >> (8 * width - 1)) != 0) u |= ~uint64_t{0} << (8 * width);  // sign
      Add(std::to_string(static_cast<int64_t>(u)));
    }
    return true;
  }
  return GetStrings(in, [this](std::string_view m) { Add(m); });
}

void ZsetValue::Encode(std::string* out) const {
  out->clear();
  PutVarint(out, index_.size());
  for (const auto& [score, m] : by_score_) {
    PutString(out, m);
    char b[sizeof(double)];
    std::memcpy(b, &score, sizeof b);
    out->append(b, sizeof b);
  }
}
bool ZsetValue::Decode(std::string_view in) {
  uint64_t n;
  if (!GetVarint(&in, &n)) return false;
  for (uint64_t i = 0; i < n; ++i) {
    std::string_view m;
    if (!GetString(&in, &m) || in.size() < sizeof(double)) return false;
    double score;
    std::memcpy(&score, in.data(), sizeof score);
    in.remove_prefix(sizeof score);
    Put(m, score);
  }
  return true;
}

}  // namespace trove::resp
