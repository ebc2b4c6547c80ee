// The geohash maths behind the GEO commands (commands/geo.cc): the 52-bit
// interleaved cell a point falls in (a geo set's sorted-set score, as Redis
// stores it), a cell's bounds and centre, its eight neighbours, the cells a
// radius or box search scans, haversine distances, and the 11-character
// GEOHASH string. Pure functions of their arguments: any thread.
//
// Every formula follows Redis's (geohash.c, geohash_helper.c) operation for
// operation, in the same order and precision, so that scores, decoded
// coordinates and distances match redis-server to the last printed digit:
// reordering a sum or folding a constant differently changes the digits.
#pragma once

#include <array>
#include <cstdint>

namespace trove::resp::geo {

// The indexable area: Web Mercator's latitude limits (EPSG:3857), so the
// poles themselves cannot be stored.
inline constexpr double kLonMin = -180;
inline constexpr double kLonMax = 180;
inline constexpr double kLatMin = -85.05112878;
inline constexpr double kLatMax = 85.05112878;
// Bits per axis of a stored score: 26 + 26 = 52, exact in a double.
inline constexpr int kStepMax = 26;
// Redis's earth radius (a quadratic mean for WGS-84), in metres.
inline constexpr double kEarthRadiusM = 6372797.560856;

// A cell: `step` bits of each axis, interleaved (longitude in the odd bits,
// latitude in the even ones). Step 0 with bits 0 is "no cell" (a pruned
// search neighbour).
struct HashBits {
  uint64_t bits = 0;
  uint8_t step = 0;
  bool zero() const { return bits == 0 && step == 0; }
  bool operator==(const HashBits&) const = default;
};

struct Range {
  double min = 0, max = 0;
};

// A cell's bounds.
struct Area {
  Range lon, lat;
};

// The stored range (kLon*/kLat*) and the standard geohash one (latitude
// -90..90) that GEOHASH strings use.
inline constexpr Range kStoredLon{kLonMin, kLonMax};
inline constexpr Range kStoredLat{kLatMin, kLatMax};
inline constexpr Range kStandardLat{-90, 90};

// True when (lon, lat) lies in the indexable area (GEOADD's check).
inline bool ValidLonLat(double lon, double lat) {
  return lon >= kLonMin && lon <= kLonMax && lat >= kLatMin && lat <= kLatMax;
}

// The cell of (lon, lat) at `step` (1..32) within the given ranges; false
// when the point is outside the indexable area or the ranges.
bool Encode(Range lon_range, Range lat_range, double lon, double lat, int step, HashBits* out);
// Encode over the stored ranges.
bool EncodeStored(double lon, double lat, int step, HashBits* out);
// The bounds of `h` within the given ranges; false for a zero cell.
bool Decode(Range lon_range, Range lat_range, HashBits h, Area* out);

// A step-`step` cell as a 52-bit score prefix (shifted left to 52 bits).
uint64_t Align52(HashBits h);
// The 64 bits Redis reads from a sorted-set score (its C cast of a double
// to uint64_t on x86-64, including what that gives for negative or huge
// scores that no GEOADD stores).
uint64_t ScoreToBits(double score);
// The cell centre a stored score stands for, clamped to the indexable
// area: what GEOPOS and WITHCOORD report. xy[0] longitude, xy[1] latitude.
void ScoreToLonLat(double score, double xy[2]);

// The eight neighbours of a cell, wrapping around at the edges. Index order
// is the order searches scan them in (kNorth ... kSouthWest).
enum Neighbour { kNorth, kSouth, kEast, kWest, kNorthEast, kNorthWest, kSouthEast, kSouthWest };
std::array<HashBits, 8> Neighbours(HashBits h);

// Great-circle (haversine) distance in metres between two points in degrees.
double Distance(double lon1, double lat1, double lon2, double lat2);
// The distance along a meridian between two latitudes.
double LatDistance(double lat1, double lat2);

// A search shape centred on (lon, lat): a circle of `radius`, or a box of
// `width` x `height`, in a unit of `to_meters` metres.
struct Shape {
  enum class Kind : uint8_t { kRadius, kBox } kind = Kind::kRadius;
  double lon = 0, lat = 0;
  double radius = 0, width = 0, height = 0;
  double to_meters = 1;
};

// Whether the point (lon, lat) is inside the shape; *dist (metres) is its
// distance from the centre when it is.
bool InShape(const Shape& s, double lon, double lat, double* dist);

// The cells a search must scan: the centre cell, then its neighbours in
// Neighbour order, the ones that cannot hold a match zeroed. Each cell is
// the score range [Align52(c), Align52(c with bits + 1)).
struct SearchCells {
  std::array<HashBits, 9> cells;
};
SearchCells CellsForShape(const Shape& s);
// The precision (step) of the cells for a search of `meters` around `lat`.
int EstimateStep(double meters, double lat);

// The 11-character standard geohash of a stored score (GEOHASH): the cell
// centre encoded again over latitude -90..90, 52 bits in base32, and a
// final '0' for the bits that 52 do not fill.
std::array<char, 11> GeohashString(double score);

}  // namespace trove::resp::geo
