// The permission each key argument of a call needs under %R~ / %W~ key
// patterns, following Redis 7's key specs: a key the command reads data
// from (ACCESS) needs read, one it inserts, updates or deletes needs write,
// and one it only tests (EXISTS, TYPE, TTL, the cardinality commands) needs
// either. Any thread.
#include <string_view>

#include "protocol/resp/services/acl_user.h"
#include "protocol/resp/core/command.h"
#include "protocol/resp/core/command_table.h"

namespace trove::resp::acl {
namespace {

bool In(std::string_view name, std::initializer_list<std::string_view> names) {
  for (std::string_view n : names)
    if (n == name) return true;
  return false;
}

// Read commands that only test a key (no ACCESS in their key spec).
bool NoAccess(std::string_view n) {
  return In(n, {"exists", "type", "touch", "ttl", "pttl", "expiretime", "pexpiretime", "strlen",
                "hlen", "llen", "scard", "zcard", "xlen", "hexists", "hstrlen", "sismember",
                "smismember", "object", "memory"});
}

// Write commands that change a key without reading its value back.
bool WriteOnly(std::string_view n) {
  return In(n, {"set",      "setnx",     "setex",     "psetex",  "mset",   "msetnx",
                "append",   "setrange",  "del",       "unlink",  "expire", "pexpire",
                "expireat", "pexpireat", "persist",   "lpush",   "rpush",  "lpushx",
                "rpushx",   "linsert",   "lset",      "ltrim",   "lrem",   "sadd",
                "srem",     "hset",      "hmset",     "hsetnx",  "hdel",   "zadd",
                "zrem",     "zincrby",   "zremrangebyscore", "zremrangebyrank",
                "zremrangebylex", "restore", "geoadd", "hexpire", "hpexpire", "hexpireat",
                "hpexpireat", "hpersist", "pfadd"});
}

// Commands whose first key is written and whose other keys are read.
bool StoreCommand(std::string_view n) {
  return In(n, {"sinterstore", "sunionstore", "sdiffstore", "zunionstore", "zinterstore",
                "zdiffstore", "zrangestore", "bitop", "geosearchstore"});
}

// Per command id, computed once: the permission of its keys, and how its
// first keys differ (store commands, source/destination pairs, SET ... GET,
// BITFIELD with only GETs, PFMERGE's destination that is also read).
struct KeyRule {
  uint8_t base = kPermRead;
  enum Kind : uint8_t { kPlain, kStore, kSrcDst, kCopy, kSet, kBitfield, kSrcThenDsts, kMerge } kind =
      kPlain;
};

const std::vector<KeyRule>& Rules() {
  static const std::vector<KeyRule>* rules = [] {
    auto* v = new std::vector<KeyRule>();
    for (const CommandSpec& spec : CommandTable::Get().all()) {
      const std::string_view n = spec.name;
      KeyRule r;
      if (!(spec.flags & kCmdWrite)) {
        r.base = NoAccess(n) ? 0 : kPermRead;
        // A script's declared keys may be read and written (RW in Redis's key spec).
        if (n == "eval" || n == "evalsha") r.base = kPermAll;
      } else {
        r.base = WriteOnly(n) ? kPermWrite : kPermAll;
        if (StoreCommand(n)) r.kind = KeyRule::kStore;
        if (In(n, {"rename", "renamenx", "lmove", "rpoplpush", "blmove", "brpoplpush", "smove"}))
          r.kind = KeyRule::kSrcDst;
        if (n == "copy") r.kind = KeyRule::kCopy;
        // SORT reads its key (RO access) and writes only its STORE
        // destination (OW update): COPY's pattern, read-only without STORE.
        if (n == "sort") {
          r.base = kPermRead;
          r.kind = KeyRule::kCopy;
        }
        // The source is only read; the STORE/STOREDIST destinations are written.
        if (n == "georadius" || n == "georadiusbymember") {
          r.base = kPermRead;
          r.kind = KeyRule::kSrcThenDsts;
        }
        if (n == "set") r.kind = KeyRule::kSet;
        if (n == "bitfield") r.kind = KeyRule::kBitfield;
        if (n == "pfmerge") r.kind = KeyRule::kMerge;
        // PFDEBUG's key spec is RW ACCESS: reading it is what ACL checks.
        if (n == "pfdebug") r.base = kPermRead;
      }
      v->push_back(r);
    }
    return v;
  }();
  return *rules;
}

}  // namespace

void KeyPerms(const CommandSpec& spec, std::span<const std::string_view> argv,
              std::span<const size_t> idx, std::vector<uint8_t>* perms) {
  const KeyRule& r = Rules()[static_cast<size_t>(spec.id)];
  uint8_t p = r.base;
  if (r.kind == KeyRule::kSet) {
    for (size_t i = 3; i < argv.size(); ++i)
      if (EqualsIgnoreCase(argv[i], "get")) p = kPermAll;
  }
  // BITFIELD with GETs only reads its key (Redis's bitfieldGetKeys: RO access).
  if (r.kind == KeyRule::kBitfield && BitfieldReadOnly(argv)) p = kPermRead;
  perms->assign(idx.size(), p);
  if (idx.size() < 2) return;
  if (r.kind == KeyRule::kStore) {
    (*perms)[0] = kPermWrite;
    for (size_t j = 1; j < idx.size(); ++j) (*perms)[j] = kPermRead;
  } else if (r.kind == KeyRule::kSrcDst) {
    (*perms)[0] = kPermAll;
    (*perms)[1] = kPermWrite;
  } else if (r.kind == KeyRule::kMerge) {
    for (size_t j = 1; j < idx.size(); ++j) (*perms)[j] = kPermRead;
  } else if (r.kind == KeyRule::kCopy) {
    (*perms)[0] = kPermRead;
    (*perms)[1] = kPermWrite;
  } else if (r.kind == KeyRule::kSrcThenDsts) {
    for (size_t j = 1; j < idx.size(); ++j) (*perms)[j] = kPermWrite;
  }
}

}  // namespace trove::resp::acl
