// Sorted-set commands; run on the connection's worker with the keys' stripes
// held.
#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include "common/str_append.h"
#include "protocol/resp/commands/blocking_ops.h"
#include "protocol/resp/commands/collection_commands.h"
#include "protocol/resp/commands/random_pick.h"
#include "protocol/resp/core/command_table.h"
#include "protocol/resp/core/resp_parser.h"
#include "protocol/resp/core/resp_server.h"
#include "protocol/resp/core/scan_util.h"
#include "protocol/resp/types/collections.h"
#include "protocol/resp/types/keyspace.h"
#include "protocol/resp/types/zset_common.h"

namespace trove::resp {
namespace {

void CmdZAdd(CommandContext& ctx) {
  UpdateConds conds;
  bool ch = false, incr = false;
  size_t i = 2;
  for (; i < ctx.argc(); ++i) {
    std::string_view o = ctx.argv[i];
    if (conds.Take(o)) continue;
    if (EqualsIgnoreCase(o, "ch"))
      ch = true;
    else if (EqualsIgnoreCase(o, "incr"))
      incr = true;
    else
      break;
  }
  const auto [nx, xx, gt, lt] = conds;
  size_t pairs_n = ctx.argc() - i;
  if (pairs_n == 0 || pairs_n % 2 != 0) {
    ctx.SyntaxError();
    return;
  }
  if (nx && xx) {
    ctx.Error("ERR XX and NX options at the same time are not compatible");
    return;
  }
  if ((gt && nx) || (lt && nx) || (gt && lt)) {
    ctx.Error("ERR GT, LT, and/or NX options at the same time are not compatible");
    return;
  }
  if (incr && pairs_n > 2) {
    ctx.Error("ERR INCR option supports a single increment-element pair");
    return;
  }
  std::vector<double> scores;
  for (size_t k = i; k < ctx.argc(); k += 2) {
    double d;
    if (!ArgDouble(ctx, ctx.argv[k], &d)) return;
    scores.push_back(d);
  }
  std::string key = ctx.Key(1);
  ZsetValue* v;
  if (!ReadCollection(ctx, key, &v)) return;
  if (v == nullptr) {
    if (xx) {
      if (incr)
        ctx.w->Null();
      else
        ctx.w->Integer(0);
      return;
    }
    v = LoadOrCreate<ZsetValue>(ctx, key);
    if (v == nullptr) return;
  }
  size_t before = v->MemoryUsage();
  int64_t added = 0, changed = 0;
  bool aborted = false;
  double result = 0;
  for (size_t k = 0; k < scores.size(); ++k) {
    std::string_view m = ctx.argv[i + 2 * k + 1];
    double s = scores[k];
    const double* cur = v->Score(m);
    if (cur != nullptr) {
      if (nx) {
        aborted = true;
        continue;
      }
      if (incr) {
        s = *cur + s;
        if (std::isnan(s)) {
          FinishUpdate(ctx, key, v, before);
          ctx.Error("ERR resulting score is not a number (NaN)");
          return;
        }
      }
      if ((gt && s <= *cur) || (lt && s >= *cur)) {
        aborted = true;
        continue;
      }
      if (s != *cur) {
        v->Put(m, s);
        ++changed;
      }
      result = s;
    } else {
      if (xx) {
        aborted = true;
        continue;
      }
      v->Put(m, s);
      ++added;
      result = s;
    }
  }
  // Nothing added or changed: the key is untouched (no event, no WATCH hit).
  if (added > 0 || changed > 0) FinishZset(ctx, key, v, before);
  if (incr) {
    if (aborted)
      ctx.w->Null();
    else
      ctx.w->Double(result);
  } else {
    ctx.w->Integer(ch ? added + changed : added);
  }
}

void CmdZIncrBy(CommandContext& ctx) {
  double d;
  if (!ArgDouble(ctx, ctx.argv[2], &d)) return;
  std::string key = ctx.Key(1);
  ZsetValue* v = LoadOrCreate<ZsetValue>(ctx, key);
  if (v == nullptr) return;
  size_t before = v->MemoryUsage();
  const double* cur = v->Score(ctx.argv[3]);
  double s = (cur ? *cur : 0) + d;
  if (std::isnan(s)) {
    FinishUpdate(ctx, key, v, before);
    ctx.Error("ERR resulting score is not a number (NaN)");
    return;
  }
  v->Put(ctx.argv[3], s);
  FinishZset(ctx, key, v, before);
  ctx.w->Double(s);
}

void CmdZRem(CommandContext& ctx) { RemoveMembers<ZsetValue, &ZsetValue::Remove>(ctx); }

// A member's score, or Null when it (or the key) is missing.
void ReplyScore(CommandContext& ctx, const ZsetValue* v, std::string_view member) {
  const double* s = v ? v->Score(member) : nullptr;
  if (s == nullptr)
    ctx.w->Null();
  else
    ctx.w->Double(*s);
}

void CmdZScore(CommandContext& ctx) { ReplyPerMember<ZsetValue, ReplyScore>(ctx, false); }
void CmdZMScore(CommandContext& ctx) { ReplyPerMember<ZsetValue, ReplyScore>(ctx, true); }

void CmdZCard(CommandContext& ctx) {
  ZsetValue* v;
  if (!ReadCollection(ctx, ctx.Key(1), &v)) return;
  ctx.w->Integer(v ? static_cast<int64_t>(v->size()) : 0);
}

// Pops up to count entries from one end.
std::vector<Entry> PopEntries(ZsetValue* v, bool max, size_t count) {
  std::vector<Entry> out;
  while (out.size() < count && v->size() > 0) {
    Entry e = max ? *v->ordered().rbegin() : *v->ordered().begin();
    v->Remove(e.second);
    out.push_back(std::move(e));
  }
  return out;
}

void PopGeneric(CommandContext& ctx, bool max) {
  int64_t count = 1;
  bool has_count = ctx.argc() == 3;
  if (!ParsePopCount(ctx, &CommandContext::SyntaxError, &count)) return;
  std::string key = ctx.Key(1);
  ZsetValue* v;
  if (!ReadExisting(ctx, key, &v, [&] { ctx.w->ArrayHeader(0); })) return;
  size_t before = v->MemoryUsage();
  std::vector<Entry> out = PopEntries(v, max, static_cast<size_t>(count));
  FinishUpdate(ctx, key, v, before);
  if (has_count) {
    WriteEntries(ctx, out, true);
  } else {
    ctx.w->ArrayHeader(out.size() * 2);
    for (const auto& e : out) {
      ctx.w->Bulk(e.second);
      ctx.w->Double(e.first);
    }
  }
}
void CmdZPopMin(CommandContext& ctx) { PopGeneric(ctx, false); }
void CmdZPopMax(CommandContext& ctx) { PopGeneric(ctx, true); }

}  // namespace

bool ZsetMPop(CommandContext& ctx) {
  return PopFromFirstNonEmpty<ZsetValue>(ctx, "min", "max", [&](ZsetValue* v, bool min, size_t n) {
    std::vector<Entry> out = PopEntries(v, /*max=*/!min, n);
    ctx.w->ArrayHeader(out.size());
    for (const auto& e : out) {
      ctx.w->ArrayHeader(2);
      ctx.w->Bulk(e.second);
      ctx.w->Double(e.first);
    }
  });
}

namespace {
void CmdZMPop(CommandContext& ctx) {
  if (!ZsetMPop(ctx)) ctx.w->NullArray();
}

void CmdZRandMember(CommandContext& ctx) {
  bool has_count, withscores;
  int64_t count = 1;
  ZsetValue* v;
  if (!ReadRandomSource(ctx, "withscores", &has_count, &count, &withscores, &v)) return;
  std::vector<Entry> all(v->ordered().begin(), v->ordered().end());
  if (!has_count) {
    ctx.w->Bulk(all[CommandRng()() % all.size()].second);
    return;
  }
  std::vector<Entry> pick;
  if (!PickRandom(ctx, std::move(all), count, &pick)) return;
  WriteEntries(ctx, pick, withscores);
}

void CmdZScan(CommandContext& ctx) {
  ScanOptions o;
  if (!ParseScanArgs(ctx, 2, &o)) return;
  ZsetValue* v;
  if (!ReadCollection(ctx, ctx.Key(1), &v)) return;
  std::vector<Entry> out;
  uint64_t next = 0;
  if (v != nullptr && v->compact()) {
    for (const auto& e : v->ordered()) {
      if (!o.has_pattern || GlobMatch(o.pattern, e.second)) out.push_back(e);
    }
  } else if (v != nullptr) {
    next = ScanLargeCollection(
        *v, o, [&](const ScanOrder::Ref& r) { out.emplace_back(r.score, r.member); });
  }
  WriteScanReply(ctx, next, out, 2, [&](const Entry& e) {
    ctx.w->Bulk(e.second);
    ctx.w->Bulk(FormatDouble(e.first));
  });
}

}  // namespace

void RegisterZsetCommands(std::vector<CommandSpec>* t) {
  const uint32_t w = kCmdWrite | kCmdDenyOom;
  const uint32_t r = kCmdReadonly;
  const CommandAdder add{t, "sorted-set"};
  add("zadd", -4, w | kCmdFast, 1, 1, CmdZAdd,
      "Adds one or more members to a sorted set, or updates their scores. Creates the key if it "
      "doesn't exist.",
      "1.2.0");
  add("zincrby", 4, w | kCmdFast, 1, 1, CmdZIncrBy,
      "Increments the score of a member in a sorted set.", "1.2.0");
  add("zrem", -3, kCmdWrite | kCmdFast, 1, 1, CmdZRem,
      "Removes one or more members from a sorted set. Deletes the sorted set if all members were "
      "removed.",
      "1.2.0");
  add("zscore", 3, r | kCmdFast, 1, 1, CmdZScore, "Returns the score of a member in a sorted set.",
      "1.2.0");
  add("zmscore", -3, r | kCmdFast, 1, 1, CmdZMScore,
      "Returns the score of one or more members in a sorted set.", "6.2.0");
  add("zcard", 2, r | kCmdFast, 1, 1, CmdZCard, "Returns the number of members in a sorted set.",
      "1.2.0");
  add("zcount", 4, r | kCmdFast, 1, 1, CmdZCount,
      "Returns the count of members in a sorted set that have scores within a range.", "2.0.0");
  add("zlexcount", 4, r | kCmdFast, 1, 1, CmdZLexCount,
      "Returns the number of members in a sorted set within a lexicographical range.", "2.8.9");
  add("zrange", -4, r, 1, 1, CmdZRange,
      "Returns members in a sorted set within a range of indexes.", "1.2.0");
  add("zrangebyscore", -4, r, 1, 1, CmdZRangeByScore,
      "Returns members in a sorted set within a range of scores.", "1.0.5");
  add("zrevrangebyscore", -4, r, 1, 1, CmdZRevRangeByScore,
      "Returns members in a sorted set within a range of scores in reverse order.", "2.2.0");
  add("zrangebylex", -4, r, 1, 1, CmdZRangeByLex,
      "Returns members in a sorted set within a lexicographical range.", "2.8.9");
  add("zrevrangebylex", -4, r, 1, 1, CmdZRevRangeByLex,
      "Returns members in a sorted set within a lexicographical range in reverse order.", "2.8.9");
  add("zrevrange", -4, r, 1, 1, CmdZRevRange,
      "Returns members in a sorted set within a range of indexes in reverse order.", "1.2.0");
  add("zrangestore", -5, w, 1, 2, CmdZRangeStore,
      "Stores a range of members from sorted set in a key.", "6.2.0");
  add("zrank", -3, r | kCmdFast, 1, 1, CmdZRank,
      "Returns the index of a member in a sorted set ordered by ascending scores.", "2.0.0");
  add("zrevrank", -3, r | kCmdFast, 1, 1, CmdZRevRank,
      "Returns the index of a member in a sorted set ordered by descending scores.", "2.0.0");
  add("zpopmin", -2, kCmdWrite | kCmdFast, 1, 1, CmdZPopMin,
      "Returns the lowest-scoring members from a sorted set after removing them. Deletes the "
      "sorted set if the last member was popped.",
      "5.0.0");
  add("zpopmax", -2, kCmdWrite | kCmdFast, 1, 1, CmdZPopMax,
      "Returns the highest-scoring members from a sorted set after removing them. Deletes the "
      "sorted set if the last member was popped.",
      "5.0.0");
  add("zmpop", -4, kCmdWrite, 0, 0, CmdZMPop,
      "Returns the highest- or lowest-scoring members from one or more sorted sets after removing "
      "them. Deletes the sorted set if the last member was popped.",
      "7.0.0", NumKeysAt1);
  add("zrandmember", -2, r, 1, 1, CmdZRandMember,
      "Returns one or more random members from a sorted set.", "6.2.0");
  RegisterZsetSetOpCommands(t);  // commands/zsets_setops.cc, in table order
  add("zremrangebyrank", 4, kCmdWrite, 1, 1, CmdZRemRangeByRank,
      "Removes members in a sorted set within a range of indexes. Deletes the sorted set if all "
      "members were removed.",
      "2.0.0");
  add("zremrangebyscore", 4, kCmdWrite, 1, 1, CmdZRemRangeByScore,
      "Removes members in a sorted set within a range of scores. Deletes the sorted set if all "
      "members were removed.",
      "1.2.0");
  add("zremrangebylex", 4, kCmdWrite, 1, 1, CmdZRemRangeByLex,
      "Removes members in a sorted set within a lexicographical range. Deletes the sorted set if "
      "all members were removed.",
      "2.8.9");
  add("zscan", -3, r, 1, 1, CmdZScan, "Iterates over members and scores of a sorted set.", "2.0.0");
}

}  // namespace trove::resp
