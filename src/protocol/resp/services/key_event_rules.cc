// Which keyspace notifications a command raises, as Redis's commands raise
// them (notifyKeyspaceEvent calls in t_*.c, db.c, expire.c), and their
// queueing and publishing. Runs on the connection's worker.
//
// How: while notifications are on, RunRecordingChanges looks at every key a
// write command names before and after it runs (under the same stripes) and
// raises, for each key that changed, the events of the command's rule. The
// same comparison feeds client tracking (every changed key is invalidated)
// while any client tracks. One
// table instead of a call in every handler: a handler cannot forget its
// event, and with notifications off (the default) nothing here runs. The
// cost with them on is two lookups per key argument of a write.
#include <initializer_list>
#include <string>
#include <unordered_map>

#include "protocol/key_events.h"
#include "protocol/resp/types/collections.h"
#include "protocol/resp/core/command_table.h"
#include "protocol/resp/types/keyspace.h"
#include "protocol/resp/core/resp_parser.h"
#include "protocol/resp/services/key_event_rules.h"

namespace trove::resp {
namespace {

using namespace trove::protocol;  // NOLINT: the kKeClass* names

enum class Rule : uint8_t {
  kNone,
  kWrite,     // every changed key: the event (a key left empty also gets del)
  kDstStore,  // the first key (destination): the event, or del if left empty
  kDstAfterFirst,  // kDstStore for destinations named after the source (GEORADIUS STORE)
  kDelLike,   // every distinct key that went away: the event
  kSet,       // set (+ expire with an expiry option), del if deleted
  kExpire,    // expire, del if the new expiry is past
  kGetex,     // expire or persist, del if past
  kRename,    // rename_from, rename_to
  kLmove,     // lpop/rpop on the source, lpush/rpush on the destination
  kLmpop,     // lpop/rpop by direction
  kZmpop,     // zpopmin/zpopmax by direction
  kSmove,     // srem on the source, sadd on the destination
  kZadd,      // zadd, or zincr with INCR
  kSortStore, // the last key (SORT's STORE destination): the event, or del if left empty
};

struct EventRule {
  Rule rule = Rule::kNone;
  uint32_t cls = 0;
  const char* event = nullptr;
};

const std::unordered_map<std::string_view, EventRule>& RulesByName() {
  static const auto* rules = [] {
    auto* m = new std::unordered_map<std::string_view, EventRule>;
    // Each command of `names` raises `event` (null: its rule picks the event).
    auto add = [m](Rule rule, uint32_t cls, const char* event,
                   std::initializer_list<const char*> names) {
      for (const char* n : names) m->emplace(n, EventRule{rule, cls, event});
    };
    // Each command of `names` raises the event of its own name.
    auto add_own = [m](Rule rule, uint32_t cls, std::initializer_list<const char*> names) {
      for (const char* n : names) m->emplace(n, EventRule{rule, cls, n});
    };
    // generic
    add(Rule::kDelLike, kKeClassGeneric, "del", {"del", "unlink", "getdel"});
    add(Rule::kExpire, kKeClassGeneric, "expire", {"expire", "pexpire", "expireat", "pexpireat"});
    add_own(Rule::kWrite, kKeClassGeneric, {"persist"});
    add(Rule::kRename, kKeClassGeneric, nullptr, {"rename", "renamenx"});
    // strings
    add(Rule::kSet, kKeClassString, "set",
        {"set", "setnx", "setex", "psetex", "getset", "mset", "msetnx"});
    add(Rule::kGetex, kKeClassGeneric, nullptr, {"getex"});
    add_own(Rule::kWrite, kKeClassString, {"append", "setrange", "incrby", "incrbyfloat"});
    add(Rule::kWrite, kKeClassString, "incrby", {"incr", "decr", "decrby"});
    // bitmaps: SETBIT and BITFIELD raise setbit; BITOP set on its
    // destination, or del when an empty result deletes it
    add(Rule::kWrite, kKeClassString, "setbit", {"setbit", "bitfield"});
    add(Rule::kDstStore, kKeClassString, "set", {"bitop"});
    // lists
    add(Rule::kWrite, kKeClassList, "lpush", {"lpush", "lpushx"});
    add(Rule::kWrite, kKeClassList, "rpush", {"rpush", "rpushx"});
    add_own(Rule::kWrite, kKeClassList, {"lpop", "rpop", "lset", "linsert", "lrem", "ltrim"});
    add(Rule::kLmove, kKeClassList, nullptr, {"lmove", "rpoplpush"});
    add(Rule::kLmpop, kKeClassList, nullptr, {"lmpop"});
    // hashes
    add(Rule::kWrite, kKeClassHash, "hset", {"hset", "hsetnx", "hmset"});
    add_own(Rule::kWrite, kKeClassHash, {"hdel", "hincrby", "hincrbyfloat"});
    // sets
    add_own(Rule::kWrite, kKeClassSet, {"sadd", "srem", "spop"});
    add(Rule::kSmove, kKeClassSet, nullptr, {"smove"});
    add_own(Rule::kDstStore, kKeClassSet, {"sinterstore", "sunionstore", "sdiffstore"});
    // sorted sets
    add_own(Rule::kZadd, kKeClassZset, {"zadd"});
    add(Rule::kWrite, kKeClassZset, "zincr", {"zincrby"});
    add_own(Rule::kWrite, kKeClassZset, {"zrem", "zpopmin", "zpopmax"});
    add_own(Rule::kWrite, kKeClassZset, {"zremrangebyrank", "zremrangebyscore", "zremrangebylex"});
    add(Rule::kZmpop, kKeClassZset, nullptr, {"zmpop"});
    add_own(Rule::kDstStore, kKeClassZset,
            {"zrangestore", "zunionstore", "zinterstore", "zdiffstore"});
    // SORT ... STORE: sortstore (a list event) on the destination
    add(Rule::kSortStore, kKeClassList, "sortstore", {"sort"});
    // geo: GEOADD is a ZADD; the STORE forms raise their own event on the
    // destination (GEORADIUS's follow its source, after STORE/STOREDIST)
    add(Rule::kWrite, kKeClassZset, "zadd", {"geoadd"});
    add_own(Rule::kDstStore, kKeClassZset, {"geosearchstore"});
    add(Rule::kDstAfterFirst, kKeClassZset, "georadiusstore",
        {"georadius", "georadiusbymember"});
    return m;
  }();
  return *rules;
}

// Indexed by CommandSpec::id, built once.
const EventRule& RuleOf(const CommandSpec& spec) {
  static const std::vector<EventRule>* rules = [] {
    const auto& by_name = RulesByName();
    auto* v = new std::vector<EventRule>(CommandTable::Get().size());
    for (const CommandSpec& s : CommandTable::Get().all()) {
      auto it = by_name.find(s.name);
      if (it != by_name.end()) (*v)[static_cast<size_t>(s.id)] = it->second;
    }
    return v;
  }();
  return (*rules)[static_cast<size_t>(spec.id)];
}

bool HasArg(std::span<const std::string_view> argv, size_t from, std::string_view word) {
  for (size_t i = from; i < argv.size(); ++i) {
    if (EqualsIgnoreCase(argv[i], word)) return true;
  }
  return false;
}

bool HasExpiryOption(std::span<const std::string_view> argv, size_t from) {
  return HasArg(argv, from, "ex") || HasArg(argv, from, "px") || HasArg(argv, from, "exat") ||
         HasArg(argv, from, "pxat");
}

// Appends to ctx.fx the events of ctx's command rule, from each key's
// version before and after it ran.
void AddCommandEvents(CommandContext& ctx, std::span<const size_t> idx,
                      std::span<const std::string_view> keys, std::span<const KeyVersion> before,
                      std::span<const KeyVersion> after);

}  // namespace

void RunRecordingChanges(CommandContext& ctx, std::span<const size_t> idx,
                         std::span<const std::string_view> keys, KeyChangeBuffers* buf) {
  const CommandSpec& spec = *ctx.spec;
  const bool write = (spec.flags & kCmdWrite) != 0;
  // Client tracking wants every key a write changed; notifications only the
  // commands with a rule.
  const bool track = write && (ctx.notify & protocol::kKeTracking) != 0;
  const bool events = write && (ctx.notify & ~protocol::kKeTracking) != 0 &&
                      RuleOf(spec).rule != Rule::kNone;
  if (!track && !events) {
    spec.fn(ctx);
    return;
  }
  std::vector<KeyVersion> before = std::move(buf->before);
  before.clear();
  for (std::string_view k : keys) before.push_back(KeyVersionLocked(ctx, k));
  spec.fn(ctx);
  std::vector<KeyVersion> after = std::move(buf->after);
  after.clear();
  for (std::string_view k : keys) after.push_back(KeyVersionLocked(ctx, k));
  if (track) {
    for (size_t j = 0; j < keys.size(); ++j) {
      if (before[j] != after[j]) ctx.fx->AddInvalidation(keys[j]);
    }
  }
  if (events) AddCommandEvents(ctx, idx, keys, before, after);
  buf->before = std::move(before);
  buf->after = std::move(after);
}

namespace {

void AddCommandEvents(CommandContext& ctx, std::span<const size_t> idx,
                      std::span<const std::string_view> keys, std::span<const KeyVersion> before,
                      std::span<const KeyVersion> after) {
  const EventRule& r = RuleOf(*ctx.spec);
  const uint32_t on = ctx.notify;
  std::span<const std::string_view> argv = ctx.argv;
  // A key is reported once even if named twice (DEL a a), except where Redis
  // raises one event per argument (MSET a 1 a 2, LMOVE k k: both sides).
  auto first_of = [&](size_t j) {
    for (size_t i = 0; i < j; ++i) {
      if (keys[i] == keys[j]) return false;
    }
    return true;
  };
  auto queue = [&](uint32_t cls, const char* event, size_t j) {
    if ((on & cls) != 0) ctx.fx->AddKeyEvent(cls, event, keys[j]);
  };
  auto del_if_gone = [&](size_t j) {
    if (before[j].present() && !after[j].present()) queue(kKeClassGeneric, "del", j);
  };
  // n: Redis raises "new" where the key is added (dbAdd), before the
  // command's own event.
  if (on & kKeClassNew) {
    for (size_t j = 0; j < keys.size(); ++j) {
      if (!before[j].present() && after[j].present() && first_of(j)) queue(kKeClassNew, "new", j);
    }
  }
  auto changed = [&](size_t j) { return before[j] != after[j]; };
  switch (r.rule) {
    case Rule::kNone:
      return;
    case Rule::kWrite:
      for (size_t j = 0; j < keys.size(); ++j) {
        if (!changed(j)) continue;
        queue(r.cls, r.event, j);
        del_if_gone(j);
      }
      return;
    case Rule::kDstStore:
      if (keys.empty() || !changed(0)) return;
      if (after[0].present()) {
        queue(r.cls, r.event, 0);
      } else {
        del_if_gone(0);
      }
      return;
    case Rule::kSortStore: {
      // Without STORE SORT names one key and changes nothing; with it the
      // destination is the last key (the first may be the same key).
      if (keys.size() < 2) return;
      const size_t d = keys.size() - 1;
      if (!changed(d)) return;
      if (after[d].present()) {
        queue(r.cls, r.event, d);
      } else {
        del_if_gone(d);
      }
      return;
    }
    case Rule::kDstAfterFirst:
      // Only the destination stored into changes; a key named twice (STORE
      // d STOREDIST d) is reported once, the source (STORE into itself) too.
      for (size_t j = 1; j < keys.size(); ++j) {
        bool again = false;
        for (size_t i = 1; i < j; ++i) again = again || keys[i] == keys[j];
        if (again || !changed(j)) continue;
        if (after[j].present()) {
          queue(r.cls, r.event, j);
        } else {
          del_if_gone(j);
        }
      }
      return;
    case Rule::kDelLike:
      for (size_t j = 0; j < keys.size(); ++j) {
        if (before[j].present() && !after[j].present() && first_of(j)) queue(r.cls, r.event, j);
      }
      return;
    case Rule::kSet: {
      const std::string_view name = ctx.spec->name;
      const bool with_expiry =
          name == "setex" || name == "psetex" || (name == "set" && HasExpiryOption(argv, 3));
      for (size_t j = 0; j < keys.size(); ++j) {
        if (!changed(j)) continue;
        if (!after[j].present()) {
          del_if_gone(j);  // SET ... EXAT in the past
          continue;
        }
        queue(r.cls, r.event, j);
        if (with_expiry) queue(kKeClassGeneric, "expire", j);
      }
      return;
    }
    case Rule::kExpire:
    case Rule::kGetex: {
      if (keys.empty() || !changed(0)) return;
      if (!after[0].present()) {
        del_if_gone(0);
        return;
      }
      const char* ev = r.event;
      if (r.rule == Rule::kGetex) ev = HasArg(argv, 2, "persist") ? "persist" : "expire";
      queue(kKeClassGeneric, ev, 0);
      return;
    }
    case Rule::kRename:
      if (keys.size() == 2 && keys[0] != keys[1] && changed(1)) {
        queue(kKeClassGeneric, "rename_from", 0);
        queue(kKeClassGeneric, "rename_to", 1);
      }
      return;
    case Rule::kLmove: {
      if (keys.size() != 2 || !changed(0)) return;
      const bool rpoplpush = std::string_view(ctx.spec->name) == "rpoplpush";
      const bool from_left = !rpoplpush && EqualsIgnoreCase(argv[3], "left");
      const bool to_left = rpoplpush || EqualsIgnoreCase(argv[4], "left");
      // Redis pushes (and reports the push) before it reports the pop.
      queue(kKeClassList, to_left ? "lpush" : "rpush", 1);
      queue(kKeClassList, from_left ? "lpop" : "rpop", 0);
      del_if_gone(0);
      return;
    }
    case Rule::kLmpop:
    case Rule::kZmpop: {
      if (idx.empty()) return;
      const size_t where = idx.back() + 1;
      if (where >= argv.size()) return;
      const bool first = EqualsIgnoreCase(argv[where], r.rule == Rule::kLmpop ? "left" : "min");
      const char* ev = r.rule == Rule::kLmpop ? (first ? "lpop" : "rpop")
                                             : (first ? "zpopmin" : "zpopmax");
      for (size_t j = 0; j < keys.size(); ++j) {
        if (!changed(j) || !first_of(j)) continue;
        queue(r.cls, ev, j);
        del_if_gone(j);
      }
      return;
    }
    case Rule::kSmove:
      if (keys.size() != 2 || keys[0] == keys[1] || !changed(0)) return;
      queue(kKeClassSet, "srem", 0);
      del_if_gone(0);
      if (changed(1)) queue(kKeClassSet, "sadd", 1);
      return;
    case Rule::kZadd: {
      if (keys.empty() || !changed(0)) return;
      bool incr = false;
      for (size_t i = 2; i < argv.size(); ++i) {  // the options before the first score
        std::string_view o = argv[i];
        if (EqualsIgnoreCase(o, "incr")) {
          incr = true;
        } else if (!EqualsIgnoreCase(o, "nx") && !EqualsIgnoreCase(o, "xx") &&
                   !EqualsIgnoreCase(o, "gt") && !EqualsIgnoreCase(o, "lt") &&
                   !EqualsIgnoreCase(o, "ch")) {
          break;
        }
      }
      queue(kKeClassZset, incr ? "zincr" : "zadd", 0);
      return;
    }
  }
}

}  // namespace

}  // namespace trove::resp
