// Sorted-set commands; run on the connection's worker with the keys' stripes
// held.
#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include "common/str_append.h"
#include "protocol/resp/collections.h"
#include "protocol/resp/command_table.h"
#include "protocol/resp/keyspace.h"
#include "protocol/resp/random_pick.h"
#include "protocol/resp/resp_parser.h"
#include "protocol/resp/resp_server.h"
#include "protocol/resp/scan_util.h"

namespace trove::resp {
namespace {

using Entry = ZsetValue::Entry;

bool ReadZset(CommandContext& ctx, const std::string& key, ZsetValue** v) {
  if (LoadCollection<ZsetValue>(ctx, key, v) == LoadStatus::kWrongType) {
    ctx.WrongType();
    return false;
  }
  return true;
}

void Finish(CommandContext& ctx, const std::string& key, ZsetValue* v, size_t before) {
  v->CheckEncoding(ctx.server->zset_max_listpack_entries.load(std::memory_order_relaxed),
                   ctx.server->zset_max_listpack_value.load(std::memory_order_relaxed));
  FinishUpdate(ctx, key, v, before);
}

// Writes entries as members, or member/score (flat in RESP2, pairs in RESP3).
void WriteEntries(CommandContext& ctx, const std::vector<Entry>& es, bool withscores) {
  if (!withscores) {
    ctx.w->ArrayHeader(es.size());
    for (const auto& e : es) ctx.w->Bulk(e.second);
    return;
  }
  bool pairs = ctx.w->proto() == 3;
  ctx.w->ArrayHeader(pairs ? es.size() : es.size() * 2);
  for (const auto& e : es) {
    if (pairs) ctx.w->ArrayHeader(2);
    ctx.w->Bulk(e.second);
    ctx.w->Double(e.first);
  }
}

void CmdZAdd(CommandContext& ctx) {
  bool nx = false, xx = false, gt = false, lt = false, ch = false, incr = false;
  size_t i = 2;
  for (; i < ctx.argc(); ++i) {
    std::string_view o = ctx.argv[i];
    if (EqualsIgnoreCase(o, "nx"))
      nx = true;
    else if (EqualsIgnoreCase(o, "xx"))
      xx = true;
    else if (EqualsIgnoreCase(o, "gt"))
      gt = true;
    else if (EqualsIgnoreCase(o, "lt"))
      lt = true;
    else if (EqualsIgnoreCase(o, "ch"))
      ch = true;
    else if (EqualsIgnoreCase(o, "incr"))
      incr = true;
    else
      break;
  }
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
  if (!ReadZset(ctx, key, &v)) return;
  if (v == nullptr) {
    if (xx) {
      if (incr)
        ctx.w->Null();
      else
        ctx.w->Integer(0);
      return;
    }
    bool created;
    v = LoadOrCreate<ZsetValue>(ctx, key, &created);
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
  if (added > 0 || changed > 0) Finish(ctx, key, v, before);
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
  bool created;
  ZsetValue* v = LoadOrCreate<ZsetValue>(ctx, key, &created);
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
  Finish(ctx, key, v, before);
  ctx.w->Double(s);
}

void CmdZRem(CommandContext& ctx) {
  std::string key = ctx.Key(1);
  ZsetValue* v;
  if (!ReadZset(ctx, key, &v)) return;
  if (v == nullptr) {
    ctx.w->Integer(0);
    return;
  }
  size_t before = v->MemoryUsage();
  int64_t n = 0;
  for (size_t i = 2; i < ctx.argc(); ++i)
    if (v->Remove(ctx.argv[i])) ++n;
  if (n > 0) FinishUpdate(ctx, key, v, before);  // nothing removed: the key is untouched
  ctx.w->Integer(n);
}

void CmdZScore(CommandContext& ctx) {
  ZsetValue* v;
  if (!ReadZset(ctx, ctx.Key(1), &v)) return;
  const double* s = v ? v->Score(ctx.argv[2]) : nullptr;
  if (s == nullptr)
    ctx.w->Null();
  else
    ctx.w->Double(*s);
}

void CmdZMScore(CommandContext& ctx) {
  ZsetValue* v;
  if (!ReadZset(ctx, ctx.Key(1), &v)) return;
  ctx.w->ArrayHeader(ctx.argc() - 2);
  for (size_t i = 2; i < ctx.argc(); ++i) {
    const double* s = v ? v->Score(ctx.argv[i]) : nullptr;
    if (s == nullptr)
      ctx.w->Null();
    else
      ctx.w->Double(*s);
  }
}

void CmdZCard(CommandContext& ctx) {
  ZsetValue* v;
  if (!ReadZset(ctx, ctx.Key(1), &v)) return;
  ctx.w->Integer(v ? static_cast<int64_t>(v->size()) : 0);
}

// Score range "(1", "-inf", "+inf", "2.5".
struct ScoreRange {
  double min, max;
  bool minex = false, maxex = false;
  bool In(double s) const { return (minex ? s > min : s >= min) && (maxex ? s < max : s <= max); }
};

bool ParseScoreBound(std::string_view s, double* v, bool* ex) {
  *ex = false;
  if (!s.empty() && s[0] == '(') {
    *ex = true;
    s.remove_prefix(1);
  }
  return ParseDouble(s, v);
}

bool ParseScoreRange(CommandContext& ctx, std::string_view a, std::string_view b, ScoreRange* r) {
  if (!ParseScoreBound(a, &r->min, &r->minex) || !ParseScoreBound(b, &r->max, &r->maxex)) {
    ctx.Error("ERR min or max is not a float");
    return false;
  }
  return true;
}

// Lex range "[a", "(a", "-", "+".
struct LexRange {
  std::string min, max;
  bool mininf = false, maxinf = false;  // "-" / "+"
  bool minneg = false, maxpos = false;
  bool minex = false, maxex = false;
  bool AboveMin(const std::string& s) const {
    if (minneg) return true;
    if (mininf) return false;  // "+" as min
    return minex ? s > min : s >= min;
  }
  bool BelowMax(const std::string& s) const {
    if (maxpos) return true;
    if (maxinf) return false;  // "-" as max
    return maxex ? s < max : s <= max;
  }
  bool In(const std::string& s) const { return AboveMin(s) && BelowMax(s); }
};

bool ParseLexBound(std::string_view s, std::string* v, bool* ex, bool* neg, bool* pos) {
  *neg = *pos = *ex = false;
  if (s == "-") {
    *neg = true;
    return true;
  }
  if (s == "+") {
    *pos = true;
    return true;
  }
  if (s.empty() || (s[0] != '(' && s[0] != '[')) return false;
  *ex = s[0] == '(';
  v->assign(s.substr(1));
  return true;
}

bool ParseLexRange(CommandContext& ctx, std::string_view a, std::string_view b, LexRange* r) {
  bool n1, p1, n2, p2;
  if (!ParseLexBound(a, &r->min, &r->minex, &n1, &p1) ||
      !ParseLexBound(b, &r->max, &r->maxex, &n2, &p2)) {
    ctx.Error("ERR min or max not valid string range item");
    return false;
  }
  r->minneg = n1;
  r->mininf = p1;
  r->maxpos = p2;
  r->maxinf = n2;
  return true;
}

void CmdZCount(CommandContext& ctx) {
  ScoreRange r;
  if (!ParseScoreRange(ctx, ctx.argv[2], ctx.argv[3], &r)) return;
  ZsetValue* v;
  if (!ReadZset(ctx, ctx.Key(1), &v)) return;
  int64_t n = 0;
  if (v)
    for (const auto& e : v->ordered())
      if (r.In(e.first)) ++n;
  ctx.w->Integer(n);
}

void CmdZLexCount(CommandContext& ctx) {
  LexRange r;
  if (!ParseLexRange(ctx, ctx.argv[2], ctx.argv[3], &r)) return;
  ZsetValue* v;
  if (!ReadZset(ctx, ctx.Key(1), &v)) return;
  int64_t n = 0;
  if (v)
    for (const auto& e : v->ordered())
      if (r.In(e.second)) ++n;
  ctx.w->Integer(n);
}

enum class RangeKind { kRank, kScore, kLex };

struct RangeSpec {
  RangeKind kind = RangeKind::kRank;
  bool rev = false;
  bool withscores = false;
  bool has_limit = false;
  int64_t offset = 0, count = -1;
};

// Selects entries of v per the spec with bounds a/b (already in the order
// the caller's command uses: for REV forms, a is the max). False after an
// error reply.
bool SelectRange(CommandContext& ctx, ZsetValue* v, const RangeSpec& rs, std::string_view a,
                 std::string_view b, std::vector<Entry>* out) {
  out->clear();
  if (rs.kind == RangeKind::kRank) {
    int64_t start, end;
    if (!ArgInt(ctx, a, &start) || !ArgInt(ctx, b, &end)) return false;
    if (v == nullptr) return true;
    int64_t len = static_cast<int64_t>(v->size());
    if (start < 0) start += len;
    if (end < 0) end += len;
    if (start < 0) start = 0;
    if (start > end || start >= len) return true;
    if (end >= len) end = len - 1;
    std::vector<Entry> all(v->ordered().begin(), v->ordered().end());
    if (rs.rev) std::reverse(all.begin(), all.end());
    out->assign(all.begin() + start, all.begin() + end + 1);
    return true;
  }
  ScoreRange sr;
  LexRange lr;
  std::string_view lo = rs.rev ? b : a, hi = rs.rev ? a : b;
  if (rs.kind == RangeKind::kScore && !ParseScoreRange(ctx, lo, hi, &sr)) return false;
  if (rs.kind == RangeKind::kLex && !ParseLexRange(ctx, lo, hi, &lr)) return false;
  if (v == nullptr) return true;
  std::vector<Entry> all;
  for (const auto& e : v->ordered()) {
    if (rs.kind == RangeKind::kScore ? sr.In(e.first) : lr.In(e.second)) all.push_back(e);
  }
  if (rs.rev) std::reverse(all.begin(), all.end());
  int64_t off = rs.offset;
  if (off < 0) return true;
  for (size_t i = static_cast<size_t>(off); i < all.size(); ++i) {
    if (rs.count >= 0 && static_cast<int64_t>(out->size()) >= rs.count) break;
    out->push_back(all[i]);
  }
  return true;
}

// Parses the ZRANGE options from argv[from]. For ZRANGEBYSCORE-style commands
// the kind is preset and only WITHSCORES / LIMIT are allowed.
bool ParseRangeOptions(CommandContext& ctx, size_t from, bool full, RangeSpec* rs) {
  for (size_t i = from; i < ctx.argc(); ++i) {
    std::string_view o = ctx.argv[i];
    if (EqualsIgnoreCase(o, "withscores")) {
      rs->withscores = true;
    } else if (EqualsIgnoreCase(o, "limit") && i + 2 < ctx.argc()) {
      if (!ArgInt(ctx, ctx.argv[i + 1], &rs->offset) || !ArgInt(ctx, ctx.argv[i + 2], &rs->count)) {
        return false;
      }
      rs->has_limit = true;
      i += 2;
    } else if (full && EqualsIgnoreCase(o, "byscore")) {
      rs->kind = RangeKind::kScore;
    } else if (full && EqualsIgnoreCase(o, "bylex")) {
      rs->kind = RangeKind::kLex;
    } else if (full && EqualsIgnoreCase(o, "rev")) {
      rs->rev = true;
    } else {
      ctx.SyntaxError();
      return false;
    }
  }
  if (rs->has_limit && rs->kind == RangeKind::kRank) {
    ctx.Error(
        "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX");
    return false;
  }
  if (rs->withscores && rs->kind == RangeKind::kLex) {
    ctx.Error("ERR syntax error, WITHSCORES not supported in combination with BYLEX");
    return false;
  }
  return true;
}

void RangeGeneric(CommandContext& ctx, RangeSpec rs, bool full) {
  if (!ParseRangeOptions(ctx, 4, full, &rs)) return;
  ZsetValue* v;
  if (!ReadZset(ctx, ctx.Key(1), &v)) return;
  std::vector<Entry> out;
  if (!SelectRange(ctx, v, rs, ctx.argv[2], ctx.argv[3], &out)) return;
  WriteEntries(ctx, out, rs.withscores);
}

void CmdZRange(CommandContext& ctx) { RangeGeneric(ctx, RangeSpec(), true); }
void CmdZRevRange(CommandContext& ctx) {
  RangeSpec rs;
  rs.rev = true;
  RangeGeneric(ctx, rs, false);
}
void CmdZRangeByScore(CommandContext& ctx) {
  RangeSpec rs;
  rs.kind = RangeKind::kScore;
  RangeGeneric(ctx, rs, false);
}
void CmdZRevRangeByScore(CommandContext& ctx) {
  RangeSpec rs;
  rs.kind = RangeKind::kScore;
  rs.rev = true;
  RangeGeneric(ctx, rs, false);
}
void CmdZRangeByLex(CommandContext& ctx) {
  RangeSpec rs;
  rs.kind = RangeKind::kLex;
  RangeGeneric(ctx, rs, false);
}
void CmdZRevRangeByLex(CommandContext& ctx) {
  RangeSpec rs;
  rs.kind = RangeKind::kLex;
  rs.rev = true;
  RangeGeneric(ctx, rs, false);
}

void CmdZRangeStore(CommandContext& ctx) {
  RangeSpec rs;
  for (size_t i = 5; i < ctx.argc(); ++i) {
    if (EqualsIgnoreCase(ctx.argv[i], "withscores")) {
      ctx.SyntaxError();
      return;
    }
  }
  if (!ParseRangeOptions(ctx, 5, true, &rs)) return;
  ZsetValue* v;
  if (!ReadZset(ctx, ctx.Key(2), &v)) return;
  std::vector<Entry> out;
  if (!SelectRange(ctx, v, rs, ctx.argv[3], ctx.argv[4], &out)) return;
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

void RankGeneric(CommandContext& ctx, bool rev) {
  bool withscore = false;
  if (ctx.argc() > 4) {
    ctx.SyntaxError();
    return;
  }
  if (ctx.argc() == 4) {
    if (!EqualsIgnoreCase(ctx.argv[3], "withscore")) {
      ctx.SyntaxError();
      return;
    }
    withscore = true;
  }
  ZsetValue* v;
  if (!ReadZset(ctx, ctx.Key(1), &v)) return;
  int64_t r = v ? v->Rank(ctx.argv[2]) : -1;
  if (r < 0) {
    if (withscore)
      ctx.w->NullArray();
    else
      ctx.w->Null();
    return;
  }
  if (rev) r = static_cast<int64_t>(v->size()) - 1 - r;
  if (!withscore) {
    ctx.w->Integer(r);
    return;
  }
  ctx.w->ArrayHeader(2);
  ctx.w->Integer(r);
  ctx.w->Double(*v->Score(ctx.argv[2]));
}
void CmdZRank(CommandContext& ctx) { RankGeneric(ctx, false); }
void CmdZRevRank(CommandContext& ctx) { RankGeneric(ctx, true); }

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
  if (ctx.argc() > 3) {
    ctx.SyntaxError();
    return;
  }
  if (has_count) {
    if (!ParseStrictInt64(ctx.argv[2], &count) || count < 0) {
      ctx.Error("ERR value is out of range, must be positive");
      return;
    }
  }
  std::string key = ctx.Key(1);
  ZsetValue* v;
  if (!ReadZset(ctx, key, &v)) return;
  if (v == nullptr) {
    ctx.w->ArrayHeader(0);
    return;
  }
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

void CmdZMPop(CommandContext& ctx) {
  size_t pos;
  bool min;
  int64_t count;
  if (!ParseMpopArgs(ctx, "min", "max", &pos, &min, &count)) return;
  const bool max = !min;
  for (size_t k = 2; k < pos; ++k) {
    std::string key = ctx.Key(k);
    ZsetValue* v;
    if (!ReadZset(ctx, key, &v)) return;
    if (v == nullptr) continue;
    size_t before = v->MemoryUsage();
    std::vector<Entry> out = PopEntries(v, max, static_cast<size_t>(count));
    FinishUpdate(ctx, key, v, before);
    ctx.w->ArrayHeader(2);
    ctx.w->Bulk(ctx.argv[k]);
    ctx.w->ArrayHeader(out.size());
    for (const auto& e : out) {
      ctx.w->ArrayHeader(2);
      ctx.w->Bulk(e.second);
      ctx.w->Double(e.first);
    }
    return;
  }
  ctx.w->NullArray();
}

void CmdZRandMember(CommandContext& ctx) {
  bool has_count, withscores;
  int64_t count = 1;
  if (!ParseRandomArgs(ctx, "withscores", &has_count, &count, &withscores)) return;
  ZsetValue* v;
  if (!ReadZset(ctx, ctx.Key(1), &v)) return;
  if (v == nullptr) {
    if (has_count)
      ctx.w->ArrayHeader(0);
    else
      ctx.w->Null();
    return;
  }
  std::vector<Entry> all(v->ordered().begin(), v->ordered().end());
  if (!has_count) {
    ctx.w->Bulk(all[CommandRng()() % all.size()].second);
    return;
  }
  std::vector<Entry> pick;
  if (!PickRandom(ctx, std::move(all), count, &pick)) return;
  WriteEntries(ctx, pick, withscores);
}

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

void RemRangeGeneric(CommandContext& ctx, RangeKind kind) {
  RangeSpec rs;
  rs.kind = kind;
  std::string key = ctx.Key(1);
  ZsetValue* v;
  // Validate the range first (Redis replies to bad ranges even on missing keys).
  std::vector<Entry> out;
  if (!ReadZset(ctx, key, &v)) return;
  if (!SelectRange(ctx, v, rs, ctx.argv[2], ctx.argv[3], &out)) return;
  if (v == nullptr) {
    ctx.w->Integer(0);
    return;
  }
  size_t before = v->MemoryUsage();
  for (const auto& e : out) v->Remove(e.second);
  if (!out.empty()) FinishUpdate(ctx, key, v, before);
  ctx.w->Integer(static_cast<int64_t>(out.size()));
}
void CmdZRemRangeByRank(CommandContext& ctx) { RemRangeGeneric(ctx, RangeKind::kRank); }
void CmdZRemRangeByScore(CommandContext& ctx) { RemRangeGeneric(ctx, RangeKind::kScore); }
void CmdZRemRangeByLex(CommandContext& ctx) { RemRangeGeneric(ctx, RangeKind::kLex); }

void CmdZScan(CommandContext& ctx) {
  ScanOptions o;
  if (!ParseScanArgs(ctx, 2, &o)) return;
  ZsetValue* v;
  if (!ReadZset(ctx, ctx.Key(1), &v)) return;
  std::vector<Entry> out;
  uint64_t next = 0;
  if (v != nullptr && v->compact()) {
    for (const auto& e : v->ordered()) {
      if (!o.has_pattern || GlobMatch(o.pattern, e.second)) out.push_back(e);
    }
  } else if (v != nullptr) {
    next = ScanLargeCollection(
        *v, o, [&](const ScanOrder::Ref& r) { out.emplace_back(r.score, *r.member); });
  }
  ctx.w->ArrayHeader(2);
  ctx.w->Bulk(std::to_string(next));
  ctx.w->ArrayHeader(out.size() * 2);
  for (const auto& e : out) {
    ctx.w->Bulk(e.second);
    ctx.w->Bulk(FormatDouble(e.first));
  }
}

}  // namespace

void RegisterZsetCommands(std::vector<CommandSpec>* t) {
  const uint32_t w = kCmdWrite | kCmdDenyOom;
  const uint32_t r = kCmdReadonly;
  auto add = [t](const char* n, int ar, uint32_t f, int fk, int lk, CommandFn fn, const char* sum,
                 const char* since, KeysFn kf = nullptr) {
    t->push_back({n, ar, f, fk, lk, 1, fn, kf, "sorted-set", sum, since});
  };
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
