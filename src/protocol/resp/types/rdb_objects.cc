// DUMP payloads of Trove's values, and the values of RESTORE's payloads in
// all the RDB forms rdb_objects.h lists. The packed blobs inside some forms
// are walked by rdb_packed.cc. Nothing here trusts a count from the payload
// to size an allocation: each element read consumes at least one byte, so a
// lying count ends at the payload's end.
#include "protocol/resp/types/rdb_objects.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <utility>

#include "common/check.h"
#include "protocol/resp/types/rdb_codec.h"
#include "protocol/resp/types/rdb_hash_ttl.h"
#include "protocol/resp/types/rdb_packed.h"

namespace trove::resp {
namespace {

void AppendType(std::string* out, RdbType t) { out->push_back(static_cast<char>(t)); }

void AppendBinaryDouble(std::string* out, double d) {
  uint64_t u;
  std::memcpy(&u, &d, sizeof u);
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>((u >> (8 * i)) & 0xff));
}

// A score read from a ziplist or listpack: an integer entry's text or the
// %.17g text Redis wrote; the whole text must be the number.
bool ParseScore(std::string_view s, double* d) {
  if (s.empty() || s.size() > 127) return false;
  char buf[128];
  std::memcpy(buf, s.data(), s.size());
  buf[s.size()] = '\0';
  char* end = nullptr;
  *d = std::strtod(buf, &end);
  return end == buf + s.size() && !std::isnan(*d);
}

// The builders: each adds what the payload holds and refuses what Redis's
// loader refuses (duplicates, NaN scores).
struct ListBuild {
  std::unique_ptr<ListValue> v = std::make_unique<ListValue>();
  bool Add(std::string_view e) {
    v->PushBack(e);
    return true;
  }
};
struct SetBuild {
  std::unique_ptr<SetValue> v = std::make_unique<SetValue>();
  bool Add(std::string_view m) { return v->Add(m); }
};
struct HashBuild {
  std::unique_ptr<HashValue> v = std::make_unique<HashValue>();
  bool Add(std::string_view f, std::string_view val) { return v->Set(f, val); }
};
struct ZsetBuild {
  std::unique_ptr<ZsetValue> v = std::make_unique<ZsetValue>();
  bool Add(std::string_view m, double score) { return !std::isnan(score) && v->Put(m, score); }
};

// Walks a packed blob's entries as pairs (hash field/value, zset member/
// score); false for an odd count.
template <typename Walk, typename AddPair>
bool WalkPairs(Walk walk, std::string_view blob, AddPair add_pair) {
  std::string first;
  bool have_first = false;
  const bool ok = walk(blob, [&](std::string_view e) {
    if (!have_first) {
      first.assign(e);
      have_first = true;
      return true;
    }
    have_first = false;
    return add_pair(std::string_view(first), e);
  });
  return ok && !have_first;
}

bool LoadStrings(RdbReader& in, uint64_t n, bool pairs,
                 const std::function<bool(std::string&, std::string&)>& add) {
  std::string a, b;
  for (uint64_t i = 0; i < n; ++i) {
    if (!in.ReadString(&a) || (pairs && !in.ReadString(&b)) || !add(a, b)) return false;
  }
  return true;
}

// The quicklist forms: a node count, then per node (QUICKLIST_2 only) a
// container, 1 for a plain node (one element, its bytes) or 2 for a packed
// one, then the node's bytes: a ziplist (QUICKLIST) or a listpack.
bool LoadQuicklist(RdbReader& in, bool v2, ListBuild* list) {
  uint64_t nodes;
  if (!in.ReadLength(&nodes) || nodes == 0) return false;
  std::string blob;
  const PackedEntryFn add = [list](std::string_view e) { return list->Add(e); };
  for (uint64_t i = 0; i < nodes; ++i) {
    uint64_t container = 2;
    if (v2 && (!in.ReadLength(&container) || (container != 1 && container != 2))) return false;
    if (!in.ReadString(&blob) || blob.empty()) return false;
    if (container == 1) {
      list->Add(blob);
    } else if (!(v2 ? WalkListpack(blob, add) : WalkZiplist(blob, add))) {
      return false;
    }
  }
  return true;
}

// Reads the object after its type byte into *out.
bool LoadObject(RdbType type, RdbReader& in, RdbValue* out) {
  using engine::ValueType;
  uint64_t n = 0;
  std::string blob;
  const bool counted = type == RdbType::kList || type == RdbType::kSet ||
                       type == RdbType::kZset || type == RdbType::kZset2 ||
                       type == RdbType::kHash;
  if (counted && (!in.ReadLength(&n) || n == 0)) return false;
  const bool packed = type == RdbType::kHashZipmap || type == RdbType::kListZiplist ||
                      type == RdbType::kSetIntset || type == RdbType::kZsetZiplist ||
                      type == RdbType::kHashZiplist || type == RdbType::kHashListpack ||
                      type == RdbType::kZsetListpack || type == RdbType::kSetListpack;
  if (packed && !in.ReadString(&blob)) return false;
  switch (type) {
    case RdbType::kString:
      out->type = ValueType::kString;
      return in.ReadString(&out->str);
    case RdbType::kList:
    case RdbType::kListZiplist:
    case RdbType::kListQuicklist:
    case RdbType::kListQuicklist2: {
      ListBuild b;
      bool ok;
      if (type == RdbType::kList) {
        ok = LoadStrings(in, n, false, [&b](std::string& e, std::string&) { return b.Add(e); });
      } else if (type == RdbType::kListZiplist) {
        ok = WalkZiplist(blob, [&b](std::string_view e) { return b.Add(e); });
      } else {
        ok = LoadQuicklist(in, type == RdbType::kListQuicklist2, &b);
      }
      out->type = ValueType::kList;
      out->coll = std::move(b.v);
      return ok;
    }
    case RdbType::kSet:
    case RdbType::kSetIntset:
    case RdbType::kSetListpack: {
      SetBuild b;
      const PackedEntryFn add = [&b](std::string_view m) { return b.Add(m); };
      bool ok;
      if (type == RdbType::kSet) {
        ok = LoadStrings(in, n, false, [&b](std::string& m, std::string&) { return b.Add(m); });
      } else {
        ok = type == RdbType::kSetIntset ? WalkIntset(blob, add) : WalkListpack(blob, add);
      }
      out->type = ValueType::kSet;
      out->coll = std::move(b.v);
      return ok;
    }
    case RdbType::kZset:
    case RdbType::kZset2:
    case RdbType::kZsetZiplist:
    case RdbType::kZsetListpack: {
      ZsetBuild b;
      bool ok = true;
      if (type == RdbType::kZset || type == RdbType::kZset2) {
        std::string m;
        for (uint64_t i = 0; ok && i < n; ++i) {
          double score;
          ok = in.ReadString(&m) &&
               (type == RdbType::kZset2 ? in.ReadBinaryDouble(&score)
                                         : in.ReadTextDouble(&score)) &&
               b.Add(m, score);
        }
      } else {
        auto add = [&b](std::string_view m, std::string_view s) {
          double score;
          return ParseScore(s, &score) && b.Add(m, score);
        };
        ok = type == RdbType::kZsetZiplist ? WalkPairs(WalkZiplist, blob, add)
                                           : WalkPairs(WalkListpack, blob, add);
      }
      out->type = ValueType::kZset;
      out->coll = std::move(b.v);
      return ok;
    }
    case RdbType::kHash:
    case RdbType::kHashZipmap:
    case RdbType::kHashZiplist:
    case RdbType::kHashListpack: {
      HashBuild b;
      auto add = [&b](std::string_view f, std::string_view v) { return b.Add(f, v); };
      bool ok;
      if (type == RdbType::kHash) {
        ok = LoadStrings(in, n, true, [&b](std::string& f, std::string& v) { return b.Add(f, v); });
      } else if (type == RdbType::kHashZipmap) {
        ok = WalkZipmap(blob, add);
      } else {
        ok = type == RdbType::kHashZiplist ? WalkPairs(WalkZiplist, blob, add)
                                           : WalkPairs(WalkListpack, blob, add);
      }
      out->type = ValueType::kHash;
      out->coll = std::move(b.v);
      return ok;
    }
    case RdbType::kHashMetadataPreGa:
    case RdbType::kHashListpackExPreGa:
    case RdbType::kHashMetadata:
    case RdbType::kHashListpackEx:
      return LoadHashWithFieldTtls(type, in, out);
  }
  return false;  // module, stream or no type at all
}

bool KnownType(uint8_t t) {
  switch (static_cast<RdbType>(t)) {
    case RdbType::kString:
    case RdbType::kList:
    case RdbType::kSet:
    case RdbType::kZset:
    case RdbType::kHash:
    case RdbType::kZset2:
    case RdbType::kHashZipmap:
    case RdbType::kListZiplist:
    case RdbType::kSetIntset:
    case RdbType::kZsetZiplist:
    case RdbType::kHashZiplist:
    case RdbType::kListQuicklist:
    case RdbType::kHashListpack:
    case RdbType::kZsetListpack:
    case RdbType::kListQuicklist2:
    case RdbType::kSetListpack:
    case RdbType::kHashMetadataPreGa:
    case RdbType::kHashListpackExPreGa:
    case RdbType::kHashMetadata:
    case RdbType::kHashListpackEx:
      return true;
  }
  return false;
}

}  // namespace

