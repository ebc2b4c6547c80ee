// SORT and SORT_RO: the elements of a list, set or sorted set, sorted by
// themselves or by the keys a BY pattern names, with LIMIT, GET patterns
// and (SORT only) STORE into a list, as Redis 7's sortCommandGeneric. The
// keys patterns name are locked by sort_patterns.cc. Runs on the
// connection's worker with the stripes of the sorted key and the STORE
// destination held.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/resp/commands/sort_patterns.h"
#include "protocol/resp/core/command_table.h"
#include "protocol/resp/services/latency_histogram.h"
#include "protocol/resp/types/collections.h"
#include "protocol/resp/types/keyspace.h"

namespace trove::resp {
namespace {

// What a call asks for (Redis's option loop): later options override
// earlier ones, except that a constant BY, once seen, means "do not sort"
// even if a later BY has a '*' (as in Redis).
struct SortArgs {
  bool desc = false;
  bool alpha = false;
  bool dontsort = false;
  std::optional<SortPattern> by;  // the last BY with a '*'
  std::vector<SortPattern> gets;
  int64_t limit_start = 0;
  int64_t limit_count = -1;
  size_t store = 0;  // argv index of the STORE destination; 0: none
};

// Whether the caller may use BY and GET patterns: they read keys nobody can
// know before the command runs, so Redis 7 requires a selector that allows
// the call and reads every key.
bool MayReadEveryKey(CommandContext& ctx) {
  const Identity& id = ctx.conn->identity();
  if (id.unrestricted()) return true;
  const int slot = HistogramSlots::Get().SlotOf(*ctx.spec, ctx.argv);
  return id.acl_user()->AllowsWithEveryKey(*ctx.spec, slot, ctx.argv, acl::kPermRead);
}

// Parses argv[2..]; false after the error reply.
bool ParseSortArgs(CommandContext& ctx, bool read_only, SortArgs* a) {
  std::optional<bool> every_key;  // MayReadEveryKey, asked once if needed
  auto allowed = [&] {
    if (!every_key.has_value()) every_key = MayReadEveryKey(ctx);
    return *every_key;
  };
  for (size_t j = 2; j < ctx.argc(); ++j) {
    const std::string_view o = ctx.argv[j];
    const size_t left = ctx.argc() - j - 1;
    if (EqualsIgnoreCase(o, "asc")) {
      a->desc = false;
    } else if (EqualsIgnoreCase(o, "desc")) {
      a->desc = true;
    } else if (EqualsIgnoreCase(o, "alpha")) {
      a->alpha = true;
    } else if (EqualsIgnoreCase(o, "limit") && left >= 2) {
      if (!ArgInt(ctx, ctx.argv[j + 1], &a->limit_start) ||
          !ArgInt(ctx, ctx.argv[j + 2], &a->limit_count))
        return false;
      j += 2;
    } else if (!read_only && EqualsIgnoreCase(o, "store") && left >= 1) {
      a->store = ++j;
    } else if (EqualsIgnoreCase(o, "by") && left >= 1) {
      SortPattern p(ctx.argv[++j]);
      if (!p.names_keys) {
        a->dontsort = true;  // BY <constant>: nothing to sort by
      } else if (!allowed()) {
        ctx.Error("ERR BY option of SORT denied due to insufficient ACL permissions.");
        return false;
      } else {
        a->by = p;
      }
    } else if (EqualsIgnoreCase(o, "get") && left >= 1) {
      // Checked for every GET, "#" too, as Redis does.
      if (!allowed()) {
        ctx.Error("ERR GET option of SORT denied due to insufficient ACL permissions.");
        return false;
      }
      a->gets.emplace_back(ctx.argv[++j]);
    } else {
      ctx.SyntaxError();
      return false;
    }
  }
  return true;
}

// One element to sort. elem views the source collection (or owned copies),
// alive and unchanged until the reply or the store is built.
struct SortItem {
  std::string_view elem;
  double score = 0;    // numeric weight (0 when BY names no value)
  std::string weight;  // ALPHA BY weight
  bool has_weight = false;
};

// Redis's strtod rule for weights: the whole string (up to a NUL byte, as
// C's strtod reads it), no NaN, no overflow or underflow. "" is 0.
bool ParseWeight(const std::string& s, double* out) {
  char* end = nullptr;
  errno = 0;
  const double d = std::strtod(s.c_str(), &end);
  if (*end != '\0' || errno == ERANGE || std::isnan(d)) return false;
  *out = d;
  return true;
}

// Byte order, shorter first on a common prefix (Redis's binary compare).
int CompareBytes(std::string_view a, std::string_view b) {
  const int c = a.compare(b);
  return c < 0 ? -1 : (c > 0 ? 1 : 0);
}

// Redis's sortCompare. ALPHA compares bytes: Redis compares with strcoll
// without STORE, which is byte order in the C locale except past a NUL
// byte; Trove keeps one binary-safe order for both.
int CompareItems(const SortItem& x, const SortItem& y, bool alpha, bool by) {
  if (!alpha) {
    if (x.score != y.score) return x.score > y.score ? 1 : -1;
    return CompareBytes(x.elem, y.elem);  // equal weights: by the element, for a fixed order
  }
  if (!by) return CompareBytes(x.elem, y.elem);
  if (!x.has_weight || !y.has_weight) {  // a missing weight sorts first
    return x.has_weight == y.has_weight ? 0 : (x.has_weight ? 1 : -1);
  }
  return CompareBytes(x.weight, y.weight);
}

// The elements of the source in the order SORT starts from, and the
// inclusive output range [*start, *end] into them (empty when end < start):
// Redis's LIMIT clamping, and its direct ranges for a list or sorted set
// that is not sorted (BY <constant>), which also follow DESC.
void LoadItems(CollectionBase* src, engine::ValueType type, const SortArgs& a,
               std::vector<std::string>* owned, std::vector<SortItem>* items, int64_t* start,
               int64_t* end) {
  const int64_t len = src == nullptr ? 0 : static_cast<int64_t>(src->size());
  // Clamped to the length first, so start + count cannot overflow.
  int64_t s = std::min(std::max<int64_t>(a.limit_start, 0), len);
  const int64_t count = std::min(std::max<int64_t>(a.limit_count, -1), len);
  int64_t e = count < 0 ? len - 1 : s + count - 1;
  if (s >= len) {
    s = len - 1;
    e = len - 2;
  }
  if (e >= len) e = len - 1;
  *start = s;
  *end = e;
  if (src == nullptr) return;
  auto add = [&](std::string_view v) {
    items->emplace_back();
    items->back().elem = v;
  };
  const bool ranged =
      a.dontsort && (type == engine::ValueType::kList || type == engine::ValueType::kZset);
  if (ranged) {
    // Only the range, in the collection's order (reversed for DESC); the
    // output then takes all of it.
    const size_t n = e >= s ? static_cast<size_t>(e - s + 1) : 0;
    items->reserve(n);
    const auto skip = static_cast<size_t>(std::max<int64_t>(s, 0));
    if (type == engine::ValueType::kList) {
      const auto& d = static_cast<ListValue*>(src)->items();
      for (size_t i = 0; i < n; ++i) add(a.desc ? d[d.size() - 1 - skip - i] : d[skip + i]);
    } else {
      const auto& z = static_cast<ZsetValue*>(src)->ordered();
      if (a.desc) {
        auto it = std::next(z.rbegin(), static_cast<std::ptrdiff_t>(n == 0 ? 0 : skip));
        for (size_t i = 0; i < n; ++i, ++it) add(it->second);
      } else {
        auto it = std::next(z.begin(), static_cast<std::ptrdiff_t>(n == 0 ? 0 : skip));
        for (size_t i = 0; i < n; ++i, ++it) add(it->second);
      }
    }
    *start = 0;
    *end = static_cast<int64_t>(n) - 1;
    return;
  }
  items->reserve(static_cast<size_t>(len));
  switch (type) {
    case engine::ValueType::kList:
      for (const std::string& v : static_cast<ListValue*>(src)->items()) add(v);
      break;
    case engine::ValueType::kSet:
      if (a.dontsort) {
        // Unsorted output shows the set's own order (intset: ascending).
        *owned = static_cast<SetValue*>(src)->Ordered();
        for (const std::string& v : *owned) add(v);
      } else {
        for (const std::string& v : static_cast<SetValue*>(src)->members()) add(v);
      }
      break;
    case engine::ValueType::kZset:
      for (const auto& entry : static_cast<ZsetValue*>(src)->ordered()) add(entry.second);
      break;
    default:
      break;
  }
}

// Why the handler stops before replying: a pattern key could not be
// locked (SortKeyLocks says how to answer).
bool Stop(CommandContext& ctx, const SortKeyLocks& locks) {
  if (!locks.error().empty()) ctx.Error(locks.error());
  return false;
}

// The weights of every item from the BY pattern or the items themselves;
// false to stop (after the error reply, or to run again exclusively).
bool LoadWeights(CommandContext& ctx, const SortArgs& a, SortKeyLocks& locks,
                 std::vector<SortItem>* items, bool* bad_double) {
  std::vector<ScratchEntry> scratch;
  std::string key_buf, value;
  for (SortItem& it : *items) {
    const std::string* v = nullptr;
    if (a.by.has_value()) {
      const PatternValue r = LookupPattern(ctx, locks, *a.by, it.elem, &scratch, &key_buf, &value);
      if (r == PatternValue::kLockFailed) return Stop(ctx, locks);
      if (r == PatternValue::kNone) continue;  // score 0, no ALPHA weight
      v = &value;
    }
    if (a.alpha) {
      if (v != nullptr) {
        it.weight = *v;
        it.has_weight = true;
      }
      continue;
    }
    if (v == nullptr) {
      value.assign(it.elem);
      v = &value;
    }
    if (!ParseWeight(*v, &it.score)) *bad_double = true;
  }
  return true;
}

// The values of the output range, one per GET per item (nullopt: nil);
// false to stop.
bool LoadGets(CommandContext& ctx, const SortArgs& a, SortKeyLocks& locks,
              const std::vector<SortItem>& items, int64_t start, int64_t end,
              std::vector<std::optional<std::string>>* out) {
  std::vector<ScratchEntry> scratch;
  std::string key_buf, value;
  for (int64_t j = start; j <= end; ++j) {
    for (const SortPattern& p : a.gets) {
      const PatternValue r = LookupPattern(ctx, locks, p, items[static_cast<size_t>(j)].elem,
                                           &scratch, &key_buf, &value);
      if (r == PatternValue::kLockFailed) return Stop(ctx, locks);
      if (r == PatternValue::kFound) {
        out->emplace_back(value);
      } else {
        out->emplace_back(std::nullopt);
      }
    }
  }
  return true;
}

void SortGeneric(CommandContext& ctx, bool read_only) {
  ctx.dirty = 0;  // only a STORE changes anything
  SortArgs a;
  if (!ParseSortArgs(ctx, read_only, &a)) return;
  const std::string key = ctx.Key(1);
  CollectionBase* src = nullptr;
  engine::ValueType type = engine::ValueType::kList;
  const LoadStatus st = LoadAnyCollection(ctx, key, &src, &type);
  if (st == LoadStatus::kWrongType || (st == LoadStatus::kOk && type == engine::ValueType::kHash)) {
    ctx.WrongType();
    return;
  }
  // An unsorted set would come out in an order of its own: when it is
  // stored, or read by a script, Redis sorts it (ALPHA) so the result is
  // the same everywhere.
  if (a.dontsort && type == engine::ValueType::kSet && (a.store != 0 || ctx.script_db != nullptr)) {
    a.dontsort = false;
    a.alpha = true;
    a.by.reset();
  }
  std::vector<std::string> owned;
  std::vector<SortItem> items;
  int64_t start = 0, end = -1;
  LoadItems(src, type, a, &owned, &items, &start, &end);

  SortKeyLocks locks(ctx);
  if (!a.dontsort) {
    bool bad_double = false;
    if (!LoadWeights(ctx, a, locks, &items, &bad_double)) return;
    if (bad_double) {
      ctx.Error("ERR One or more scores can't be converted into double");
      return;
    }
    const bool alpha = a.alpha, by = a.by.has_value(), desc = a.desc;
    // Stable, as glibc's qsort (a merge sort) is for Redis: items whose
    // ALPHA weights tie keep the source's order.
    std::stable_sort(items.begin(), items.end(), [&](const SortItem& x, const SortItem& y) {
      const int c = CompareItems(x, y, alpha, by);
      return desc ? c > 0 : c < 0;
    });
  }
  const int64_t n = end >= start ? end - start + 1 : 0;
  std::vector<std::optional<std::string>> got;
  if (!a.gets.empty() && !LoadGets(ctx, a, locks, items, start, end, &got)) return;
  const size_t out_len = a.gets.empty() ? static_cast<size_t>(n) : got.size();

  if (a.store == 0) {
    ctx.w->ArrayHeader(out_len);
    if (a.gets.empty()) {
      for (int64_t j = start; j <= end; ++j) ctx.w->Bulk(items[static_cast<size_t>(j)].elem);
    } else {
      for (const std::optional<std::string>& v : got) {
        if (v.has_value()) {
          ctx.w->Bulk(*v);
        } else {
          ctx.w->Null();
        }
      }
    }
    return;
  }
  // STORE: the destination's stripe is held (its key spec), unless a call
  // names it where Redis's key finder does not look (STORE after an option
  // that takes "store" as its argument): then it is locked like a pattern's.
  const std::string dst = ctx.Key(a.store);
  if (!locks.Acquire(dst)) {
    Stop(ctx, locks);
    return;
  }
  if (out_len == 0) {
    // An empty result deletes the destination (and tells WATCH).
    ctx.dirty = ctx.engine->UnlinkLocked(dst, ctx.ts) ? 1 : 0;
    ctx.w->Integer(0);
    return;
  }
  // Built before the store: items may view the destination's old value.
  auto list = std::make_unique<ListValue>();
  if (a.gets.empty()) {
    for (int64_t j = start; j <= end; ++j) list->PushBack(items[static_cast<size_t>(j)].elem);
  } else {
    for (const std::optional<std::string>& v : got) list->PushBack(v.has_value() ? *v : "");
  }
  if (StoreNewCollection(ctx, dst, ListValue::kType, std::move(list)) == nullptr) return;
  ctx.dirty = static_cast<int64_t>(out_len);
  ctx.w->Integer(static_cast<int64_t>(out_len));
}

void CmdSort(CommandContext& ctx) { SortGeneric(ctx, false); }
void CmdSortRo(CommandContext& ctx) { SortGeneric(ctx, true); }

// SORT's keys as Redis's sortGetKeys finds them: the sorted key, and the
// argument after the last STORE, skipping LIMIT's two arguments and BY's
// and GET's one.
void SortKeys(std::span<const std::string_view> argv, std::vector<size_t>* out) {
  if (argv.size() < 2) return;
  out->push_back(1);
  size_t store = 0;
  for (size_t i = 2; i < argv.size(); ++i) {
    if (EqualsIgnoreCase(argv[i], "limit")) {
      i += 2;
    } else if (EqualsIgnoreCase(argv[i], "get") || EqualsIgnoreCase(argv[i], "by")) {
      i += 1;
    } else if (EqualsIgnoreCase(argv[i], "store") && i + 1 < argv.size()) {
      store = i + 1;  // not skipped: Redis reads on from the destination
    }
  }
  if (store != 0) out->push_back(store);
}

// SORT_RO's one key; a key finder all the same, so that COMMAND INFO shows
// movablekeys as Redis does (its BY/GET key spec is "unknown").
void SortRoKeys(std::span<const std::string_view> argv, std::vector<size_t>* out) {
  if (argv.size() >= 2) out->push_back(1);
}

}  // namespace

void RegisterSortCommands(std::vector<CommandSpec>* t) {
  const CommandAdder add{t, "generic"};
  add("sort", -2, kCmdWrite | kCmdDenyOom, 1, 1, CmdSort,
      "Sorts the elements in a list, a set, or a sorted set, optionally storing the result.",
      "1.0.0", SortKeys);
  add("sort_ro", -2, kCmdReadonly, 1, 1, CmdSortRo,
      "Returns the sorted elements of a list, a set, or a sorted set.", "7.0.0", SortRoKeys);
}

}  // namespace trove::resp
