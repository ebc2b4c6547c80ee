// Command categories, derived as Redis 7 derives them: the command group's
// category, then the implicit ones of its flags (write, read, admin +
// dangerous, pubsub, fast, blocking, and slow when not fast), plus the
// explicit extras Redis's command table gives a few commands; and the names
// of Redis's commands that Trove lacks, which ACL rules may still name. Any
// thread.
#include "protocol/resp/services/acl_categories.h"

#include <string>
#include <unordered_map>

#include "protocol/command_log.h"
#include "protocol/resp/core/command_table.h"
#include "protocol/resp/services/latency_histogram.h"

namespace trove::resp::acl {
namespace {

uint32_t GroupCategory(std::string_view g) {
  if (g == "string") return kCatString;
  if (g == "bitmap") return kCatBitmap;
  if (g == "hyperloglog") return kCatHyperloglog;
  if (g == "list") return kCatList;
  if (g == "hash") return kCatHash;
  if (g == "set") return kCatSet;
  if (g == "sorted-set") return kCatSortedSet;
  if (g == "geo") return kCatGeo;
  if (g == "generic") return kCatKeyspace;
  if (g == "connection") return kCatConnection;
  if (g == "transactions") return kCatTransaction;
  if (g == "pubsub") return kCatPubsub;
  if (g == "scripting") return kCatScripting;
  return 0;
}

bool In(std::string_view name, std::initializer_list<std::string_view> names) {
  for (std::string_view n : names)
    if (n == name) return true;
  return false;
}

uint32_t Implicit(uint32_t c, uint32_t flags, std::string_view name) {
  if (flags & kCmdWrite) c |= kCatWrite;
  if ((flags & kCmdReadonly) && !(c & kCatScripting)) c |= kCatRead;
  if (flags & kCmdAdmin) c |= kCatAdmin | kCatDangerous;
  if (flags & kCmdPubsub) c |= kCatPubsub;
  if (flags & kCmdFast) c |= kCatFast;
  if (In(name, {"blpop", "brpop", "brpoplpush", "blmove", "blmpop", "bzpopmin", "bzpopmax",
                "bzmpop"}))
    c |= kCatBlocking;
  if (!(c & kCatFast)) c |= kCatSlow;
  return c;
}

// The category of a command's data type: its group's, except SORT and
// SORT_RO, documented in the generic group but categorized by the types they
// sort (Redis's sort.json: @set @sortedset @list, not @keyspace).
uint32_t TypeCategory(const CommandSpec& s) {
  if (In(s.name, {"sort", "sort_ro"})) return kCatSet | kCatSortedSet | kCatList;
  return GroupCategory(s.group);
}

// Redis's explicit extras on top-level commands.
uint32_t Extras(std::string_view name) {
  uint32_t c = In(name, {"dbsize", "flushall", "flushdb", "swapdb"}) ? kCatKeyspace : 0;
  if (In(name, {"flushall", "flushdb", "info", "keys", "migrate", "restore", "sort", "sort_ro",
                "swapdb"}))
    c |= kCatDangerous;
  if (name == "lastsave" || name == "role") c |= kCatAdmin | kCatDangerous;
  return c;
}

// A subcommand's categories, Redis's command table: slow, the container's
// group category for CLIENT / COMMAND / OBJECT / PUBSUB (PUBSUB HELP
// excepted), admin + dangerous for the administrative ones, read for the
// ones that read a key.
uint32_t SubCategories(std::string_view parent, std::string_view sub) {
  uint32_t c = kCatSlow;
  const bool help = sub == "help";
  if (parent == "client" || parent == "command") c |= kCatConnection;
  if (parent == "object") c |= kCatKeyspace | (help ? 0 : kCatRead);
  if (parent == "pubsub" && !help) c |= kCatPubsub;
  if (parent == "script" || parent == "function") c |= kCatScripting;
  if (parent == "function" && In(sub, {"delete", "flush", "load", "restore"})) c |= kCatWrite;
  if (parent == "memory" && sub == "usage") c |= kCatRead;
  bool admin = false;
  if (parent == "acl") admin = !In(sub, {"cat", "genpass", "help", "whoami"});
  if (parent == "config" || parent == "latency" || parent == "slowlog") admin = !help;
  if (parent == "client")
    admin = In(sub, {"kill", "list", "no-evict", "pause", "unblock", "unpause"});
  if (admin) c |= kCatAdmin | kCatDangerous;
  return c;
}

// memcached-port commands, as the RESP commands they resemble.
uint32_t MemcacheCategories(std::string_view c) {
  if (In(c, {"get", "gets", "mg"})) return kCatRead | kCatString | kCatFast;
  if (In(c, {"gat", "gats", "touch"})) return kCatWrite | kCatKeyspace | kCatFast;
  if (In(c, {"set", "add", "replace", "append", "prepend", "cas", "incr", "decr", "ms", "ma"}))
    return kCatWrite | kCatString | kCatFast;
  if (In(c, {"delete", "md"})) return kCatWrite | kCatKeyspace | kCatFast;
  if (c == "flush_all") return kCatWrite | kCatKeyspace | kCatSlow | kCatDangerous;
  if (c == "stats") return kCatAdmin | kCatSlow | kCatDangerous;
  if (In(c, {"version", "mn", "me"})) return kCatConnection | kCatFast;
  // "other": verbosity, cache_memlimit, shutdown, slabs, lru_crawler, watch.
  return kCatAdmin | kCatSlow | kCatDangerous;
}

// Redis 7.4's commands and subcommands (its COMMAND LIST) that Trove does
// not implement, sorted. A name Trove implements is found in
// CommandCategories first, so one Trove adds later may stay listed here.
// clang-format off
constexpr std::string_view kRedisOnlyCommands[] = {
    "asking", "bgrewriteaof", "cluster", "cluster|addslots", "cluster|addslotsrange",
    "cluster|bumpepoch",
    "cluster|count-failure-reports", "cluster|countkeysinslot", "cluster|delslots",
    "cluster|delslotsrange", "cluster|failover", "cluster|flushslots", "cluster|forget",
    "cluster|getkeysinslot", "cluster|help", "cluster|info", "cluster|keyslot", "cluster|links",
    "cluster|meet", "cluster|myid", "cluster|myshardid", "cluster|nodes", "cluster|replicas",
    "cluster|replicate", "cluster|reset", "cluster|saveconfig", "cluster|set-config-epoch",
    "cluster|setslot", "cluster|shards", "cluster|slaves", "cluster|slots", "eval",
    "eval_ro", "evalsha", "evalsha_ro", "failover", "fcall", "fcall_ro", "function",
    "function|delete", "function|dump", "function|flush", "function|help", "function|kill",
    "function|list", "function|load", "function|restore", "function|stats", "migrate", "module",
    "module|help",
    "module|list", "module|load", "module|loadex", "module|unload",
    "psync", "readonly", "readwrite", "replconf", "replicaof",
    "restore-asking", "script", "script|debug", "script|exists", "script|flush",
    "script|help", "script|kill", "script|load", "slaveof", "sync",
    "wait", "waitaof", "xack", "xadd", "xautoclaim", "xclaim", "xdel", "xgroup", "xgroup|create",
    "xgroup|createconsumer", "xgroup|delconsumer", "xgroup|destroy", "xgroup|help", "xgroup|setid",
    "xinfo", "xinfo|consumers", "xinfo|groups", "xinfo|help", "xinfo|stream", "xlen", "xpending",
    "xrange", "xread", "xreadgroup", "xrevrange", "xsetid", "xtrim"};
// clang-format on

}  // namespace

RedisOnly RedisOnlyCommand(std::string_view fullname) {
  RedisOnly kind = RedisOnly::kNone;
  for (std::string_view n : kRedisOnlyCommands) {
    if (EqualsIgnoreCase(n, fullname)) {
      kind = n.find('|') == std::string_view::npos ? RedisOnly::kCommand : RedisOnly::kSubcommand;
    } else if (n.size() > fullname.size() && n[fullname.size()] == '|' &&
               EqualsIgnoreCase(n.substr(0, fullname.size()), fullname)) {
      return RedisOnly::kContainer;  // "cluster" before "cluster|addslots"
    }
  }
  return kind;
}

uint32_t CategoryByName(std::string_view name) {
  for (size_t i = 0; i < kCategoryCount; ++i)
    if (EqualsIgnoreCase(name, kCategoryNames[i])) return 1u << i;
  return 0;
}

const CommandCategories& CommandCategories::Get() {
  static const CommandCategories* c = new CommandCategories();
  return *c;
}

CommandCategories::CommandCategories() {
  const HistogramSlots& slots = HistogramSlots::Get();
  const CommandTable& table = CommandTable::Get();
  const size_t n = slots.size();
  cats_.assign(n, 0);
  sub_begin_.assign(n, 0);
  sub_end_.assign(n, 0);
  parent_.assign(n, -1);
  for (const CommandSpec& s : table.all()) {
    const size_t id = static_cast<size_t>(s.id);
    cats_[id] = Implicit(TypeCategory(s) | Extras(s.name), s.flags, s.name);
    if (slots.sub_begin(id) < 0) continue;
    // A container is @slow only (COMMAND also @connection); its
    // subcommands carry the real categories.
    cats_[id] = kCatSlow | (std::string_view(s.name) == "command" ? kCatConnection : 0);
    sub_begin_[id] = static_cast<size_t>(slots.sub_begin(id));
    sub_end_[id] = static_cast<size_t>(slots.sub_end(id));
    for (size_t j = sub_begin_[id]; j < sub_end_[id]; ++j) {
      std::string_view full = slots.name(j);
      cats_[j] = SubCategories(s.name, full.substr(full.find('|') + 1));
      parent_[j] = static_cast<int>(id);
    }
  }
  for (size_t j = static_cast<size_t>(slots.mc_begin()); j < n; ++j) {
    std::string_view full = slots.name(j);
    cats_[j] = MemcacheCategories(full.substr(full.find('|') + 1));
  }
}

int CommandCategories::Find(std::string_view fullname) const {
  const HistogramSlots& slots = HistogramSlots::Get();
  for (size_t i = 0; i < slots.size(); ++i)
    if (EqualsIgnoreCase(slots.name(i), fullname)) return static_cast<int>(i);
  return -1;
}

}  // namespace trove::resp::acl
