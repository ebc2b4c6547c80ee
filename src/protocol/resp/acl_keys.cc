// The permission each key argument of a call needs under %R~ / %W~ key
// patterns, following Redis 7's key specs: a key the command reads data
// from (ACCESS) needs read, one it inserts, updates or deletes needs write,
// and one it only tests (EXISTS, TYPE, TTL, the cardinality commands) needs
// either. Any thread.
#include <string_view>

#include "protocol/resp/acl_user.h"
#include "protocol/resp/command.h"
#include "protocol/resp/command_table.h"

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
                "zremrangebylex", "restore"});
}

// Commands whose first key is written and whose other keys are read.
bool StoreCommand(std::string_view n) {
  return In(n, {"sinterstore", "sunionstore", "sdiffstore", "zunionstore", "zinterstore",
                "zdiffstore", "zrangestore"});
}

}  // namespace

void KeyPerms(const CommandSpec& spec, std::span<const std::string_view> argv,
              std::span<const size_t> idx, std::vector<uint8_t>* perms) {
  perms->assign(idx.size(), 0);
  const std::string_view n = spec.name;
  if (!(spec.flags & kCmdWrite)) {
    const uint8_t p = NoAccess(n) ? 0 : kPermRead;
    for (uint8_t& x : *perms) x = p;
    return;
  }
  uint8_t p = WriteOnly(n) ? kPermWrite : kPermAll;
  if (n == "set") {
    for (size_t i = 3; i < argv.size(); ++i)
      if (EqualsIgnoreCase(argv[i], "get")) p = kPermAll;
  }
  for (uint8_t& x : *perms) x = p;
  if (idx.size() < 2) return;
  if (StoreCommand(n)) {
    (*perms)[0] = kPermWrite;
    for (size_t j = 1; j < idx.size(); ++j) (*perms)[j] = kPermRead;
  } else if (In(n, {"rename", "renamenx", "lmove", "rpoplpush", "blmove", "brpoplpush",
                    "smove"})) {
    (*perms)[0] = kPermAll;
    (*perms)[1] = kPermWrite;
  } else if (n == "copy") {
    (*perms)[0] = kPermRead;
    (*perms)[1] = kPermWrite;
  }
}

}  // namespace trove::resp::acl
