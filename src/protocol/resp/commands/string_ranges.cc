// Substring commands: APPEND STRLEN GETRANGE (SUBSTR) SETRANGE LCS. Run on
// the connection's worker with the keys' stripes held.
#include <algorithm>
#include <climits>
#include <string>
#include <vector>

#include "common/str_append.h"
#include "protocol/resp/commands/string_values.h"
#include "protocol/resp/core/command_table.h"
#include "protocol/resp/core/resp_parser.h"
#include "protocol/resp/core/resp_server.h"
#include "protocol/resp/types/keyspace.h"

namespace trove::resp {
namespace {

using engine::ItemRef;
using engine::ValueType;

void CmdAppend(CommandContext& ctx) {
  std::string key = ctx.Key(1);
  std::string v;
  int64_t exptime = 0;
  if (!ReadForRewrite(ctx, key, &v, &exptime)) return;
  if (v.size() + ctx.argv[2].size() > MaxStringLen(ctx)) {
    ctx.Error("ERR string exceeds maximum allowed size (proto-max-bulk-len)");
    return;
  }
  v.append(ctx.argv[2]);
  if (StoreStringLocked(ctx, key, v, exptime, false))
    ctx.w->Integer(static_cast<int64_t>(v.size()));
}

void CmdStrlen(CommandContext& ctx) {
  ItemRef it;
  if (!GetString(ctx, ctx.Key(1), &it)) return;
  ctx.w->Integer(it ? static_cast<int64_t>(it.value_length()) : 0);
}

void CmdGetRange(CommandContext& ctx) {
  int64_t start, end;
  if (!ArgInt(ctx, ctx.argv[2], &start) || !ArgInt(ctx, ctx.argv[3], &end)) return;
  ItemRef it;
  if (!GetString(ctx, ctx.Key(1), &it)) return;
  std::string v;
  if (it) v = CopyOut(it);
  int64_t len = static_cast<int64_t>(v.size());
  // Redis 8's rule: a range that ends before the string's first byte is
  // empty (7.x clamped the end to 0 and answered the first byte).
  if (start < 0) start += len;
  if (end < 0) end += len;
  if (len == 0 || start >= len || end < 0 || start > end) {
    ctx.w->Bulk("");
    return;
  }
  if (start < 0) start = 0;
  if (end >= len) end = len - 1;
  ctx.w->Bulk(
      std::string_view(v).substr(static_cast<size_t>(start), static_cast<size_t>(end - start + 1)));
}

void CmdSetRange(CommandContext& ctx) {
  int64_t off;
  if (!ArgInt(ctx, ctx.argv[2], &off)) return;
  if (off < 0) {
    ctx.Error("ERR offset is out of range");
    return;
  }
  std::string key = ctx.Key(1);
  std::string v;
  int64_t exptime = 0;
  if (!ReadForRewrite(ctx, key, &v, &exptime)) return;
  std::string_view val = ctx.argv[3];
  if (val.empty()) {
    ctx.w->Integer(static_cast<int64_t>(v.size()));
    return;
  }
  if (static_cast<uint64_t>(off) + val.size() >
      static_cast<uint64_t>(ctx.server->proto_max_bulk_len.load(std::memory_order_relaxed))) {
    ctx.Error("ERR string exceeds maximum allowed size (proto-max-bulk-len)");
    return;
  }
  size_t need = static_cast<size_t>(off) + val.size();
  if (v.size() < need) v.resize(need, '\0');
  v.replace(static_cast<size_t>(off), val.size(), val);
  if (StoreStringLocked(ctx, key, v, exptime, false))
    ctx.w->Integer(static_cast<int64_t>(v.size()));
}

void CmdLcs(CommandContext& ctx) {
  bool getlen = false, getidx = false, withmatchlen = false;
  int64_t minmatch = 0;
  for (size_t i = 3; i < ctx.argc(); ++i) {
    std::string_view o = ctx.argv[i];
    if (EqualsIgnoreCase(o, "idx"))
      getidx = true;
    else if (EqualsIgnoreCase(o, "len"))
      getlen = true;
    else if (EqualsIgnoreCase(o, "withmatchlen"))
      withmatchlen = true;
    else if (EqualsIgnoreCase(o, "minmatchlen") && i + 1 < ctx.argc()) {
      if (!ArgInt(ctx, ctx.argv[++i], &minmatch)) return;
      if (minmatch < 0) minmatch = 0;
    } else {
      ctx.SyntaxError();
      return;
    }
  }
  ItemRef a = LookupLocked(ctx, ctx.Key(1)), b = LookupLocked(ctx, ctx.Key(2));
  if ((a && a.type() != ValueType::kString) || (b && b.type() != ValueType::kString)) {
    ctx.Error("ERR The specified keys must contain string values");
    return;
  }
  if (getidx && getlen) {
    ctx.Error("ERR If you want both the length and indexes, please just use IDX.");
    return;
  }
  std::string sa = a ? CopyOut(a) : std::string(), sb = b ? CopyOut(b) : std::string();
  size_t n = sa.size(), m = sb.size();
  if ((n + 1) * (m + 1) > (1ull << 30)) {
    ctx.Error("ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len");
    return;
  }
  std::vector<uint32_t> dp((n + 1) * (m + 1), 0);
  auto at = [&](size_t i, size_t j) -> uint32_t& { return dp[i * (m + 1) + j]; };
  for (size_t i = 1; i <= n; ++i) {
    for (size_t j = 1; j <= m; ++j) {
      if (sa[i - 1] == sb[j - 1])
        at(i, j) = at(i - 1, j - 1) + 1;
      else
        at(i, j) = std::max(at(i - 1, j), at(i, j - 1));
    }
  }
  uint32_t len = at(n, m);
  if (getlen) {
    ctx.w->Integer(len);
    return;
  }
  std::string res(len, '\0');
  struct Match {
    size_t a1, a2, b1, b2;
  };
  std::vector<Match> matches;
  // Walk back from the end as Redis does; a range restarts at the next match
  // after any gap, with Redis's quirk of skipping the char that broke it.
  size_t i = n, j = m, idx = len;
  size_t astart = n, aend = 0, bstart = 0, bend = 0;
  while (i > 0 && j > 0) {
    bool emit = false;
    if (sa[i - 1] == sb[j - 1]) {
      res[idx - 1] = sa[i - 1];
      if (astart == n) {
        astart = aend = i - 1;
        bstart = bend = j - 1;
      } else if (astart == i && bstart == j) {
        --astart;
        --bstart;
      } else {
        emit = true;
      }
      if (astart == 0 || bstart == 0) emit = true;
      --idx;
      --i;
      --j;
    } else {
      if (at(i - 1, j) > at(i, j - 1))
        --i;
      else
        --j;
      if (astart != n) emit = true;
    }
    if (emit) {
      size_t ml = aend - astart + 1;
      if (minmatch == 0 || static_cast<int64_t>(ml) >= minmatch) {
        matches.push_back({astart, aend, bstart, bend});
      }
      astart = n;
    }
  }
  if (!getidx) {
    ctx.w->Bulk(res);
    return;
  }
  ctx.w->MapHeader(2);
  ctx.w->Bulk("matches");
  ctx.w->ArrayHeader(matches.size());
  for (const Match& mt : matches) {
    ctx.w->ArrayHeader(withmatchlen ? 3 : 2);
    ctx.w->ArrayHeader(2);
    ctx.w->Integer(static_cast<int64_t>(mt.a1));
    ctx.w->Integer(static_cast<int64_t>(mt.a2));
    ctx.w->ArrayHeader(2);
    ctx.w->Integer(static_cast<int64_t>(mt.b1));
    ctx.w->Integer(static_cast<int64_t>(mt.b2));
    if (withmatchlen) ctx.w->Integer(static_cast<int64_t>(mt.a2 - mt.a1 + 1));
  }
  ctx.w->Bulk("len");
  ctx.w->Integer(len);
}

}  // namespace

void RegisterStringRangeCommands(std::vector<CommandSpec>* t) {
  const uint32_t w = kCmdWrite | kCmdDenyOom;
  const uint32_t r = kCmdReadonly;
  const CommandAdder add{t, "string"};
  add("append", 3, w | kCmdFast, 1, 1, 1, CmdAppend,
      "Appends a string to the value of a key. Creates the key if it doesn't exist.", "2.0.0");
  add("strlen", 2, r | kCmdFast, 1, 1, 1, CmdStrlen, "Returns the length of a string value.",
      "2.2.0");
  add("getrange", 4, r, 1, 1, 1, CmdGetRange, "Returns a substring of the string stored at a key.",
      "2.4.0");
  add("substr", 4, r, 1, 1, 1, CmdGetRange, "Returns a substring from a string value.", "1.0.0");
  add("setrange", 4, w, 1, 1, 1, CmdSetRange,
      "Overwrites a part of a string value with another by an offset.", "2.2.0");
  add("lcs", -3, r, 1, 2, 1, CmdLcs, "Finds the longest common substring.", "7.0.0");
}

}  // namespace trove::resp