void DumpString(std::string_view value, std::string* out) {
  out->clear();
  out->reserve(value.size() + 16);
  AppendType(out, RdbType::kString);
  AppendRdbStringValue(out, value);
  AppendRdbFooter(out);
}

void DumpCollection(engine::ValueType type, const CollectionBase& v, std::string* out) {
  out->clear();
  switch (type) {
    case engine::ValueType::kList: {
      const auto& list = static_cast<const ListValue&>(v);
      AppendType(out, RdbType::kList);
      AppendRdbLength(out, list.size());
      for (const std::string& e : list.items()) AppendRdbStringValue(out, e);
      break;
    }
    case engine::ValueType::kSet: {
      const auto& set = static_cast<const SetValue&>(v);
      AppendType(out, RdbType::kSet);
      AppendRdbLength(out, set.size());
      // An intset in ascending order (Redis's order, and the same bytes for
      // the same members); other sets as they are stored.
      if (set.compact()) {
        for (const std::string& m : set.Ordered()) AppendRdbStringValue(out, m);
      } else {
        for (const std::string& m : set.members()) AppendRdbStringValue(out, m);
      }
      break;
    }
    case engine::ValueType::kZset: {
      const auto& zset = static_cast<const ZsetValue&>(v);
      AppendType(out, RdbType::kZset2);
      AppendRdbLength(out, zset.size());
      for (const auto& [score, m] : zset.ordered()) {
        AppendRdbStringValue(out, m);
        AppendBinaryDouble(out, score);
      }
      break;
    }
    case engine::ValueType::kHash: {
      const auto& hash = static_cast<const HashValue&>(v);
      if (DumpsWithFieldTtls(hash)) {
        AppendHashWithFieldTtls(hash, out);
        AppendRdbFooter(out, kRdbVersionHashFieldTtls);
        return;
      }
      AppendType(out, RdbType::kHash);
      AppendRdbLength(out, hash.size());
      for (const auto& [f, val] : hash.Entries()) {
        AppendRdbStringValue(out, f);
        AppendRdbStringValue(out, val);
      }
      break;
    }
    case engine::ValueType::kString:
      CHECK(false);  // strings go through DumpString
  }
  AppendRdbFooter(out);
}

RdbLoad LoadPayload(std::string_view payload, RdbValue* out) {
  std::string_view body;
  if (!StripRdbFooter(payload, &body)) return RdbLoad::kBadFooter;
  RdbReader in(body);
  uint8_t type;
  if (!in.ReadByte(&type) || !KnownType(type)) return RdbLoad::kBadData;
  *out = RdbValue{};
  if (!LoadObject(static_cast<RdbType>(type), in, out) || !in.done()) return RdbLoad::kBadData;
  if (out->coll != nullptr && out->coll->size() == 0) return RdbLoad::kBadData;
  return RdbLoad::kOk;
}

}  // namespace trove::resp
