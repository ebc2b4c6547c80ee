// The geo searches: GEOSEARCH, GEOSEARCHSTORE, GEORADIUS, GEORADIUSBYMEMBER
// and their _RO forms, one parser and one scan for all (Redis's
// georadiusGeneric order of checks and replies). Run on the connection's
// worker with the keys' stripes held.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/resp/commands/geo_internal.h"
#include "protocol/resp/core/command_table.h"
#include "protocol/resp/core/resp_server.h"
#include "protocol/resp/types/collections.h"
#include "protocol/resp/types/geohash.h"
#include "protocol/resp/types/keyspace.h"
#include "protocol/resp/types/zset_common.h"

namespace trove::resp {
namespace {

// Which command is parsing: where its centre comes from and what it may store.
enum SearchFlag : uint32_t {
  kFromLonLat = 1u << 0,   // GEORADIUS(_RO): lon lat radius unit
  kFromMember = 1u << 1,   // GEORADIUSBYMEMBER(_RO): member radius unit
  kNoStore = 1u << 2,      // the _RO forms: STORE and STOREDIST are syntax errors
  kSearch = 1u << 3,       // GEOSEARCH(STORE): FROM* and BY* options
  kSearchStore = 1u << 4,  // GEOSEARCHSTORE: destination at argv[1], STOREDIST a flag
};

// A member inside the search shape. member points into the source set: valid
// until the set changes.
struct Found {
  double lon, lat;
  double dist;  // metres from the centre
  double score;
  std::string_view member;
};

// The members of v whose scores fall in `cell`, appended to out when inside
// the shape; stops once out holds `limit` (0: no limit).
void CollectCell(const ZsetValue& v, geo::HashBits cell, const geo::Shape& s, size_t limit,
                 std::vector<Found>* out) {
  geo::HashBits next = cell;
  ++next.bits;
  // Integers below 2^54 with their low bits clear: exact as doubles.
  const auto lo = static_cast<double>(geo::Align52(cell));
  const auto hi = static_cast<double>(geo::Align52(next));
  const std::set<Entry>& all = v.ordered();
  // The empty member sorts first, so this is the first entry scoring >= lo.
  for (auto it = all.lower_bound(Entry(lo, std::string())); it != all.end() && it->first < hi;
       ++it) {
    double xy[2], dist;
    geo::ScoreToLonLat(it->first, xy);
    if (geo::InShape(s, xy[0], xy[1], &dist)) {
      out->push_back(Found{xy[0], xy[1], dist, it->first, it->second});
      if (limit != 0 && out->size() >= limit) return;
    }
  }
}

// Every member of v inside the shape, in scan order: the centre cell, then
// its neighbours (geo::Neighbour order), each by ascending score.
void CollectAll(const ZsetValue& v, const geo::Shape& s, size_t limit, std::vector<Found>* out) {
  const geo::SearchCells sc = geo::CellsForShape(s);
  size_t last = 0;  // the cell scanned last; 0 also while only the centre was
  for (size_t i = 0; i < sc.cells.size(); ++i) {
    const geo::HashBits c = sc.cells[i];
    if (c.zero()) continue;
    // With huge radii neighbours coincide; a cell equal to the neighbour
    // scanned just before is skipped, as Redis skips it (the centre is not
    // compared, which Redis's cells never need).
    if (last != 0 && c == sc.cells[last]) continue;
    if (limit != 0 && out->size() >= limit) break;
    CollectCell(v, c, s, limit, out);
    last = i;
  }
}

enum class Order : uint8_t { kNone, kAsc, kDesc };

// The scratch list of matches, reused by every search on this worker
// thread. Invariant: a search never runs inside another one on the same
// thread (a script's GEOSEARCH runs from EVAL, not from a geo command), so
// one list suffices, cleared at each search's start.
std::vector<Found>& FoundScratch() {
  thread_local std::vector<Found> found;
  found.clear();
  return found;
}

void SearchGeneric(CommandContext& ctx, size_t src_at, uint32_t flags) {
  ctx.dirty = 0;
  ZsetValue* v;
  if (!ReadCollection(ctx, ctx.Key(src_at), &v)) return;
  geo::Shape shape;
  size_t base;
  size_t store_at = 0;  // argv index of the destination; 0: none
  bool storedist = false;
  if (flags & kFromLonLat) {
    base = 6;
    double xy[2];
    if (!ArgLonLat(ctx, 2, xy)) return;
    shape.lon = xy[0];
    shape.lat = xy[1];
    if (!ArgRadius(ctx, 4, &shape)) return;
  } else if (flags & kFromMember) {
    base = 5;
    // A missing key answers empty: the member, radius and unit go unread.
    if (v != nullptr) {
      if (!MemberLonLat(ctx, *v, ctx.argv[2], &shape)) return;
      if (!ArgRadius(ctx, 3, &shape)) return;
    }
  } else {
    base = 2;
    if (flags & kSearchStore) {
      base = 3;
      store_at = 1;
    }
  }

  bool withdist = false, withhash = false, withcoord = false, any = false;
  bool from_member = false, from_lonlat = false, by_radius = false, by_box = false;
  Order order = Order::kNone;
  int64_t count = 0;  // 0: no limit
  const size_t argc = ctx.argc();
  const bool search = (flags & kSearch) != 0;
  for (size_t i = base; i < argc; ++i) {
    const std::string_view a = ctx.argv[i];
    const size_t left = argc - i - 1;  // arguments after a
    const bool store_word = EqualsIgnoreCase(a, "store") || EqualsIgnoreCase(a, "storedist");
    if (EqualsIgnoreCase(a, "withdist")) {
      withdist = true;
    } else if (EqualsIgnoreCase(a, "withhash")) {
      withhash = true;
    } else if (EqualsIgnoreCase(a, "withcoord")) {
      withcoord = true;
    } else if (EqualsIgnoreCase(a, "any")) {
      any = true;
    } else if (EqualsIgnoreCase(a, "asc")) {
      order = Order::kAsc;
    } else if (EqualsIgnoreCase(a, "desc")) {
      order = Order::kDesc;
    } else if (EqualsIgnoreCase(a, "count") && left >= 1) {
      if (!ArgInt(ctx, ctx.argv[i + 1], &count)) return;
      if (count <= 0) {
        ctx.Error("ERR COUNT must be > 0");
        return;
      }
      ++i;
    } else if (store_word && left >= 1 && !(flags & (kNoStore | kSearch))) {
      store_at = i + 1;  // the last STORE or STOREDIST wins
      storedist = EqualsIgnoreCase(a, "storedist");
      ++i;
    } else if (EqualsIgnoreCase(a, "storedist") && (flags & kSearchStore)) {
      storedist = true;
    } else if (EqualsIgnoreCase(a, "frommember") && left >= 1 && search && !from_lonlat) {
      if (v != nullptr && !MemberLonLat(ctx, *v, ctx.argv[i + 1], &shape)) return;
      from_member = true;
      ++i;
    } else if (EqualsIgnoreCase(a, "fromlonlat") && left >= 2 && search && !from_member) {
      double xy[2];
      if (!ArgLonLat(ctx, i + 1, xy)) return;
      shape.lon = xy[0];
      shape.lat = xy[1];
      from_lonlat = true;
      i += 2;
    } else if (EqualsIgnoreCase(a, "byradius") && left >= 2 && search && !by_box) {
      if (!ArgRadius(ctx, i + 1, &shape)) return;
      by_radius = true;
      i += 2;
    } else if (EqualsIgnoreCase(a, "bybox") && left >= 3 && search && !by_radius) {
      if (!ArgBox(ctx, i + 1, &shape)) return;
      by_box = true;
      i += 3;
    } else {
      ctx.SyntaxError();
      return;
    }
  }

  if (store_at != 0 && (withdist || withhash || withcoord)) {
    ctx.Error((flags & kSearchStore)
                  ? "ERR GEOSEARCHSTORE is not compatible with WITHDIST, WITHHASH and WITHCOORD "
                    "options"
                  : "ERR STORE option in GEORADIUS is not compatible with WITHDIST, WITHHASH and "
                    "WITHCOORD options");
    return;
  }
  if (search && !(from_member || from_lonlat)) {
    std::string msg = "ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for ";
    msg.append(ctx.argv[0]);
    ctx.Error(msg);
    return;
  }
  if (search && !(by_radius || by_box)) {
    std::string msg = "ERR exactly one of BYRADIUS and BYBOX can be specified for ";
    msg.append(ctx.argv[0]);
    ctx.Error(msg);
    return;
  }
  if (any && count == 0) {
    ctx.Error("ERR the ANY argument requires COUNT argument");
    return;
  }
  // The seam locked the keys GeoStoreKeys named; this parse finds one of
  // them on every call that gets here, and the check keeps a write from
  // ever reaching an unlocked key.
  if (!search && store_at != 0) {
    std::vector<size_t> named;  // only STORE calls, which allocate their result anyway
    GeoStoreKeys(ctx.argv, base, &named);
    if (std::find(named.begin(), named.end(), store_at) == named.end()) {
      ctx.SyntaxError();
      return;
    }
  }

  if (v == nullptr) {
    if (store_at != 0) {
      ctx.dirty = ctx.engine->UnlinkLocked(ctx.Key(store_at), ctx.ts) ? 1 : 0;
      ctx.w->Integer(0);
    } else {
      ctx.w->ArrayHeader(0);
    }
    return;
  }
  // COUNT keeps the nearest, so it implies ASC; with ANY it keeps the first found.
  if (count != 0 && order == Order::kNone && !any) order = Order::kAsc;

  std::vector<Found>& found = FoundScratch();
  CollectAll(*v, shape, any ? static_cast<size_t>(count) : 0, &found);
  if (found.empty() && store_at == 0) {
    ctx.w->ArrayHeader(0);
    return;
  }
  const size_t returned =
      count == 0 ? found.size() : std::min(found.size(), static_cast<size_t>(count));
  // Stable: equal distances keep their scan order (glibc's merge-sort qsort).
  if (order == Order::kAsc) {
    std::stable_sort(found.begin(), found.end(),
                     [](const Found& a, const Found& b) { return a.dist < b.dist; });
  } else if (order == Order::kDesc) {
    std::stable_sort(found.begin(), found.end(),
                     [](const Found& a, const Found& b) { return a.dist > b.dist; });
  }

  if (store_at == 0) {
    const size_t extras = size_t{withdist} + size_t{withhash} + size_t{withcoord};
    ctx.w->ArrayHeader(returned);
    for (size_t i = 0; i < returned; ++i) {
      const Found& f = found[i];
      if (extras != 0) ctx.w->ArrayHeader(extras + 1);
      ctx.w->Bulk(f.member);
      if (withdist) WriteDistance(ctx, f.dist / shape.to_meters);
      if (withhash) ctx.w->Integer(static_cast<int64_t>(f.score));
      if (withcoord) {
        const double xy[2] = {f.lon, f.lat};
        WriteLonLat(ctx, xy);
      }
    }
    return;
  }

  // The result is copied out of the source before the destination goes:
  // they may be the same key.
  auto z = std::make_unique<ZsetValue>();
  for (size_t i = 0; i < returned; ++i) {
    const Found& f = found[i];
    z->Put(f.member, storedist ? f.dist / shape.to_meters : f.score);
  }
  found.clear();
  const std::string dst = ctx.Key(store_at);
  const bool existed = ctx.engine->UnlinkLocked(dst, ctx.ts);
  if (returned > 0) {
    CheckZsetEncoding(ctx, z.get());
    if (StoreNewCollection(ctx, dst, ZsetValue::kType, std::move(z)) == nullptr) return;
    ctx.dirty = static_cast<int64_t>(returned);
  } else {
    ctx.dirty = existed ? 1 : 0;
  }
  ctx.w->Integer(static_cast<int64_t>(returned));
}

}  // namespace

void GeoStoreKeys(std::span<const std::string_view> argv, size_t from, std::vector<size_t>* out) {
  const size_t n = argv.size();
  const size_t begin = out->size();
  // The key specs: a keyword's first match before the last argument.
  for (const std::string_view word : {std::string_view("store"), std::string_view("storedist")}) {
    for (size_t i = from; i + 1 < n; ++i) {
      if (EqualsIgnoreCase(argv[i], word)) {
        out->push_back(i + 1);
        break;
      }
    }
  }
  // georadiusGetKeys: the last of either, skipping each one's key.
  size_t last = 0;
  for (size_t i = 5; i + 1 < n; ++i) {
    if (EqualsIgnoreCase(argv[i], "store") || EqualsIgnoreCase(argv[i], "storedist")) {
      last = ++i;
    }
  }
  if (last != 0 && std::find(out->begin() + static_cast<std::ptrdiff_t>(begin), out->end(),
                             last) == out->end()) {
    out->push_back(last);
  }
}

void GeoRadiusKeys(std::span<const std::string_view> argv, std::vector<size_t>* out) {
  out->push_back(1);
  GeoStoreKeys(argv, 6, out);
}

void GeoRadiusByMemberKeys(std::span<const std::string_view> argv, std::vector<size_t>* out) {
  out->push_back(1);
  GeoStoreKeys(argv, 5, out);
}

void CmdGeoRadius(CommandContext& ctx) { SearchGeneric(ctx, 1, kFromLonLat); }
void CmdGeoRadiusRo(CommandContext& ctx) { SearchGeneric(ctx, 1, kFromLonLat | kNoStore); }
void CmdGeoRadiusByMember(CommandContext& ctx) { SearchGeneric(ctx, 1, kFromMember); }
void CmdGeoRadiusByMemberRo(CommandContext& ctx) {
  SearchGeneric(ctx, 1, kFromMember | kNoStore);
}
void CmdGeoSearch(CommandContext& ctx) { SearchGeneric(ctx, 1, kSearch); }
void CmdGeoSearchStore(CommandContext& ctx) { SearchGeneric(ctx, 2, kSearch | kSearchStore); }

}  // namespace trove::resp
