// What the geo command files share (geo.cc: GEOADD GEOPOS GEODIST GEOHASH
// and registration; geo_search.cc: the searches): argument readers and
// reply writers with Redis's error texts and formats.
#pragma once

#include <cstddef>
#include <span>
#include <string_view>
#include <vector>

#include "protocol/resp/core/command.h"
#include "protocol/resp/types/collections.h"
#include "protocol/resp/types/geohash.h"

namespace trove::resp {

// Reads argv[at], argv[at + 1] as a longitude and a latitude inside the
// indexable area; false after the error reply.
bool ArgLonLat(CommandContext& ctx, size_t at, double xy[2]);
// A unit name (m, km, ft, mi; any case) as the metres in one unit; false
// after the error reply.
bool ArgUnit(CommandContext& ctx, std::string_view u, double* to_meters);
// "<radius> <unit>" at argv[at] into s (a circle); false after the error reply.
bool ArgRadius(CommandContext& ctx, size_t at, geo::Shape* s);
// "<width> <height> <unit>" at argv[at] into s (a box); false after the error reply.
bool ArgBox(CommandContext& ctx, size_t at, geo::Shape* s);
// The position of `member` of v as the centre of s; false after the error
// reply when it is not a member.
bool MemberLonLat(CommandContext& ctx, const ZsetValue& v, std::string_view member,
                  geo::Shape* s);

// A distance as Redis prints it: four decimals, a bulk string in both protocols.
void WriteDistance(CommandContext& ctx, double d);
// A [longitude, latitude] pair in Redis 7.0's human long-double form.
void WriteLonLat(CommandContext& ctx, const double xy[2]);

// The argv indexes of the destinations a GEORADIUS (options from argv[6])
// or GEORADIUSBYMEMBER (from argv[5]) call names, appended to out:
// Redis 7's key specs give the word after the first STORE and the one after
// the first STOREDIST (COMMAND GETKEYS, ACL); the command itself stores
// into the word after the last of either (Redis's georadiusGetKeys), which
// is added when it is not one of those. The KeysFns and the handler share
// it, so the handler writes only a key whose stripe the seam holds.
void GeoStoreKeys(std::span<const std::string_view> argv, size_t from, std::vector<size_t>* out);
// The KeysFns: the source, then GeoStoreKeys.
void GeoRadiusKeys(std::span<const std::string_view> argv, std::vector<size_t>* out);
void GeoRadiusByMemberKeys(std::span<const std::string_view> argv, std::vector<size_t>* out);

// The search commands (geo_search.cc).
void CmdGeoRadius(CommandContext& ctx);
void CmdGeoRadiusRo(CommandContext& ctx);
void CmdGeoRadiusByMember(CommandContext& ctx);
void CmdGeoRadiusByMemberRo(CommandContext& ctx);
void CmdGeoSearch(CommandContext& ctx);
void CmdGeoSearchStore(CommandContext& ctx);

}  // namespace trove::resp
