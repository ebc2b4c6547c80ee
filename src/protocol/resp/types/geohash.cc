// Geohash cells, neighbours, search cells and distances (see geohash.h for
// why each formula keeps Redis's exact order of operations). Any thread.
#include "protocol/resp/types/geohash.h"

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <numbers>

namespace trove::resp::geo {
namespace {

// Degrees to radians and back, by the same constant Redis uses (pi / 180
// rounded once to a double), multiplying one way and dividing the other.
constexpr double kDegToRad = std::numbers::pi / 180.0;
double Rad(double deg) { return deg * kDegToRad; }
double Deg(double rad) { return rad / kDegToRad; }

// Web Mercator's half circumference: the radius at which the search step
// estimate stops doubling.
constexpr double kMercatorMax = 20037726.37;

constexpr uint64_t kEvenBits = 0x5555555555555555ULL;  // latitude
constexpr uint64_t kOddBits = 0xaaaaaaaaaaaaaaaaULL;   // longitude

// Moves the 32 bits of v to the even bit positions of the result.
uint64_t Spread(uint32_t v) {
  uint64_t x = v;
  x = (x | (x << 16)) & 0x0000FFFF0000FFFFULL;
  x = (x | (x << 8)) & 0x00FF00FF00FF00FFULL;
  x = (x | (x << 4)) & 0x0F0F0F0F0F0F0F0FULL;
  x = (x | (x << 2)) & 0x3333333333333333ULL;
  x = (x | (x << 1)) & kEvenBits;
  return x;
}

// The inverse of Spread: the even bits of v, packed into 32 bits.
uint32_t Gather(uint64_t v) {
  uint64_t x = v & kEvenBits;
  x = (x | (x >> 1)) & 0x3333333333333333ULL;
  x = (x | (x >> 2)) & 0x0F0F0F0F0F0F0F0FULL;
  x = (x | (x >> 4)) & 0x00FF00FF00FF00FFULL;
  x = (x | (x >> 8)) & 0x0000FFFF0000FFFFULL;
  x = (x | (x >> 16)) & 0x00000000FFFFFFFFULL;
  return static_cast<uint32_t>(x);
}

bool RangeZero(Range r) { return r.min == 0 && r.max == 0; }

// Steps the axis held in the `axis` bits of h (kOddBits: longitude,
// kEvenBits: latitude) by +1 or -1, wrapping within the cell's 2*step bits;
// the other axis is kept. Adding 1 to a field whose gaps are all ones
// carries straight through the gaps; subtracting 1 borrows through them,
// and the mask clears what leaked into the gaps.
void Step(HashBits* h, uint64_t axis, int d) {
  const int width = h->step * 2;
  const uint64_t in_cell = width >= 64 ? ~0ULL : ((1ULL << width) - 1);
  const uint64_t mask = axis & in_cell;
  const uint64_t gaps = ~axis & in_cell;
  uint64_t field = h->bits & axis;
  const uint64_t other = h->bits & ~axis;
  field = d > 0 ? ((field | gaps) + 1) & mask : (field - 1) & mask;
  h->bits = field | other;
}

// The corners of a shape's bounding box: {min lon, min lat, max lon, max
// lat}. Meridians converge away from the equator, so the box is widest on
// the side nearer the equator: that side's longitude span bounds both.
std::array<double, 4> BoundingBox(const Shape& s) {
  const bool circle = s.kind == Shape::Kind::kRadius;
  const double height = s.to_meters * (circle ? s.radius : s.height / 2);
  const double width = s.to_meters * (circle ? s.radius : s.width / 2);
  const double lat_delta = Deg(height / kEarthRadiusM);
  const double lon_delta_top = Deg(width / kEarthRadiusM / std::cos(Rad(s.lat + lat_delta)));
  const double lon_delta_bottom = Deg(width / kEarthRadiusM / std::cos(Rad(s.lat - lat_delta)));
  const bool southern = s.lat < 0;
  const double lon_delta = southern ? lon_delta_bottom : lon_delta_top;
  return {s.lon - lon_delta, s.lat - lat_delta, s.lon + lon_delta, s.lat + lat_delta};
}

}  // namespace

bool Encode(Range lon_range, Range lat_range, double lon, double lat, int step, HashBits* out) {
  if (step <= 0 || step > 32 || RangeZero(lat_range) || RangeZero(lon_range)) return false;
  if (!ValidLonLat(lon, lat)) return false;
  out->bits = 0;
  out->step = static_cast<uint8_t>(step);
  if (lat < lat_range.min || lat > lat_range.max || lon < lon_range.min || lon > lon_range.max) {
    return false;
  }
  double lat_offset = (lat - lat_range.min) / (lat_range.max - lat_range.min);
  double lon_offset = (lon - lon_range.min) / (lon_range.max - lon_range.min);
  const auto cells = static_cast<double>(uint64_t{1} << step);
  lat_offset *= cells;
  lon_offset *= cells;
  // A point on the upper edge gives exactly 2^step, one past the last cell:
  // Redis keeps that bit (a score of 2^52 or more), so Trove does too.
  out->bits = Spread(static_cast<uint32_t>(lat_offset)) |
              (Spread(static_cast<uint32_t>(lon_offset)) << 1);
  return true;
}

bool EncodeStored(double lon, double lat, int step, HashBits* out) {
  return Encode(kStoredLon, kStoredLat, lon, lat, step, out);
}

bool Decode(Range lon_range, Range lat_range, HashBits h, Area* out) {
  if (h.zero() || RangeZero(lat_range) || RangeZero(lon_range)) return false;
  const uint32_t ilat = Gather(h.bits);
  const uint32_t ilon = Gather(h.bits >> 1);
  // 32-bit arithmetic on purpose: Redis's ilat + 1 wraps at 2^32.
  const uint32_t ilat_next = ilat + 1;
  const uint32_t ilon_next = ilon + 1;
  const auto cells = static_cast<double>(uint64_t{1} << h.step);
  const double lat_scale = lat_range.max - lat_range.min;
  const double lon_scale = lon_range.max - lon_range.min;
  out->lat.min = lat_range.min + (ilat * 1.0 / cells) * lat_scale;
  out->lat.max = lat_range.min + (ilat_next * 1.0 / cells) * lat_scale;
  out->lon.min = lon_range.min + (ilon * 1.0 / cells) * lon_scale;
  out->lon.max = lon_range.min + (ilon_next * 1.0 / cells) * lon_scale;
  return true;
}

uint64_t Align52(HashBits h) { return h.bits << (52 - h.step * 2); }

uint64_t ScoreToBits(double score) {
  // cvttsd2si semantics: truncation toward zero, 2^63 for NaN and anything
  // out of int64 range; values from 2^63 up are converted less 2^63.
  constexpr double kTwo63 = 9223372036854775808.0;
  constexpr uint64_t kIndefinite = uint64_t{1} << 63;
  auto to_int64 = [&](double d) -> uint64_t {
    if (!(d >= -kTwo63 && d < kTwo63)) return kIndefinite;  // NaN included
    return static_cast<uint64_t>(static_cast<int64_t>(d));
  };
  if (score >= kTwo63) return to_int64(score - kTwo63) ^ kIndefinite;
  return to_int64(score);
}

void ScoreToLonLat(double score, double xy[2]) {
  Area a;
  Decode(kStoredLon, kStoredLat, HashBits{ScoreToBits(score), kStepMax}, &a);
  xy[0] = (a.lon.min + a.lon.max) / 2;
  if (xy[0] > kLonMax) xy[0] = kLonMax;
  if (xy[0] < kLonMin) xy[0] = kLonMin;
  xy[1] = (a.lat.min + a.lat.max) / 2;
  if (xy[1] > kLatMax) xy[1] = kLatMax;
  if (xy[1] < kLatMin) xy[1] = kLatMin;
}

std::array<HashBits, 8> Neighbours(HashBits h) {
  // {longitude step, latitude step} of each neighbour, in Neighbour order.
  static constexpr int kMoves[8][2] = {{0, 1},  {0, -1}, {1, 0},  {-1, 0},
                                       {1, 1},  {-1, 1}, {1, -1}, {-1, -1}};
  std::array<HashBits, 8> out;
  for (size_t i = 0; i < out.size(); ++i) {
    out[i] = h;
    if (kMoves[i][0] != 0) Step(&out[i], kOddBits, kMoves[i][0]);
    if (kMoves[i][1] != 0) Step(&out[i], kEvenBits, kMoves[i][1]);
  }
  return out;
}

double LatDistance(double lat1, double lat2) {
  return kEarthRadiusM * std::fabs(Rad(lat2) - Rad(lat1));
}

double Distance(double lon1, double lat1, double lon2, double lat2) {
  const double lon1r = Rad(lon1);
  const double lon2r = Rad(lon2);
  const double v = std::sin((lon2r - lon1r) / 2);
  // Same meridian: the haversine reduces to the latitude difference.
  if (v == 0.0) return LatDistance(lat1, lat2);
  const double lat1r = Rad(lat1);
  const double lat2r = Rad(lat2);
  const double u = std::sin((lat2r - lat1r) / 2);
  const double a = u * u + std::cos(lat1r) * std::cos(lat2r) * v * v;
  return 2.0 * kEarthRadiusM * std::asin(std::sqrt(a));
}

bool InShape(const Shape& s, double lon, double lat, double* dist) {
  if (s.kind == Shape::Kind::kRadius) {
    const double d = Distance(s.lon, s.lat, lon, lat);
    if (d > s.radius * s.to_meters) return false;
    *dist = d;
    return true;
  }
  // A box: within half the height along the meridian, then within half the
  // width along the point's own parallel (cheapest test first).
  const double width_m = s.width * s.to_meters;
  const double height_m = s.height * s.to_meters;
  if (LatDistance(lat, s.lat) > height_m / 2) return false;
  if (Distance(lon, lat, s.lon, lat) > width_m / 2) return false;
  *dist = Distance(s.lon, s.lat, lon, lat);
  return true;
}

int EstimateStep(double meters, double lat) {
  if (meters == 0) return kStepMax;
  int step = 1;
  while (meters < kMercatorMax) {
    meters *= 2;
    ++step;
  }
  step -= 2;  // one cell and its neighbours then cover the radius in most cases
  // Cells narrow towards the poles: take bigger ones there.
  if (lat > 66 || lat < -66) {
    --step;
    if (lat > 80 || lat < -80) --step;
  }
  if (step < 1) step = 1;
  if (step > kStepMax) step = kStepMax;
  return step;
}

SearchCells CellsForShape(const Shape& s) {
  const std::array<double, 4> box = BoundingBox(s);
  const double min_lon = box[0], min_lat = box[1], max_lon = box[2], max_lat = box[3];
  // A box is covered by the circle through its corners.
  const double half_w = s.width / 2, half_h = s.height / 2;
  double radius_m =
      s.kind == Shape::Kind::kRadius ? s.radius : std::sqrt(half_w * half_w + half_h * half_h);
  radius_m *= s.to_meters;
  int step = EstimateStep(radius_m, s.lat);

  HashBits centre;
  std::array<HashBits, 8> nb;
  Area area;
  auto at_step = [&](int st) {
    EncodeStored(s.lon, s.lat, st, &centre);
    nb = Neighbours(centre);
    Decode(kStoredLon, kStoredLat, centre, &area);
  };
  at_step(step);
  // Near a cell's edge the estimate can be one step too fine: a neighbour
  // then ends inside the bounding box, and the search needs bigger cells.
  Area n, so, e, w;
  Decode(kStoredLon, kStoredLat, nb[kNorth], &n);
  Decode(kStoredLon, kStoredLat, nb[kSouth], &so);
  Decode(kStoredLon, kStoredLat, nb[kEast], &e);
  Decode(kStoredLon, kStoredLat, nb[kWest], &w);
  const bool too_fine = n.lat.max < max_lat || so.lat.min > min_lat || e.lon.max < max_lon ||
                        w.lon.min > min_lon;
  if (step > 1 && too_fine) at_step(--step);

  // Neighbours on a side the bounding box does not reach hold no match.
  if (step >= 2) {
    auto drop = [&](std::initializer_list<Neighbour> which) {
      for (Neighbour k : which) nb[k] = HashBits{};
    };
    if (area.lat.min < min_lat) drop({kSouth, kSouthWest, kSouthEast});
    if (area.lat.max > max_lat) drop({kNorth, kNorthEast, kNorthWest});
    if (area.lon.min < min_lon) drop({kWest, kSouthWest, kNorthWest});
    if (area.lon.max > max_lon) drop({kEast, kSouthEast, kNorthEast});
  }
  SearchCells out;
  out.cells[0] = centre;
  for (size_t i = 0; i < nb.size(); ++i) out.cells[i + 1] = nb[i];
  return out;
}

std::array<char, 11> GeohashString(double score) {
  static constexpr char kAlphabet[] = "0123456789bcdefghjkmnpqrstuvwxyz";
  double xy[2];
  ScoreToLonLat(score, xy);
  HashBits h;
  Encode(kStoredLon, kStandardLat, xy[0], xy[1], kStepMax, &h);
  std::array<char, 11> out;
  for (size_t i = 0; i < 10; ++i) {
    const auto shift = static_cast<unsigned>(52 - (i + 1) * 5);
    out[i] = kAlphabet[(h.bits >> shift) & 0x1f];
  }
  out[10] = '0';  // 52 bits fill ten characters and two bits of an eleventh
  return out;
}

}  // namespace trove::resp::geo
