// DUMP and RESTORE payloads of Trove's values in Redis's serialization
// format: a type byte, the value in RDB form, then the footer (rdb_codec.h).
// Written in forms every Redis from 7.0 on loads (RDB version 10); read in
// every form Redis 7.0-7.4 writes for strings, lists, sets, sorted sets and
// hashes, and in the older forms those still load. Pure: no keyspace, no
// connection; the command side is commands/dump.cc. Any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

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
};

// DUMP of a string: the payload, footer included, in *out (replaced).
// Strings are written raw, or in RDB's integer form when they are the
// canonical text of a 32-bit integer (as Redis writes them).
void DumpString(std::string_view value, std::string* out);
// DUMP of a collection of `type`: lists as kList, sets as kSet, sorted sets
// as kZset2, hashes as kHash. These are the plain forms, which every Redis
// version loads, converting them to its compact encodings by its own
// thresholds; Trove's compact forms differ from Redis's anyway.
void DumpCollection(engine::ValueType type, const CollectionBase& v, std::string* out);

// A value read from a payload: a string, or a non-empty collection whose
// compact/large encoding is still to be chosen (its CheckEncoding) by the
// caller.
struct RdbValue {
  engine::ValueType type = engine::ValueType::kString;
  std::string str;
  std::unique_ptr<CollectionBase> coll;
};

enum class RdbLoad : uint8_t {
  kOk,
  kBadFooter,  // too short, an RDB version past 12, or a wrong checksum
  kBadData,    // anything wrong in the body (RESTORE's "Bad data format")
};

// Reads a whole DUMP payload. kBadData also for: an empty collection,
// duplicate members or fields, a NaN score, an unknown or unsupported type
// (modules, streams, Redis 7.4's hashes with field expiries: 22-25), and
// bytes left over after the value.
RdbLoad LoadPayload(std::string_view payload, RdbValue* out);

}  // namespace trove::resp
