// COMMAND GETKEYS and GETKEYSANDFLAGS: a command's keys, with the flags
// Redis 7's key specs give them (kKeyFlagGroups). Runs on the connection's
// worker.
#include <algorithm>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/resp/commands/command_internal.h"
#include "protocol/resp/commands/server_commands.h"
#include "protocol/resp/core/command_table.h"
#include "protocol/resp/core/resp_parser.h"
#include "protocol/resp/services/latency_histogram.h"

namespace trove::resp {
namespace {

// The flags Redis 7's key specs give the keys of Trove's commands (COMMAND
// GETKEYSANDFLAGS), one group per set of flags, each with its commands.
struct KeyFlagGroup {
  std::string_view flags;
  std::string_view commands;  // space-separated
};
constexpr KeyFlagGroup kKeyFlagGroups[] = {
    {"RO access",
     "bitcount bitfield_ro bitpos dump expiretime get getbit getrange hexpiretime hget hgetall "
     "hkeys hmget hpexpiretime hpttl hrandfield hscan httl hvals lcs lindex lpos lrange mget "
     "pexpiretime pttl sdiff sinter sintercard "
     "smembers smismember srandmember sscan substr sunion ttl zcount zdiff zinter zintercard "
     "zlexcount zmscore zrandmember zrange zrangebylex zrangebyscore zrank zrevrange "
     "zrevrangebylex zrevrangebyscore zrevrank zscan zscore zunion sort_ro "
     "geodist geohash geopos georadius_ro georadiusbymember_ro geosearch"},
    {"RO access", "eval_ro evalsha_ro"},
    {"RW access update", "eval evalsha"},
    {"RO", "exists hexists hlen hstrlen llen scard sismember strlen touch type watch zcard"},
    {"RM delete", "del unlink"},
    {"RW access delete",
     "blmpop blpop brpop bzmpop bzpopmax bzpopmin getdel lmpop lpop rpop spop zmpop zpopmax "
     "zpopmin"},
    {"RW access update",
     "bitfield decr decrby getex getset hincrby hincrbyfloat incr incrby incrbyfloat move setbit "
     "zincrby"},
    {"RW update",
     "expire expireat hexpire hexpireat hmset hpersist hpexpire hpexpireat hset lset persist "
     "pexpire pexpireat setrange zadd geoadd"},
    {"RW insert", "append hsetnx linsert lpush lpushx rpush rpushx sadd pfadd"},
    // PFCOUNT may rewrite its keys' cached cardinality: RW though read-only.
    {"RW access", "pfcount pfdebug"},
    {"RW delete", "hdel lrem ltrim srem zrem zremrangebylex zremrangebyrank zremrangebyscore"},
    {"OW update", "mset psetex restore setex"},
    {"OW insert", "msetnx setnx"},
    // Shard channels sit where keys would (for cluster routing): no keys.
    {"not_key", "spublish ssubscribe sunsubscribe"}};
// Commands with two key specs: the first key has `first`, every other key `rest`.
struct TwoSpecFlags {
  std::string_view command, first, rest;
};
constexpr TwoSpecFlags kTwoSpecFlags[] = {
    {"blmove", "RW access delete", "RW insert"},   {"brpoplpush", "RW access delete", "RW insert"},
    {"lmove", "RW access delete", "RW insert"},    {"rpoplpush", "RW access delete", "RW insert"},
    {"smove", "RW access delete", "RW insert"},    {"rename", "RW access delete", "OW update"},
    {"renamenx", "RW access delete", "OW insert"}, {"copy", "RO access", "OW update"},
    {"sinterstore", "RW update", "RO access"},     {"sdiffstore", "OW update", "RO access"},
    {"sunionstore", "OW update", "RO access"},     {"zdiffstore", "OW update", "RO access"},
    {"zinterstore", "OW update", "RO access"},     {"zunionstore", "OW update", "RO access"},
    {"zrangestore", "OW update", "RO access"},     {"bitop", "OW update", "RO access"},
    {"sort", "RO access", "OW update"},
    {"georadius", "RO access", "OW update"},       {"georadiusbymember", "RO access", "OW update"},
    {"geosearchstore", "OW update", "RO access"},
    {"pfmerge", "RW access insert", "RO access"}};

bool HasWord(std::string_view list, std::string_view word) {
  while (!list.empty()) {
    const size_t sp = list.find(' ');
    if (list.substr(0, sp) == word) return true;
    if (sp == std::string_view::npos) break;
    list.remove_prefix(sp + 1);
  }
  return false;
}

struct KeyFlags {
  std::string_view first;  // flags of the first key
  std::string_view rest;   // flags of the others
  bool not_key = false;
};

// Per command id, built once. A command missing from the tables gets what
// Redis assumes of a script's keys: RW access update, or RO access if it
// only reads.
const std::vector<KeyFlags>& KeyFlagsById() {
  static const std::vector<KeyFlags>* flags = [] {
    auto* v = new std::vector<KeyFlags>();
    for (const CommandSpec& s : CommandTable::Get().all()) {
      KeyFlags f;
      f.first = (s.flags & kCmdWrite) != 0 ? "RW access update" : "RO access";
      for (const KeyFlagGroup& g : kKeyFlagGroups)
        if (HasWord(g.commands, s.name)) f.first = g.flags;
      for (const TwoSpecFlags& t : kTwoSpecFlags) {
        if (t.command == s.name) {
          f.first = t.first;
          f.rest = t.rest;
        }
      }
      f.not_key = f.first == "not_key";
      if (f.rest.empty()) f.rest = f.first;
      v->push_back(f);
    }
    return v;
  }();
  return *flags;
}

// A command whose keys follow a count (ZUNIONSTORE d 2 a b; KeyCountAt):
// Redis refuses the call when the count is not a positive integer or names
// more keys than there are arguments.
bool KeyCountValid(const CommandSpec& s, std::span<const std::string_view> args) {
  const int at = KeyCountAt(s);
  if (at < 0) return true;
  const auto pos = static_cast<size_t>(at);
  int64_t n;
  return pos < args.size() && ParseStrictInt64(args[pos], &n) && n > 0 &&
         static_cast<uint64_t>(n) < args.size() - pos;
}

void WriteKeyFlags(CommandContext& ctx, std::string_view flags) {
  ctx.w->SetHeader(static_cast<size_t>(std::count(flags.begin(), flags.end(), ' ')) + 1);
  while (true) {
    const size_t sp = flags.find(' ');
    ctx.w->Simple(flags.substr(0, sp));
    if (sp == std::string_view::npos) return;
    flags.remove_prefix(sp + 1);
  }
}

}  // namespace

// COMMAND GETKEYS|GETKEYSANDFLAGS <command> [arg ...], with Redis's checks in
// its order: the command (or container and subcommand) exists, has keys,
// has a valid number of arguments, and names its keys.
void GetKeys(CommandContext& ctx, bool with_flags) {
  if (ctx.argc() < 3) {
    SubArity(ctx);
    return;
  }
  const std::span<const std::string_view> args = ctx.argv.subspan(2);
  const CommandSpec* s = CommandTable::Get().Find(args[0]);
  const int slot = s == nullptr ? -1 : HistogramSlots::Get().SlotOf(*s, args);
  if (slot < 0) {
    ctx.Error("ERR Invalid command specified");
    return;
  }
  const bool sub = slot != s->id;
  const CmdView v = sub ? ViewOfSub(static_cast<size_t>(slot)) : ViewOf(*s);
  const KeyFlags& kf = KeyFlagsById()[static_cast<size_t>(s->id)];
  const bool has_keys =
      sub ? v.first_key > 0 : (s->first_key > 0 || s->keys != nullptr) && !kf.not_key;
  if (!has_keys) {
    ctx.Error("ERR The command has no key arguments");
    return;
  }
  const int argc = static_cast<int>(args.size());
  if ((v.arity > 0 && argc != v.arity) || argc < -v.arity) {
    ctx.Error("ERR Invalid number of arguments specified for command");
    return;
  }
  std::vector<size_t> idx;
  if (sub) {
    idx.push_back(static_cast<size_t>(v.first_key));
  } else {
    CommandTable::KeyIndexes(*s, args, &idx);
    if (!KeyCountValid(*s, args)) idx.clear();
  }
  if (idx.empty()) {
    ctx.Error("ERR Invalid arguments specified for command");
    return;
  }
  std::string_view first = sub ? "RO" : kf.first, rest = kf.rest;
  if (!sub && std::string_view(s->name) == "set") {
    // SET's flags vary: it reads the old value only with GET.
    first = "OW update";
    for (size_t i = 3; i < args.size(); ++i)
      if (EqualsIgnoreCase(args[i], "get")) first = "RW access update";
  }
  if (!sub && std::string_view(s->name) == "bitfield")  // GETs only: a read
    first = BitfieldReadOnly(args) ? "RO access" : "RW access update";
  ctx.w->ArrayHeader(idx.size());
  for (size_t j = 0; j < idx.size(); ++j) {
    if (!with_flags) {
      ctx.w->Bulk(args[idx[j]]);
      continue;
    }
    ctx.w->ArrayHeader(2);
    ctx.w->Bulk(args[idx[j]]);
    WriteKeyFlags(ctx, j == 0 ? first : rest);
  }
}

}  // namespace trove::resp
