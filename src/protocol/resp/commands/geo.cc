// Geo commands: GEOADD GEOPOS GEODIST GEOHASH, and the searches GEOSEARCH
// GEOSEARCHSTORE GEORADIUS GEORADIUSBYMEMBER (+ their _RO forms). A geo set
// is a sorted set whose scores are 52-bit geohashes (types/geohash.h), as in
// Redis, so every sorted-set command works on it. Run on the connection's
// worker with the keys' stripes held.
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "protocol/resp/commands/geo_internal.h"
#include "protocol/resp/core/command_table.h"
#include "protocol/resp/core/resp_server.h"
#include "protocol/resp/types/collections.h"
#include "protocol/resp/types/geohash.h"
#include "protocol/resp/types/keyspace.h"
#include "protocol/resp/types/zset_common.h"

namespace trove::resp {

bool ArgLonLat(CommandContext& ctx, size_t at, double xy[2]) {
  if (!ArgDouble(ctx, ctx.argv[at], &xy[0]) || !ArgDouble(ctx, ctx.argv[at + 1], &xy[1])) {
    return false;
  }
  if (!geo::ValidLonLat(xy[0], xy[1])) {
    char msg[1024];  // "%f" of the largest double is 316 characters
    std::snprintf(msg, sizeof msg, "ERR invalid longitude,latitude pair %f,%f", xy[0], xy[1]);
    ctx.Error(msg);
    return false;
  }
  return true;
}

bool ArgUnit(CommandContext& ctx, std::string_view u, double* to_meters) {
  if (EqualsIgnoreCase(u, "m")) {
    *to_meters = 1;
  } else if (EqualsIgnoreCase(u, "km")) {
    *to_meters = 1000;
  } else if (EqualsIgnoreCase(u, "ft")) {
    *to_meters = 0.3048;
  } else if (EqualsIgnoreCase(u, "mi")) {
    *to_meters = 1609.34;
  } else {
    ctx.Error("ERR unsupported unit provided. please use M, KM, FT, MI");
    return false;
  }
  return true;
}

bool ArgRadius(CommandContext& ctx, size_t at, geo::Shape* s) {
  double r;
  if (!ArgDouble(ctx, ctx.argv[at], &r, "ERR need numeric radius")) return false;
  if (r < 0) {
    ctx.Error("ERR radius cannot be negative");
    return false;
  }
  s->radius = r;
  s->kind = geo::Shape::Kind::kRadius;
  return ArgUnit(ctx, ctx.argv[at + 1], &s->to_meters);
}

bool ArgBox(CommandContext& ctx, size_t at, geo::Shape* s) {
  double w, h;
  if (!ArgDouble(ctx, ctx.argv[at], &w, "ERR need numeric width") ||
      !ArgDouble(ctx, ctx.argv[at + 1], &h, "ERR need numeric height")) {
    return false;
  }
  if (h < 0 || w < 0) {
    ctx.Error("ERR height or width cannot be negative");
    return false;
  }
  s->width = w;
  s->height = h;
  s->kind = geo::Shape::Kind::kBox;
  return ArgUnit(ctx, ctx.argv[at + 2], &s->to_meters);
}

bool MemberLonLat(CommandContext& ctx, const ZsetValue& v, std::string_view member,
                  geo::Shape* s) {
  const double* score = v.Score(member);
  if (score == nullptr) {
    ctx.Error("ERR could not decode requested zset member");
    return false;
  }
  double xy[2];
  geo::ScoreToLonLat(*score, xy);
  s->lon = xy[0];
  s->lat = xy[1];
  return true;
}

// Redis's addReplyDoubleDistance: rounded to a whole number of 1/10000
// units by llrint (ties to even), then written with four decimals. A bulk
// string in RESP3 too.
void WriteDistance(CommandContext& ctx, double d) {
  long long units = std::llrint(d * 10000.0);
  char buf[48];
  const char* sign = "";
  unsigned long long u;
  if (units < 0) {
    sign = "-";
    u = 0ULL - static_cast<unsigned long long>(units);
  } else {
    u = static_cast<unsigned long long>(units);
  }
  const int n = std::snprintf(buf, sizeof buf, "%s%llu.%04llu", sign, u / 10000, u % 10000);
  ctx.w->Bulk(std::string_view(buf, static_cast<size_t>(n)));
}

// Coordinates are cell centres; addReplyHumanLongDouble's form, a RESP3 double.
void WriteLonLat(CommandContext& ctx, const double xy[2]) {
  ctx.w->ArrayHeader(2);
  ctx.w->HumanDouble(xy[0]);
  ctx.w->HumanDouble(xy[1]);
}

namespace {

// GEOADD key [NX|XX] [CH] lon lat member [lon lat member ...]: ZADD with
// each score the point's 52-bit geohash. Unlike ZADD, NX with XX (and no
// point at all) is a syntax error, and GT, LT and INCR are not options.
void CmdGeoAdd(CommandContext& ctx) {
  bool nx = false, xx = false, ch = false;
  size_t first = 2;
  for (; first < ctx.argc(); ++first) {
    std::string_view o = ctx.argv[first];
    if (EqualsIgnoreCase(o, "nx")) {
      nx = true;
    } else if (EqualsIgnoreCase(o, "xx")) {
      xx = true;
    } else if (EqualsIgnoreCase(o, "ch")) {
      ch = true;
    } else {
      break;
    }
  }
  const size_t rest = ctx.argc() - first;
  if (rest == 0 || rest % 3 != 0 || (nx && xx)) {
    ctx.SyntaxError();
    return;
  }
  // Every point is checked before the set is touched.
  std::vector<double> scores;
  scores.reserve(rest / 3);
  for (size_t i = first; i < ctx.argc(); i += 3) {
    double xy[2];
    if (!ArgLonLat(ctx, i, xy)) return;
    geo::HashBits h;
    geo::EncodeStored(xy[0], xy[1], geo::kStepMax, &h);
    scores.push_back(static_cast<double>(geo::Align52(h)));
  }
  const std::string key = ctx.Key(1);
  ZsetValue* v;
  if (!ReadCollection(ctx, key, &v)) return;
  if (v == nullptr) {
    if (xx) {
      ctx.dirty = 0;
      ctx.w->Integer(0);
      return;
    }
    v = LoadOrCreate<ZsetValue>(ctx, key);
    if (v == nullptr) return;
  }
  const size_t before = v->MemoryUsage();
  int64_t added = 0, changed = 0;
  for (size_t k = 0; k < scores.size(); ++k) {
    std::string_view member = ctx.argv[first + 3 * k + 2];
    const double* cur = v->Score(member);
    if (cur != nullptr) {
      if (nx || *cur == scores[k]) continue;
      v->Put(member, scores[k]);
      ++changed;
    } else {
      if (xx) continue;
      v->Put(member, scores[k]);
      ++added;
    }
  }
  // Nothing added or moved: the key is untouched (no event, no WATCH hit).
  if (added > 0 || changed > 0) FinishZset(ctx, key, v, before);
  ctx.dirty = added + changed;
  ctx.w->Integer(ch ? added + changed : added);
}

// GEOPOS and GEOHASH: one reply per member argument, none() for a member
// (or key) that is missing, found(score) for one that is there.
template <class None, class Found>
void ReplyPerMember(CommandContext& ctx, None none, Found found) {
  ZsetValue* v;
  if (!ReadCollection(ctx, ctx.Key(1), &v)) return;
  ctx.w->ArrayHeader(ctx.argc() - 2);
  for (size_t i = 2; i < ctx.argc(); ++i) {
    const double* score = v != nullptr ? v->Score(ctx.argv[i]) : nullptr;
    if (score == nullptr) {
      none();
    } else {
      found(*score);
    }
  }
}

// GEOPOS key member [member ...]: each member's cell centre, or a null.
void CmdGeoPos(CommandContext& ctx) {
  ReplyPerMember(
      ctx, [&] { ctx.w->NullArray(); },
      [&](double score) {
        double xy[2];
        geo::ScoreToLonLat(score, xy);
        WriteLonLat(ctx, xy);
      });
}

// GEODIST key member1 member2 [unit]: null when the key or a member is missing.
void CmdGeoDist(CommandContext& ctx) {
  double to_meters = 1;
  if (ctx.argc() == 5) {
    if (!ArgUnit(ctx, ctx.argv[4], &to_meters)) return;
  } else if (ctx.argc() > 5) {
    ctx.SyntaxError();
    return;
  }
  ZsetValue* v;
  if (!ReadExisting(ctx, ctx.Key(1), &v, [&] { ctx.w->Null(); })) return;
  const double* s1 = v->Score(ctx.argv[2]);
  const double* s2 = v->Score(ctx.argv[3]);
  if (s1 == nullptr || s2 == nullptr) {
    ctx.w->Null();
    return;
  }
  double a[2], b[2];
  geo::ScoreToLonLat(*s1, a);
  geo::ScoreToLonLat(*s2, b);
  WriteDistance(ctx, geo::Distance(a[0], a[1], b[0], b[1]) / to_meters);
}

// GEOHASH key member [member ...]: 11-character standard geohashes, or nulls.
void CmdGeoHash(CommandContext& ctx) {
  ReplyPerMember(
      ctx, [&] { ctx.w->Null(); },
      [&](double score) {
        const std::array<char, 11> h = geo::GeohashString(score);
        ctx.w->Bulk(std::string_view(h.data(), h.size()));
      });
}

}  // namespace

void RegisterGeoCommands(std::vector<CommandSpec>* t) {
  const uint32_t w = kCmdWrite | kCmdDenyOom;
  const uint32_t r = kCmdReadonly;
  const CommandAdder add{t, "geo"};
  add("geoadd", -5, w, 1, 1, CmdGeoAdd,
      "Adds one or more members to a geospatial index. The key is created if it doesn't exist.",
      "3.2.0");
  add("geodist", -4, r, 1, 1, CmdGeoDist,
      "Returns the distance between two members of a geospatial index.", "3.2.0");
  add("geohash", -2, r, 1, 1, CmdGeoHash,
      "Returns members from a geospatial index as geohash strings.", "3.2.0");
  add("geopos", -2, r, 1, 1, CmdGeoPos,
      "Returns the longitude and latitude of members from a geospatial index.", "3.2.0");
  // STORE and STOREDIST name more keys, found by GeoRadiusKeys and
  // GeoRadiusByMemberKeys (movable keys), so their stripes are held too.
  add("georadius", -6, w, 1, 1, CmdGeoRadius,
      "Queries a geospatial index for members within a distance from a coordinate, optionally "
      "stores the result.",
      "3.2.0", GeoRadiusKeys);
  add("georadius_ro", -6, r, 1, 1, CmdGeoRadiusRo,
      "Returns members from a geospatial index that are within a distance from a coordinate.",
      "3.2.10");
  add("georadiusbymember", -5, w, 1, 1, CmdGeoRadiusByMember,
      "Queries a geospatial index for members within a distance from a member, optionally stores "
      "the result.",
      "3.2.0", GeoRadiusByMemberKeys);
  add("georadiusbymember_ro", -5, r, 1, 1, CmdGeoRadiusByMemberRo,
      "Returns members from a geospatial index that are within a distance from a member.",
      "3.2.10");
  add("geosearch", -7, r, 1, 1, CmdGeoSearch,
      "Queries a geospatial index for members inside an area of a box or a circle.", "6.2.0");
  add("geosearchstore", -8, w, 1, 2, CmdGeoSearchStore,
      "Queries a geospatial index for members inside an area of a box or a circle, optionally "
      "stores the result.",
      "6.2.0");
}

}  // namespace trove::resp
