// Keyspace helpers shared by the command families: database namespacing,
// expiry conversion, typed lookups and string stores. Run on the calling
// worker under the stripes its command holds.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/glob.h"
#include "engine/engine.h"
#include "protocol/resp/core/command.h"

namespace trove::resp {

// Database namespacing. Database 0 is the memcached keyspace: its keys are
// stored as they are. Database N > 0 stores "\0" + byte(N) + key, and a
// database-0 key that itself starts with "\0" is stored as "\0\0" + key, so
// the mapping is one-to-one. memcached text keys cannot contain control
// bytes, so the memcached port never sees another database's keys.
std::string EncodeDbKey(int db, std::string_view key);
// The bytes EncodeDbKey puts before `key`: writes them to prefix and returns
// how many (0 for a plain database-0 key, else 2). For callers that encode
// into their own buffer.
size_t DbKeyPrefix(int db, std::string_view key, char prefix[2]);
// Inverse of EncodeDbKey.
void DecodeDbKey(std::string_view enc, int* db, std::string_view* key);

// Expiries on the RESP side are absolute unix milliseconds, 0 = never (the
// engine keeps them to the millisecond). Returns abs_ms, or -1 when it is not
// after now_ms (the key is to be deleted at once, as Redis does).
int64_t FutureExpiryMs(int64_t abs_ms, int64_t now_ms);
// Milliseconds left, -1 if the item never expires.
int64_t PttlMs(const engine::ItemRef& item, int64_t now_ms);

const char* TypeName(engine::ValueType t);

// INFO's keyspace_hits / keyspace_misses; a miss of `ekey` (when given)
// also raises the keymiss notification when `m` is configured.
void CountKeyspace(CommandContext& ctx, bool hit, std::string_view ekey = {});
// REQUIRES: ctx.locked. Looks ekey up; counts a keyspace hit or miss when
// ctx.count_keyspace (Redis counts read lookups only).
engine::ItemRef LookupLocked(CommandContext& ctx, std::string_view ekey, bool bump = true);

// The longest string value the RESP port stores: proto-max-bulk-len (512 MiB
// by default), whatever -I is. A value past slab_chunk_max is a chunked item
// whose parts are slab chunks counted against -m (docs/resp.md, "Big
// strings"); the memcached port keeps -I as its limit.
size_t MaxStringLen(const CommandContext& ctx);

// REQUIRES: ctx.locked. Stores a string expiring at expire_ms (unix ms, 0
// never; keep_ttl: the old item's expiry instead), of at most
// MaxStringLen bytes. On failure writes the error reply and returns false.
bool StoreStringLocked(CommandContext& ctx, std::string_view ekey, std::string_view value,
                       int64_t expire_ms, bool keep_ttl,
                       engine::ValueType type = engine::ValueType::kString);

// REQUIRES: ctx.locked. The key's current version (no bump, no keyspace
// hit counted).
KeyVersion KeyVersionLocked(CommandContext& ctx, std::string_view ekey);
// The version a WATCH records for a key.
WatchedKey WatchVersionLocked(CommandContext& ctx, std::string_view ekey);

// Reads an integer argument as Redis does (string2ll); writes the error reply
// and returns false if it is not one.
bool ArgInt(CommandContext& ctx, std::string_view s, int64_t* out);
// INCRBY and HINCRBY: adds delta to *cur; false (after the error reply, *cur
// unchanged) when the sum would overflow 64 bits.
bool AddIncrement(CommandContext& ctx, int64_t* cur, int64_t delta);
// The update conditions EXPIRE and ZADD share: NX, XX, GT and LT.
struct UpdateConds {
  bool nx = false, xx = false, gt = false, lt = false;
  // Sets the flag that o names (any case); false when o names none of them.
  bool Take(std::string_view o);
};
// LMPOP / ZMPOP: "numkeys key [key ...] <where> [COUNT count]" from argv[1],
// where <where> is `first` or `second` (LEFT/RIGHT, MIN/MAX; any case). Sets
// *where_pos (the index of <where>: keys are argv[2, where_pos)), *is_first
// and *count (1 unless given). False after the error reply.
bool ParseMpopArgs(CommandContext& ctx, const char* first, const char* second, size_t* where_pos,
                   bool* is_first, int64_t* count);
// Reads a double argument (strtod rules, no nan); writes the error reply.
bool ArgDouble(CommandContext& ctx, std::string_view s, double* out,
               const char* err = "ERR value is not a valid float");
bool ParseDouble(std::string_view s, double* out);
bool ParseLongDouble(std::string_view s, long double* out);

// SCAN cursors as Redis reads them (strtoul: "-1" wraps); false if not a number.
bool ParseCursor(std::string_view s, uint64_t* out);

// Glob matching is trove::GlobMatch (common/glob.h), one matcher for every caller.
using trove::GlobMatch;

// Keyspace walks (commands/keys.cc). REQUIRES: no stripe held on this thread.
void SwapDatabases(CommandContext& ctx, int a, int b);

}  // namespace trove::resp
