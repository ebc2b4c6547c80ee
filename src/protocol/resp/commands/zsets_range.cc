// Sorted-set range commands: ZCOUNT, ZLEXCOUNT, the ZRANGE family,
// ZRANGESTORE, ZRANK/ZREVRANK and ZREMRANGEBY*; run on the connection's
// worker with the keys' stripes held.
#include <algorithm>
#include <cmath>
#include <string>

#include "common/str_append.h"
#include "protocol/resp/core/command_table.h"
#include "protocol/resp/core/resp_parser.h"
#include "protocol/resp/core/resp_server.h"
#include "protocol/resp/types/collections.h"
#include "protocol/resp/types/keyspace.h"
#include "protocol/resp/types/zset_common.h"

namespace trove::resp {

// Score range "(1", "-inf", "+inf", "2.5".
namespace {
struct ScoreRange {
  double min, max;
  bool minex = false, maxex = false;
  bool In(double s) const { return (minex ? s > min : s >= min) && (maxex ? s < max : s <= max); }
};
}  // namespace

static bool ParseScoreBound(std::string_view s, double* v, bool* ex) {
  *ex = false;
  if (!s.empty() && s[0] == '(') {
    *ex = true;
    s.remove_prefix(1);
  }
  // Redis's zslParseRange: strtod with no range check (1e400 is +inf).
  return trove::ParseDouble(s, v) && !std::isnan(*v);
}

static bool ParseScoreRange(CommandContext& ctx, std::string_view a, std::string_view b,
                            ScoreRange* r) {
  if (!ParseScoreBound(a, &r->min, &r->minex) || !ParseScoreBound(b, &r->max, &r->maxex)) {
    ctx.Error("ERR min or max is not a float");
    return false;
  }
  return true;
}

// Lex range "[a", "(a", "-", "+".
namespace {
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
}  // namespace

static bool ParseLexBound(std::string_view s, std::string* v, bool* ex, bool* neg, bool* pos) {
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

static bool ParseLexRange(CommandContext& ctx, std::string_view a, std::string_view b,
                          LexRange* r) {
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

// Whether a range holds a sorted set entry: a score range bounds its score,
// a lex range its member.
static bool InRange(const ScoreRange& r, const Entry& e) { return r.In(e.first); }
static bool InRange(const LexRange& r, const Entry& e) { return r.In(e.second); }

// ZCOUNT and ZLEXCOUNT: the number of entries of argv[1] within the range
// that `parse` reads from argv[2] and argv[3].
template <typename Range>
static void CountInRange(CommandContext& ctx, bool (*parse)(CommandContext&, std::string_view,
                                                            std::string_view, Range*)) {
  Range r;
  if (!parse(ctx, ctx.argv[2], ctx.argv[3], &r)) return;
  ZsetValue* v;
  if (!ReadCollection(ctx, ctx.Key(1), &v)) return;
  int64_t n = 0;
  if (v)
    for (const auto& e : v->ordered())
      if (InRange(r, e)) ++n;
  ctx.w->Integer(n);
}

void CmdZCount(CommandContext& ctx) { CountInRange(ctx, ParseScoreRange); }
void CmdZLexCount(CommandContext& ctx) { CountInRange(ctx, ParseLexRange); }

namespace {
enum class RangeKind { kRank, kScore, kLex };
}  // namespace

namespace {
struct RangeSpec {
  RangeKind kind = RangeKind::kRank;
  bool rev = false;
  bool withscores = false;
  bool has_limit = false;
  int64_t offset = 0, count = -1;
};
}  // namespace

// Selects entries of v per the spec with bounds a/b (already in the order
// the caller's command uses: for REV forms, a is the max). False after an
// error reply.
static bool SelectRange(CommandContext& ctx, ZsetValue* v, const RangeSpec& rs, std::string_view a,
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
static bool ParseRangeOptions(CommandContext& ctx, size_t from, bool full, RangeSpec* rs) {
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

// ZRANGE and its older forms, which differ in what the bounds are (`kind`),
// the order (`rev`) and whether ZRANGE's BYSCORE, BYLEX and REV are taken
// (`full`).
static void RangeGeneric(CommandContext& ctx, RangeKind kind, bool rev, bool full) {
  RangeSpec rs;
  rs.kind = kind;
  rs.rev = rev;
  if (!ParseRangeOptions(ctx, 4, full, &rs)) return;
  ZsetValue* v;
  if (!ReadCollection(ctx, ctx.Key(1), &v)) return;
  std::vector<Entry> out;
  if (!SelectRange(ctx, v, rs, ctx.argv[2], ctx.argv[3], &out)) return;
  WriteEntries(ctx, out, rs.withscores);
}

void CmdZRange(CommandContext& ctx) { RangeGeneric(ctx, RangeKind::kRank, false, true); }
void CmdZRevRange(CommandContext& ctx) { RangeGeneric(ctx, RangeKind::kRank, true, false); }
void CmdZRangeByScore(CommandContext& ctx) { RangeGeneric(ctx, RangeKind::kScore, false, false); }
void CmdZRevRangeByScore(CommandContext& ctx) { RangeGeneric(ctx, RangeKind::kScore, true, false); }
void CmdZRangeByLex(CommandContext& ctx) { RangeGeneric(ctx, RangeKind::kLex, false, false); }
void CmdZRevRangeByLex(CommandContext& ctx) { RangeGeneric(ctx, RangeKind::kLex, true, false); }

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
  if (!ReadCollection(ctx, ctx.Key(2), &v)) return;
  std::vector<Entry> out;
  if (!SelectRange(ctx, v, rs, ctx.argv[3], ctx.argv[4], &out)) return;
  std::string dst = ctx.Key(1);
  ctx.engine->UnlinkLocked(dst, ctx.ts);
  StoreEntries(ctx, dst, out);
}

static void RankGeneric(CommandContext& ctx, bool rev) {
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
  if (!ReadCollection(ctx, ctx.Key(1), &v)) return;
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

static void RemRangeGeneric(CommandContext& ctx, RangeKind kind) {
  RangeSpec rs;
  rs.kind = kind;
  std::string key = ctx.Key(1);
  ZsetValue* v;
  // Validate the range first (Redis replies to bad ranges even on missing keys).
  std::vector<Entry> out;
  if (!ReadCollection(ctx, key, &v)) return;
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

}  // namespace trove::resp
