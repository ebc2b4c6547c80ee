// DUMP and RESTORE payloads of Trove's values in Redis's serialization
// format: a type byte, the value in RDB form, then the footer (rdb_codec.h).
// Written in forms every Redis from 7.0 on loads (RDB version 10), but for a
// hash with field TTLs, which only Redis 7.4+ can hold (RDB version 12); read
// in every form Redis 7.0-7.4 writes for strings, lists, sets, sorted sets
// and hashes (field TTLs included), and in the older forms those still load.
// Pure: no keyspace, no connection; the command side is commands/dump.cc.
// The hash forms with field TTLs are in rdb_hash_ttl.cc. Any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/engine.h"
#include "protocol/resp/types/collections.h"

namespace trove::resp {

// The RDB object types (Redis's rdb.h numbers).
enum class RdbType : uint8_t {
  kString = 0,
  kList = 1,
  kSet = 2,
  kZset = 3,    // scores as text
  kHash = 4,
  kZset2 = 5,   // scores as binary doubles
  kHashZipmap = 9,
  kListZiplist = 10,
  kSetIntset = 11,
  kZsetZiplist = 12,
  kHashZiplist = 13,
  kListQuicklist = 14,  // nodes are ziplists (Redis 3.2-6.2)
  kHashListpack = 16,
  kZsetListpack = 17,
  kListQuicklist2 = 18,  // nodes are listpacks or single plain elements (7.0+)
  kSetListpack = 20,     // Redis 7.2+
  // Hashes with field TTLs (Redis 7.4). METADATA: a count, then per field a
  // TTL, the field and the value; LISTPACK_EX: a listpack of field, value,
  // TTL triplets. The _PRE_GA forms (7.4 release candidates) hold absolute
  // times; the others first hold the hash's earliest field expiry, which
  // METADATA's TTLs are relative to (rdb_hash_ttl.cc).
  kHashMetadataPreGa = 22,
  kHashListpackExPreGa = 23,
  kHashMetadata = 24,
  kHashListpackEx = 25,
};

// DUMP of a string: the payload, footer included, in *out (replaced).
// Strings are written raw, or in RDB's integer form when they are the
// canonical text of a 32-bit integer (as Redis writes them).
void DumpString(std::string_view value, std::string* out);
// DUMP of a collection of `type`: lists as kList, sets as kSet, sorted sets
// as kZset2, hashes as kHash. These are the plain forms, which every Redis
// version loads, converting them to its compact encodings by its own
// thresholds; Trove's compact forms differ from Redis's anyway. A hash with
// field TTLs (and a small one that had some: Redis's listpackex) is written
// as kHashMetadata, the plain form of those, with the footer of RDB version
// 12; every other hash's bytes are those of kHash.
void DumpCollection(engine::ValueType type, const CollectionBase& v, std::string* out);

// A value read from a payload: a string, or a non-empty collection whose
// compact/large encoding is still to be chosen (its CheckEncoding) by the
// caller, who then calls ApplyFieldTtls.
struct RdbValue {
  engine::ValueType type = engine::ValueType::kString;
  std::string str;
  std::unique_ptr<CollectionBase> coll;
  // A hash read from a form with field TTLs (22-25): it gets the TTL side
  // table even if no field has a TTL (Redis loads it as listpackex), and
  // field_ttls holds each field's TTL (unix ms, > 0, possibly past), in the
  // order that, given one by one, leaves a compact hash's fields in the
  // order Redis's loader leaves them.
  bool hash_field_ttls = false;
  std::vector<std::pair<std::string, int64_t>> field_ttls;
};

enum class RdbLoad : uint8_t {
  kOk,
  kBadFooter,  // too short, an RDB version past 12, or a wrong checksum
  kBadData,    // anything wrong in the body (RESTORE's "Bad data format")
};

// Reads a whole DUMP payload. kBadData also for: an empty collection,
// duplicate members or fields, a NaN score, an unknown or unsupported type
// (modules, streams), bytes left over after the value, and a field TTL
// Redis's loader refuses (see rdb_hash_ttl.cc) or past the latest one
// HEXPIRE accepts (kMaxFieldExpiryMs). Fields whose TTL has passed are kept,
// as Redis keeps them: reads skip them and the active expiry deletes them.
RdbLoad LoadPayload(std::string_view payload, RdbValue* out);

// Gives a restored hash its field TTLs (v->field_ttls, then emptied), after
// its encoding was chosen: on a compact hash each one moves the field into
// listpackex order (O(n)), so applying them to a hash that is to be large
// before it left the compact encoding would cost O(n^2). No effect on other
// values.
void ApplyFieldTtls(RdbValue* v);

}  // namespace trove::resp
