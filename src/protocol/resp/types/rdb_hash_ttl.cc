// DUMP and RESTORE of hashes with field TTLs in Redis 7.4's RDB forms
// (rdb_hash_ttl.h). Layouts, as Redis's rdb.c writes and reads them:
//   METADATA (24): [earliest field expiry: 8 bytes LE][count]
//                  count x [TTL as a length][field][value]
//     A TTL of 0 is "none"; any other t means the expiry earliest + t - 1
//     (relative, so most TTLs take fewer bytes; 0 stays free for "none").
//   METADATA_PRE_GA (22): the same without the earliest expiry; TTLs are
//     absolute unix ms.
//   LISTPACK_EX (25): [earliest field expiry: 8 bytes LE][listpack string]
//   LISTPACK_EX_PRE_GA (23): [listpack string]
//     The listpack holds field, value, TTL triplets; the TTL is an integer
//     entry, absolute unix ms, 0 for none. Redis keeps the triplets in
//     listpackex order: the fields with a TTL first, earliest first, then
//     the others.
// Redis's loader reads the earliest expiry of 25 and ignores it, and only
// logs a bad one in 24; Trove does the same.
#include "protocol/resp/types/rdb_hash_ttl.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "protocol/resp/types/hash_field_ttl.h"
#include "protocol/resp/types/rdb_packed.h"

namespace trove::resp {
namespace {

// Redis's loader refuses an expiry past its ebuckets' 48 bits
// (EB_EXPIRE_TIME_MAX). Trove also refuses one past kMaxFieldExpiryMs (2^46
// - 1, the latest HEXPIRE sets, so the latest any Redis writes): its field
// TTL table holds no later time (hash_field_ttl.h, invariant 2).
constexpr uint64_t kRedisMaxExpiry = (uint64_t{1} << 48) - 1;
static_assert(static_cast<uint64_t>(kMaxFieldExpiryMs) < kRedisMaxExpiry);
constexpr auto kMaxExpiry = static_cast<uint64_t>(kMaxFieldExpiryMs);

using FieldTtlList = std::vector<std::pair<std::string, int64_t>>;

// Types 24 and 22. Fields are added in payload order and their TTLs listed
// in that order: given one by one, each goes before the first field whose
// TTL is not earlier (HashValue::Reposition), which is where Redis's loader
// inserts it in a listpackex too.
bool LoadMetadata(RdbReader& in, bool relative, uint64_t earliest, HashValue* h,
                  FieldTtlList* ttls) {
  uint64_t n;
  if (!in.ReadLength(&n) || n == 0) return false;
  std::string f, v;
  for (uint64_t i = 0; i < n; ++i) {
    uint64_t ttl;
    if (!in.ReadLength(&ttl) || !in.ReadString(&f) || !in.ReadString(&v)) return false;
    uint64_t at = ttl;
    if (relative && ttl != 0) {
      // earliest + ttl - 1, refused past kMaxExpiry without overflowing.
      if (earliest > kMaxExpiry || ttl - 1 > kMaxExpiry - earliest) return false;
      at = earliest + ttl - 1;
    }
    if (at > kMaxExpiry || !h->Set(f, v)) return false;  // Set: false for a duplicate
    if (at != 0) ttls->emplace_back(f, static_cast<int64_t>(at));
  }
  return true;
}

// Types 25 and 23, checked as Redis checks them under sanitize-dump-payload
// yes: whole triplets, unique fields, integer TTLs within range and in
// listpackex order (a TTL after a field without one, or earlier than the
// one before it, is refused). The TTLs are listed last first: given in that
// order each goes to the front, so the payload's order is kept (Redis keeps
// the listpack as it is).
bool LoadListpackEx(std::string_view blob, HashValue* h, FieldTtlList* ttls) {
  uint64_t i = 0;
  std::string field, value;
  int64_t prev = -1;  // the previous triplet's TTL; -1 before the first
  const bool ok = WalkListpackTyped(blob, [&](std::string_view e, bool is_int) {
    const uint64_t slot = i++ % 3;
    if (slot == 0) {
      field.assign(e);
      return true;
    }
    if (slot == 1) {
      value.assign(e);
      return true;
    }
    int64_t at = 0;
    const auto [end, ec] = std::from_chars(e.data(), e.data() + e.size(), at);
    if (!is_int || ec != std::errc() || end != e.data() + e.size()) return false;
    if (at < 0 || static_cast<uint64_t>(at) > kMaxExpiry) return false;
    if (at != 0 && (prev == 0 || at < prev)) return false;
    prev = at;
    if (!h->Set(field, value)) return false;
    if (at != 0) ttls->emplace_back(field, at);
    return true;
  });
  std::reverse(ttls->begin(), ttls->end());
  return ok && i % 3 == 0;
}

}  // namespace

bool DumpsWithFieldTtls(const HashValue& h) {
  const FieldTtls* t = h.field_ttls();
  return t != nullptr && (!t->empty() || h.compact());
}

void AppendHashWithFieldTtls(const HashValue& h, std::string* out) {
  const FieldTtls& ttls = *h.field_ttls();
  const auto earliest = static_cast<uint64_t>(ttls.earliest());  // 0 when none
  out->push_back(static_cast<char>(RdbType::kHashMetadata));
  AppendRdbMillisecondTime(out, earliest);
  const auto entries = h.Entries();
  AppendRdbLength(out, entries.size());
  auto put = [out](std::string_view f, std::string_view v, uint64_t ttl) {
    AppendRdbLength(out, ttl);
    AppendRdbStringValue(out, f);
    AppendRdbStringValue(out, v);
  };
  // The fields with a TTL last first, then the others in order: a loader
  // that puts each field with a TTL before the first one whose TTL is not
  // earlier (Redis's, and Trove's) then rebuilds a compact hash's
  // listpackex order exactly, ties included.
  for (auto it = entries.rbegin(); it != entries.rend(); ++it) {
    const int64_t at = ttls.Get(it->first);
    if (at != 0) put(it->first, it->second, static_cast<uint64_t>(at) - earliest + 1);
  }
  for (const auto& [f, v] : entries) {
    if (ttls.Get(f) == 0) put(f, v, 0);
  }
}

bool LoadHashWithFieldTtls(RdbType type, RdbReader& in, RdbValue* out) {
  out->type = engine::ValueType::kHash;
  out->hash_field_ttls = true;
  auto hash = std::make_unique<HashValue>();
  HashValue* h = hash.get();
  out->coll = std::move(hash);
  uint64_t earliest = 0;
  if ((type == RdbType::kHashMetadata || type == RdbType::kHashListpackEx) &&
      !in.ReadMillisecondTime(&earliest)) {
    return false;
  }
  if (type == RdbType::kHashMetadata || type == RdbType::kHashMetadataPreGa) {
    return LoadMetadata(in, type == RdbType::kHashMetadata, earliest, h, &out->field_ttls);
  }
  std::string blob;
  return in.ReadString(&blob) && LoadListpackEx(blob, h, &out->field_ttls);
}

void ApplyFieldTtls(RdbValue* v) {
  if (!v->hash_field_ttls || v->coll == nullptr) return;
  auto* h = static_cast<HashValue*>(v->coll.get());
  h->EnableFieldTtls();
  for (const auto& [f, at] : v->field_ttls) h->SetFieldExpiry(f, at);
  v->field_ttls.clear();
}

}  // namespace trove::resp
