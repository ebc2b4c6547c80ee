// Sorted-set algebra: ZUNION, ZINTER, ZDIFF, their STORE forms and
// ZINTERCARD; run on the connection's worker with the keys' stripes held.
#include <algorithm>
#include <cmath>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/str_append.h"
#include "protocol/resp/core/command_table.h"
#include "protocol/resp/core/resp_parser.h"
#include "protocol/resp/core/resp_server.h"
#include "protocol/resp/types/collections.h"
#include "protocol/resp/types/keyspace.h"
#include "protocol/resp/types/zset_common.h"

namespace trove::resp {
namespace {

enum class Agg { kSum, kMin, kMax };
enum class ZOp { kUnion, kInter, kDiff };
// What the caller does with the result: reply with it (WITHSCORES allowed),
// store it (no WITHSCORES), or count it (ZINTERCARD: LIMIT, no options).
enum class ZOut { kReply, kStore, kCard };

// One input key: a sorted set, a set (every member scores 1, as Redis), or
// nothing (a missing key is an empty input). The collection stays valid for
// the whole command: the stripes are held and nothing is written until the
// result has been copied out.
struct ZInput {
  const ZsetValue* zset = nullptr;
  const SetValue* set = nullptr;
  double weight = 1.0;

  size_t size() const { return zset ? zset->size() : set ? set->size() : 0; }
  // fn(member, score) for every member, in the collection's own order,
  // until fn returns false.
  template <typename Fn>
  void ForEach(Fn&& fn) const {
    if (zset != nullptr) {
      for (const Entry& e : zset->ordered()) {
        if (!fn(std::string_view(e.second), e.first)) return;
      }
    } else if (set != nullptr) {
      for (const std::string& m : set->members()) {
        if (!fn(std::string_view(m), 1.0)) return;
      }
    }
  }
  bool Find(std::string_view m, double* score) const {
    if (zset != nullptr) {
      const double* s = zset->Score(m);
      if (s == nullptr) return false;
      *score = *s;
      return true;
    }
    if (set != nullptr && set->Contains(m)) {
      *score = 1.0;
      return true;
    }
    return false;
  }
};

// Redis's zunionInterAggregate: a SUM that gives NaN (inf + -inf) is 0; MIN
// and MAX keep the target when the value does not compare (NaN).
void Aggregate(Agg agg, double* target, double val) {
  switch (agg) {
    case Agg::kSum:
      *target += val;
      if (std::isnan(*target)) *target = 0.0;
      break;
    case Agg::kMin:
      if (val < *target) *target = val;
      break;
    case Agg::kMax:
      if (val > *target) *target = val;
      break;
  }
}

// The arguments of one call, in Redis's order of checks: numkeys, then the
// keys' types (WRONGTYPE before any option error), then the options.
// False after an error reply.
bool ParseZInputs(CommandContext& ctx, ZOp op, ZOut mode, size_t nk, std::vector<ZInput>* inputs,
                  Agg* agg, bool* withscores, int64_t* limit) {
  int64_t n;
  if (!ArgInt(ctx, ctx.argv[nk], &n)) return false;
  if (n < 1) {
    std::string m = "ERR at least 1 input key is needed for '";
    m += ctx.spec->name;
    m += "' command";
    ctx.Error(m);
    return false;
  }
  if (static_cast<uint64_t>(n) > ctx.argc() - nk - 1) {
    ctx.SyntaxError();
    return false;
  }
  const size_t count = static_cast<size_t>(n);
  const size_t first = nk + 1, end = first + count;
  inputs->assign(count, ZInput{});
  for (size_t i = first; i < end; ++i) {
    CollectionBase* c = nullptr;
    engine::ValueType type = engine::ValueType::kZset;
    LoadStatus st = LoadAnyCollection(ctx, ctx.Key(i), &c, &type);
    if (st == LoadStatus::kWrongType ||
        (st == LoadStatus::kOk && type != engine::ValueType::kZset &&
         type != engine::ValueType::kSet)) {
      ctx.WrongType();
      return false;
    }
    if (st != LoadStatus::kOk) continue;
    ZInput& in = (*inputs)[i - first];
    if (type == engine::ValueType::kZset)
      in.zset = static_cast<const ZsetValue*>(c);
    else
      in.set = static_cast<const SetValue*>(c);
  }
  const bool scored = op != ZOp::kDiff && mode != ZOut::kCard;
  for (size_t i = end; i < ctx.argc();) {
    std::string_view o = ctx.argv[i];
    const size_t remaining = ctx.argc() - i;
    if (scored && remaining >= count + 1 && EqualsIgnoreCase(o, "weights")) {
      for (size_t k = 0; k < count; ++k) {
        if (!ParseDouble(ctx.argv[i + 1 + k], &(*inputs)[k].weight)) {
          ctx.Error("ERR weight value is not a float");
          return false;
        }
      }
      i += count + 1;
    } else if (scored && remaining >= 2 && EqualsIgnoreCase(o, "aggregate")) {
      std::string_view a = ctx.argv[i + 1];
      if (EqualsIgnoreCase(a, "sum")) {
        *agg = Agg::kSum;
      } else if (EqualsIgnoreCase(a, "min")) {
        *agg = Agg::kMin;
      } else if (EqualsIgnoreCase(a, "max")) {
        *agg = Agg::kMax;
      } else {
        ctx.SyntaxError();
        return false;
      }
      i += 2;
    } else if (mode == ZOut::kReply && EqualsIgnoreCase(o, "withscores")) {
      *withscores = true;
      ++i;
    } else if (mode == ZOut::kCard && remaining >= 2 && EqualsIgnoreCase(o, "limit")) {
      if (!ParseStrictInt64(ctx.argv[i + 1], limit) || *limit < 0) {
        ctx.Error("ERR LIMIT can't be negative");
        return false;
      }
      i += 2;
    } else {
      ctx.SyntaxError();
      return false;
    }
  }
  return true;
}

// The union and the intersection visit the inputs from the smallest to the
// largest, as Redis does (stable for equal sizes): the order decides the
// result when a SUM meets inf and -inf, and the intersection walks only the
// smallest input.
void SortBySize(std::vector<ZInput>* inputs) {
  std::stable_sort(inputs->begin(), inputs->end(),
                   [](const ZInput& a, const ZInput& b) { return a.size() < b.size(); });
}

// The intersection: fn(member, score) for each member of every input, until
// fn returns false. The smallest input's weighted score has NaN (0 * inf)
// made 0; the others' weighted scores go to Aggregate as they are (Redis).
template <typename Fn>
void Intersect(const std::vector<ZInput>& in, Agg agg, Fn&& fn) {
  if (in[0].size() == 0) return;
  in[0].ForEach([&](std::string_view m, double s) {
    double score = in[0].weight * s;
    if (std::isnan(score)) score = 0;
    for (size_t j = 1; j < in.size(); ++j) {
      double v;
      if (!in[j].Find(m, &v)) return true;
      Aggregate(agg, &score, v * in[j].weight);
    }
    return fn(m, score);
  });
}

// ZUNION/ZINTER/ZDIFF[STORE]: the result in Redis's order (score, then
// member bytes). numkeys at argv[nk]. False after an error reply.
bool ZCombine(CommandContext& ctx, ZOp op, ZOut mode, size_t nk, bool* withscores,
              std::vector<Entry>* out) {
  std::vector<ZInput> in;
  Agg agg = Agg::kSum;
  int64_t limit = 0;
  if (!ParseZInputs(ctx, op, mode, nk, &in, &agg, withscores, &limit)) return false;
  out->clear();
  if (op == ZOp::kUnion) {
    SortBySize(&in);
    std::unordered_map<std::string_view, double> acc;
    acc.reserve(in.back().size());
    for (const ZInput& src : in) {
      src.ForEach([&](std::string_view m, double s) {
        double score = src.weight * s;
        if (std::isnan(score)) score = 0;
        auto [it, added] = acc.try_emplace(m, score);
        if (!added) Aggregate(agg, &it->second, score);
        return true;
      });
    }
    out->reserve(acc.size());
    for (const auto& [m, s] : acc) out->emplace_back(s, std::string(m));
  } else if (op == ZOp::kInter) {
    SortBySize(&in);
    Intersect(in, agg, [out](std::string_view m, double s) {
      out->emplace_back(s, std::string(m));
      return true;
    });
  } else {
    // Members of the first input found in no other, with the first's scores.
    in[0].ForEach([&](std::string_view m, double s) {
      double unused;
      for (size_t j = 1; j < in.size(); ++j) {
        if (in[j].Find(m, &unused)) return true;
      }
      out->emplace_back(s, std::string(m));
      return true;
    });
  }
  std::sort(out->begin(), out->end());
  return true;
}

void ZOpGeneric(CommandContext& ctx, ZOp op) {
  bool withscores = false;
  std::vector<Entry> out;
  if (!ZCombine(ctx, op, ZOut::kReply, 1, &withscores, &out)) return;
  WriteEntries(ctx, out, withscores);
}
void CmdZUnion(CommandContext& ctx) { ZOpGeneric(ctx, ZOp::kUnion); }
void CmdZInter(CommandContext& ctx) { ZOpGeneric(ctx, ZOp::kInter); }
void CmdZDiff(CommandContext& ctx) { ZOpGeneric(ctx, ZOp::kDiff); }

void ZStoreGeneric(CommandContext& ctx, ZOp op) {
  bool withscores = false;
  std::vector<Entry> out;
  if (!ZCombine(ctx, op, ZOut::kStore, 2, &withscores, &out)) return;
  // The result is copied out of the inputs, so the destination may be one.
  std::string dst = ctx.Key(1);
  const bool had_dst = ctx.engine->UnlinkLocked(dst, ctx.ts);
  ctx.dirty = had_dst || !out.empty() ? 1 : 0;  // Redis: stored, or an old key deleted
  StoreEntries(ctx, dst, out);
}
void CmdZUnionStore(CommandContext& ctx) { ZStoreGeneric(ctx, ZOp::kUnion); }
void CmdZInterStore(CommandContext& ctx) { ZStoreGeneric(ctx, ZOp::kInter); }
void CmdZDiffStore(CommandContext& ctx) { ZStoreGeneric(ctx, ZOp::kDiff); }

// ZINTERCARD counts without building the result and stops at LIMIT.
void CmdZInterCard(CommandContext& ctx) {
  std::vector<ZInput> in;
  Agg agg = Agg::kSum;
  bool withscores = false;
  int64_t limit = 0;
  if (!ParseZInputs(ctx, ZOp::kInter, ZOut::kCard, 1, &in, &agg, &withscores, &limit)) return;
  SortBySize(&in);
  int64_t n = 0;
  Intersect(in, agg, [&n, limit](std::string_view, double) {
    ++n;
    return limit == 0 || n < limit;
  });
  ctx.w->Integer(n);
}

}  // namespace

void RegisterZsetSetOpCommands(std::vector<CommandSpec>* t) {
  const uint32_t w = kCmdWrite | kCmdDenyOom;
  const uint32_t r = kCmdReadonly;
  const CommandAdder add{t, "sorted-set"};
  add("zunion", -3, r, 0, 0, CmdZUnion, "Returns the union of multiple sorted sets.", "6.2.0",
      NumKeysAt1);
  add("zinter", -3, r, 0, 0, CmdZInter, "Returns the intersect of multiple sorted sets.", "6.2.0",
      NumKeysAt1);
  add("zdiff", -3, r, 0, 0, CmdZDiff, "Returns the difference between multiple sorted sets.",
      "6.2.0", NumKeysAt1);
  add("zunionstore", -4, w, 1, 1, CmdZUnionStore,
      "Stores the union of multiple sorted sets in a key.", "2.0.0", DestAndNumKeysAt2);
  add("zinterstore", -4, w, 1, 1, CmdZInterStore,
      "Stores the intersect of multiple sorted sets in a key.", "2.0.0", DestAndNumKeysAt2);
  add("zdiffstore", -4, w, 1, 1, CmdZDiffStore,
      "Stores the difference of multiple input sorted sets in a key.", "6.2.0", DestAndNumKeysAt2);
  add("zintercard", -3, r, 0, 0, CmdZInterCard,
      "Returns the number of members of the intersect of multiple sorted sets.", "7.0.0",
      NumKeysAt1);
}

}  // namespace trove::resp
