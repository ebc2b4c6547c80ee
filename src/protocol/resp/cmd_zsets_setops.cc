// Sorted-set algebra: ZUNION, ZINTER, ZDIFF, their STORE forms and
// ZINTERCARD; run on the connection's worker with the keys' stripes held.
#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include "common/str_append.h"
#include "protocol/resp/collections.h"
#include "protocol/resp/command_table.h"
#include "protocol/resp/keyspace.h"
#include "protocol/resp/resp_parser.h"
#include "protocol/resp/resp_server.h"
#include "protocol/resp/zset_common.h"

namespace trove::resp {
namespace {

enum class Agg { kSum, kMin, kMax };
enum class ZOp { kUnion, kInter, kDiff };

// ZUNION/ZINTER/ZDIFF[STORE] core. numkeys at argv[nk]. Sets count as
// score 1 (as Redis). False after an error reply.
bool ZCombine(CommandContext& ctx, ZOp op, size_t nk, bool allow_withscores, bool* withscores,
              std::vector<Entry>* out) {
  int64_t n;
  if (!ArgInt(ctx, ctx.argv[nk], &n)) return false;
  if (n < 1) {
    std::string m = "ERR at least 1 input key is needed for '";
    m += ctx.spec->name;
    m += "' command";
    ctx.Error(m);
    return false;
  }
  if (static_cast<size_t>(n) > ctx.argc() - nk - 1) {
    ctx.SyntaxError();
    return false;
  }
  size_t first = nk + 1, end = nk + 1 + static_cast<size_t>(n);
  std::vector<double> weights(static_cast<size_t>(n), 1.0);
  Agg agg = Agg::kSum;
  for (size_t i = end; i < ctx.argc(); ++i) {
    std::string_view o = ctx.argv[i];
    if (EqualsIgnoreCase(o, "weights") && op != ZOp::kDiff &&
        i + static_cast<size_t>(n) < ctx.argc()) {
      for (size_t k = 0; k < static_cast<size_t>(n); ++k) {
        if (!ParseDouble(ctx.argv[i + 1 + k], &weights[k])) {
          ctx.Error("ERR weight value is not a float");
          return false;
        }
      }
      i += static_cast<size_t>(n);
    } else if (EqualsIgnoreCase(o, "aggregate") && op != ZOp::kDiff && i + 1 < ctx.argc()) {
      std::string_view a = ctx.argv[++i];
      if (EqualsIgnoreCase(a, "sum"))
        agg = Agg::kSum;
      else if (EqualsIgnoreCase(a, "min"))
        agg = Agg::kMin;
      else if (EqualsIgnoreCase(a, "max"))
        agg = Agg::kMax;
      else {
        ctx.SyntaxError();
        return false;
      }
    } else if (EqualsIgnoreCase(o, "withscores") && allow_withscores) {
      *withscores = true;
    } else {
      ctx.SyntaxError();
      return false;
    }
  }
  std::vector<std::map<std::string, double>> inputs;
  std::vector<bool> present;
  for (size_t i = first; i < end; ++i) {
    CollectionBase* c = nullptr;
    engine::ValueType type = engine::ValueType::kZset;
    LoadStatus st = LoadAnyCollection(ctx, ctx.Key(i), &c, &type);
    std::map<std::string, double> m;
    if (st == LoadStatus::kWrongType ||
        (st == LoadStatus::kOk && type != engine::ValueType::kZset &&
         type != engine::ValueType::kSet)) {
      ctx.WrongType();
      return false;
    }
    if (st == LoadStatus::kOk) {
      if (type == engine::ValueType::kZset) {
        for (const auto& e : static_cast<ZsetValue*>(c)->ordered()) m[e.second] = e.first;
      } else {
        for (const auto& s : static_cast<SetValue*>(c)->members()) m[s] = 1.0;
      }
    }
    present.push_back(st == LoadStatus::kOk);
    inputs.push_back(std::move(m));
  }
  auto combine = [agg](double a, double b) {
    switch (agg) {
      case Agg::kSum: {
        double r = a + b;
        return std::isnan(r) ? 0.0 : r;
      }
      case Agg::kMin:
        return std::min(a, b);
      case Agg::kMax:
        return std::max(a, b);
    }
    return a;
  };
  auto weighted = [](double s, double w) {
    double r = s * w;
    return std::isnan(r) ? 0.0 : r;
  };
  std::map<std::string, double> res;
  if (op == ZOp::kUnion) {
    for (size_t k = 0; k < inputs.size(); ++k) {
      for (const auto& [m, s] : inputs[k]) {
        double ws = weighted(s, weights[k]);
        auto it = res.find(m);
        if (it == res.end())
          res.emplace(m, ws);
        else
          it->second = combine(it->second, ws);
      }
    }
  } else if (op == ZOp::kInter) {
    size_t smallest = 0;
    for (size_t k = 1; k < inputs.size(); ++k)
      if (inputs[k].size() < inputs[smallest].size()) smallest = k;
    for (const auto& [m, s0] : inputs[smallest]) {
      bool all = true;
      for (size_t k = 0; k < inputs.size() && all; ++k) all = inputs[k].count(m) > 0;
      if (!all) continue;
      double acc = weighted(inputs[0].at(m), weights[0]);
      for (size_t k = 1; k < inputs.size(); ++k)
        acc = combine(acc, weighted(inputs[k].at(m), weights[k]));
      res.emplace(m, acc);
    }
  } else {
    for (const auto& [m, s] : inputs[0]) {
      bool keep = true;
      for (size_t k = 1; k < inputs.size() && keep; ++k) keep = inputs[k].count(m) == 0;
      if (keep) res.emplace(m, s);
    }
  }
  out->clear();
  for (const auto& [m, s] : res) out->emplace_back(s, m);
  std::sort(out->begin(), out->end());
  return true;
}

void ZOpGeneric(CommandContext& ctx, ZOp op) {
  bool withscores = false;
  std::vector<Entry> out;
  if (!ZCombine(ctx, op, 1, true, &withscores, &out)) return;
  WriteEntries(ctx, out, withscores);
}
void CmdZUnion(CommandContext& ctx) { ZOpGeneric(ctx, ZOp::kUnion); }
void CmdZInter(CommandContext& ctx) { ZOpGeneric(ctx, ZOp::kInter); }
void CmdZDiff(CommandContext& ctx) { ZOpGeneric(ctx, ZOp::kDiff); }

void ZStoreGeneric(CommandContext& ctx, ZOp op) {
  bool withscores = false;
  std::vector<Entry> out;
  if (!ZCombine(ctx, op, 2, false, &withscores, &out)) return;
  std::string dst = ctx.Key(1);
  ctx.engine->UnlinkLocked(dst, ctx.ts);
  if (!out.empty()) {
    auto z = std::make_unique<ZsetValue>();
    for (const auto& e : out) z->Put(e.second, e.first);
    z->CheckEncoding(ctx.server->zset_max_listpack_entries.load(std::memory_order_relaxed),
                     ctx.server->zset_max_listpack_value.load(std::memory_order_relaxed));
    if (StoreNewCollection(ctx, dst, ZsetValue::kType, std::move(z)) == nullptr) return;
  }
  ctx.w->Integer(static_cast<int64_t>(out.size()));
}
void CmdZUnionStore(CommandContext& ctx) { ZStoreGeneric(ctx, ZOp::kUnion); }
void CmdZInterStore(CommandContext& ctx) { ZStoreGeneric(ctx, ZOp::kInter); }
void CmdZDiffStore(CommandContext& ctx) { ZStoreGeneric(ctx, ZOp::kDiff); }

void CmdZInterCard(CommandContext& ctx) {
  int64_t n;
  if (!ArgInt(ctx, ctx.argv[1], &n)) return;
  if (n <= 0) {
    ctx.Error("ERR at least 1 input key is needed for 'zintercard' command");
    return;
  }
  if (static_cast<size_t>(n) + 2 > ctx.argc()) {
    ctx.SyntaxError();
    return;
  }
  size_t pos = 2 + static_cast<size_t>(n);
  int64_t limit = 0;
  for (size_t i = pos; i < ctx.argc(); ++i) {
    if (EqualsIgnoreCase(ctx.argv[i], "limit") && i + 1 < ctx.argc()) {
      if (!ParseStrictInt64(ctx.argv[++i], &limit) || limit < 0) {
        ctx.Error("ERR LIMIT can't be negative");
        return;
      }
    } else {
      ctx.SyntaxError();
      return;
    }
  }
  // Reuse the intersection over the key arguments only.
  std::vector<std::string_view> sub(ctx.argv.begin(),
                                    ctx.argv.begin() + static_cast<std::ptrdiff_t>(pos));
  CommandContext inner = ctx;
  inner.argv = sub;
  bool ws = false;
  std::vector<Entry> out;
  if (!ZCombine(inner, ZOp::kInter, 1, false, &ws, &out)) return;
  int64_t c = static_cast<int64_t>(out.size());
  if (limit > 0 && c > limit) c = limit;
  ctx.w->Integer(c);
}

}  // namespace

void RegisterZsetSetOpCommands(std::vector<CommandSpec>* t) {
  const uint32_t w = kCmdWrite | kCmdDenyOom;
  const uint32_t r = kCmdReadonly;
  auto add = [t](const char* n, int ar, uint32_t f, int fk, int lk, CommandFn fn, const char* sum,
                 const char* since, KeysFn kf = nullptr) {
    t->push_back({n, ar, f, fk, lk, 1, fn, kf, "sorted-set", sum, since});
  };
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
