// The RDB forms of a hash with field TTLs (Redis 7.4's types 22-25), for
// rdb_objects.cc: which hashes DUMP writes in one, the writer, and the
// reader. Any thread; no state.
#pragma once

#include <string>

#include "protocol/resp/types/collections.h"
#include "protocol/resp/types/rdb_codec.h"
#include "protocol/resp/types/rdb_objects.h"

namespace trove::resp {

// True when DUMP writes h as kHashMetadata: a field of h has a TTL, or h is
// compact and had one (Redis's listpackex, which Redis dumps with its TTLs
// and so restores as listpackex). A large hash whose TTLs are all gone is a
// plain hash again, as in Redis.
bool DumpsWithFieldTtls(const HashValue& h);

// Appends h in the kHashMetadata form, type byte included; the caller adds
// the footer of kRdbVersionHashFieldTtls.
void AppendHashWithFieldTtls(const HashValue& h, std::string* out);

// Reads the object of `type` (one of the four hash forms with field TTLs)
// after its type byte into *out: the hash, hash_field_ttls set and the TTLs
// in field_ttls. False for anything malformed (see the .cc).
bool LoadHashWithFieldTtls(RdbType type, RdbReader& in, RdbValue* out);

}  // namespace trove::resp
