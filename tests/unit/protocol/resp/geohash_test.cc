// The geohash maths of the GEO commands (types/geohash.h), against values
// read from redis-server 7.0.15: stored scores, decoded centres as Redis
// prints them, GEOHASH strings, distances, the score cast, and the search
// cells covering every point inside a shape.
#include "protocol/resp/types/geohash.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <numbers>
#include <random>
#include <string>

#include "protocol/resp/core/resp_writer.h"

namespace trove::resp::geo {
namespace {

uint64_t StoredScore(double lon, double lat) {
  HashBits h;
  EXPECT_TRUE(EncodeStored(lon, lat, kStepMax, &h));
  return Align52(h);
}

std::string Centre(double score) {
  double xy[2];
  ScoreToLonLat(score, xy);
  return FormatLongDouble(xy[0]) + " " + FormatLongDouble(xy[1]);
}

std::string Hash(double score) {
  const std::array<char, 11> h = GeohashString(score);
  return std::string(h.data(), h.size());
}

// Redis's four-decimal distance, as an integer count of 1/10000 units.
long long Ten4(double d) { return std::llrint(d * 10000.0); }

TEST(GeohashTest, StoredScoresMatchRedis) {
  EXPECT_EQ(StoredScore(13.361389, 38.115556), 3479099956230698u);  // Palermo
  EXPECT_EQ(StoredScore(15.087269, 37.502669), 3479447370796909u);  // Catania
  // geo.tcl's "Check geoset values".
  EXPECT_EQ(StoredScore(-74.0131604, 40.7126674), 1791873972053020u);
  EXPECT_EQ(StoredScore(-73.9903085, 40.7362513), 1791875485187452u);
  EXPECT_EQ(StoredScore(-73.9733487, 40.7648057), 1791875761332224u);
  EXPECT_EQ(StoredScore(-73.9564142, 40.7480973), 1791875796750882u);
  EXPECT_EQ(StoredScore(-73.9454966, 40.747533), 1791875804419201u);
  EXPECT_EQ(StoredScore(-73.9375699, 40.7498929), 1791875830079666u);
  EXPECT_EQ(StoredScore(-73.7858139, 40.6428986), 1791895905559723u);
}

TEST(GeohashTest, UpperEdgesKeepTheBitPastTheLastCell) {
  EXPECT_EQ(StoredScore(180, kLatMax), 13510798882111488u);  // 3 * 2^52
  EXPECT_EQ(StoredScore(180, 0), 10133099161583616u);
  EXPECT_EQ(StoredScore(0, 0), 3377699720527872u);
  EXPECT_EQ(StoredScore(-180, kLatMin), 0u);
  HashBits h;
  EXPECT_FALSE(EncodeStored(180.0000001, 0, kStepMax, &h));
  EXPECT_FALSE(EncodeStored(0, 85.06, kStepMax, &h));
  EXPECT_FALSE(ValidLonLat(-180.5, 0));
  EXPECT_TRUE(ValidLonLat(-180, kLatMin));
}

TEST(GeohashTest, CentresPrintAsRedisPrintsThem) {
  EXPECT_EQ(Centre(3479099956230698.0), "13.36138933897018433 38.11555639549629859");
  EXPECT_EQ(Centre(3479447370796909.0), "15.08726745843887329 37.50266842333162032");
  // Past the last cell: clamped to the indexable area.
  EXPECT_EQ(Centre(13510798882111488.0), "180 85.0511287799999991");
  EXPECT_EQ(Centre(0), "-179.99999731779098511 -85.05112751263942528");
  EXPECT_EQ(Centre(10133099161583616.0), "180 0.00000126736058093");
  EXPECT_EQ(Centre(3377699720527872.0), "0.00000268220901489 0.00000126736058093");
  // Scores no GEOADD stores decode too, through Redis's cast (ZADD k -1 m).
  EXPECT_EQ(Centre(-1), "180 85.0511287799999991");
  EXPECT_EQ(Centre(1e300), Centre(0));
  EXPECT_EQ(Centre(3), "-179.99999195337295532 -85.05112497791824921");
}

TEST(GeohashTest, ScoreCastFollowsX86) {
  EXPECT_EQ(ScoreToBits(3), 3u);
  EXPECT_EQ(ScoreToBits(-1), ~uint64_t{0});
  EXPECT_EQ(ScoreToBits(-0.5), 0u);
  EXPECT_EQ(ScoreToBits(1e300), 0u);
  EXPECT_EQ(ScoreToBits(9223372036854775808.0), uint64_t{1} << 63);
  EXPECT_EQ(ScoreToBits(-1e300), uint64_t{1} << 63);
  EXPECT_EQ(ScoreToBits(std::numeric_limits<double>::quiet_NaN()), uint64_t{1} << 63);
}

TEST(GeohashTest, GeohashStringsMatchRedis) {
  EXPECT_EQ(Hash(3479099956230698.0), "sqc8b49rny0");
  EXPECT_EQ(Hash(3479447370796909.0), "sqdtr74hyu0");
  EXPECT_EQ(Hash(static_cast<double>(StoredScore(-5.6, 42.6))), "ezs42e44yx0");  // Wikipedia
  EXPECT_EQ(Hash(13510798882111488.0), "bp05b5048p0");
  EXPECT_EQ(Hash(0), "00bh0hbj200");
  EXPECT_EQ(Hash(10133099161583616.0), "80000000000");
  EXPECT_EQ(Hash(3377699720527872.0), "s0000000000");
  EXPECT_EQ(Hash(3), "00bh0hbj210");
}

TEST(GeohashTest, DistancesMatchRedis) {
  double p[2], c[2];
  ScoreToLonLat(3479099956230698.0, p);
  ScoreToLonLat(3479447370796909.0, c);
  const double d = Distance(p[0], p[1], c[0], c[1]);
  EXPECT_EQ(Ten4(d), 1662741516);            // 166274.1516 m
  EXPECT_EQ(Ten4(d / 1000), 1662742);        // 166.2742 km
  EXPECT_EQ(Ten4(d / 1609.34), 1033182);     // 103.3182 mi
  EXPECT_EQ(Ten4(d / 0.3048), 5455188700);   // 545518.8700 ft
  EXPECT_EQ(Distance(p[0], p[1], p[0], p[1]), 0);
  // Same meridian: the latitude difference alone.
  EXPECT_EQ(Distance(10, 20, 10, 30), LatDistance(20, 30));
  EXPECT_NEAR(LatDistance(0, 1), kEarthRadiusM * std::numbers::pi / 180, 1e-6);
  // GEORADIUS Sicily 15 37 200 km WITHDIST: 56.4413 and 190.4424.
  EXPECT_EQ(Ten4(Distance(15, 37, c[0], c[1]) / 1000), 564413);
  EXPECT_EQ(Ten4(Distance(15, 37, p[0], p[1]) / 1000), 1904424);
}

TEST(GeohashTest, NeighboursAreTheAdjacentCellsAndWrap) {
  HashBits h;
  ASSERT_TRUE(EncodeStored(13.361389, 38.115556, 10, &h));
  Area a;
  ASSERT_TRUE(Decode(kStoredLon, kStoredLat, h, &a));
  const double w = a.lon.max - a.lon.min, ht = a.lat.max - a.lat.min;
  const int dx[8] = {0, 0, 1, -1, 1, -1, 1, -1};
  const int dy[8] = {1, -1, 0, 0, 1, 1, -1, -1};
  const std::array<HashBits, 8> nb = Neighbours(h);
  for (size_t i = 0; i < nb.size(); ++i) {
    Area n;
    ASSERT_TRUE(Decode(kStoredLon, kStoredLat, nb[i], &n)) << i;
    EXPECT_EQ(nb[i].step, 10);
    EXPECT_NEAR(n.lon.min, a.lon.min + dx[i] * w, 1e-9) << i;
    EXPECT_NEAR(n.lat.min, a.lat.min + dy[i] * ht, 1e-9) << i;
  }
  // The cell at the west and south edges: its west and south neighbours
  // wrap to the east and north edges.
  HashBits corner;
  ASSERT_TRUE(EncodeStored(-180, kLatMin, 4, &corner));
  EXPECT_EQ(corner.bits, 0u);
  const std::array<HashBits, 8> cn = Neighbours(corner);
  Area west, south;
  ASSERT_TRUE(Decode(kStoredLon, kStoredLat, cn[kWest], &west));
  ASSERT_TRUE(Decode(kStoredLon, kStoredLat, cn[kSouth], &south));
  EXPECT_DOUBLE_EQ(west.lon.max, 180);
  EXPECT_DOUBLE_EQ(south.lat.max, kLatMax);
  // Step 1: a 2 x 2 grid, where east and west are the same cell.
  HashBits one;
  ASSERT_TRUE(EncodeStored(-90, -40, 1, &one));
  const std::array<HashBits, 8> on = Neighbours(one);
  EXPECT_EQ(on[kEast], on[kWest]);
  EXPECT_EQ(on[kNorth], on[kSouth]);
}

TEST(GeohashTest, StepEstimateFollowsRedis) {
  EXPECT_EQ(EstimateStep(0, 0), 26);
  EXPECT_EQ(EstimateStep(5000, 0), 11);
  EXPECT_EQ(EstimateStep(5000, 70), 10);
  EXPECT_EQ(EstimateStep(5000, -85), 9);
  EXPECT_EQ(EstimateStep(1, 0), 24);
  EXPECT_EQ(EstimateStep(1e8, 0), 1);
}

TEST(GeohashTest, InShapeCirclesAndBoxes) {
  Shape c;
  c.lon = 15;
  c.lat = 37;
  c.radius = 200;
  c.to_meters = 1000;
  double d = -1;
  EXPECT_TRUE(InShape(c, 15.08726745843887329, 37.50266842333162032, &d));
  EXPECT_EQ(Ten4(d / 1000), 564413);
  EXPECT_TRUE(InShape(c, 13.36138933897018433, 38.11555639549629859, &d));
  c.radius = 190;
  EXPECT_FALSE(InShape(c, 13.36138933897018433, 38.11555639549629859, &d));
  Shape b;
  b.kind = Shape::Kind::kBox;
  b.lon = 15;
  b.lat = 37;
  b.width = 400;
  b.height = 2;
  b.to_meters = 1000;
  EXPECT_TRUE(InShape(b, 12.75, 36.995, &d));  // geo.tcl "long and narrow"
  EXPECT_FALSE(InShape(b, 12.75, 36.5, &d));
  EXPECT_FALSE(InShape(b, 12.0, 37.0, &d));
}

// Whether `score` lies in one of the search cells.
bool Covered(const SearchCells& sc, uint64_t score) {
  for (const HashBits& c : sc.cells) {
    if (c.zero()) continue;
    HashBits next = c;
    ++next.bits;
    if (score >= Align52(c) && score < Align52(next)) return true;
  }
  return false;
}

// geo.tcl's fuzzy tests in brief: every stored point inside a radius or a
// box falls in a cell the search scans (between -70 and 70 degrees, as
// there; radii up to 5,000 km, boxes up to 5,000 x 5,000 km).
TEST(GeohashTest, SearchCellsCoverEveryPointInTheShape) {
  std::mt19937_64 rng(20240);
  std::uniform_real_distribution<double> lon(-180, 180), lat(-70, 70), unit(0, 1);
  int inside = 0;
  for (int round = 0; round < 300; ++round) {
    Shape s;
    s.lon = lon(rng);
    s.lat = lat(rng);
    s.to_meters = 1000;
    const double scale = round % 10 == 0 ? 5000 : 200;
    if (round % 2 == 0) {
      s.radius = 10 + unit(rng) * scale;
    } else {
      s.kind = Shape::Kind::kBox;
      s.width = 10 + unit(rng) * scale;
      s.height = 10 + unit(rng) * scale;
    }
    const SearchCells sc = CellsForShape(s);
    for (int k = 0; k < 400; ++k) {
      // Points near the centre, so that many fall inside.
      double plon = s.lon + (unit(rng) - 0.5) * scale / 40;
      if (plon > 180) plon -= 360;
      if (plon < -180) plon += 360;
      const double plat = std::clamp(s.lat + (unit(rng) - 0.5) * scale / 40, -85.0, 85.0);
      const uint64_t score = StoredScore(plon, plat);
      double xy[2], d;
      ScoreToLonLat(static_cast<double>(score), xy);
      if (!InShape(s, xy[0], xy[1], &d)) continue;
      ++inside;
      EXPECT_TRUE(Covered(sc, score)) << round << " " << plon << "," << plat;
    }
  }
  EXPECT_GT(inside, 10000);
}

// geo.tcl's pole and antimeridian cases: GEORADIUSBYMEMBER from n1 finds n2.
TEST(GeohashTest, SearchCellsReachAcrossPolesAndTheAntimeridian) {
  struct Case {
    double lon1, lat1, lon2, lat2, meters;
  };
  const Case cases[] = {{-0.15307903289794921875, 85, 0.3515625, 85.00019260486917005437, 4891.94},
                        {-4.95211958885192871094, 85, 11.25, 85.0511, 156544},
                        {-45, 65.50900022111811438208, 90, 85.0511, 5009431},
                        {45, 65, -135, 85.05, 5009431},
                        {179.5, 36, -179.5, 36, 200000}};
  for (const Case& c : cases) {
    double centre[2], other[2], d;
    ScoreToLonLat(static_cast<double>(StoredScore(c.lon1, c.lat1)), centre);
    const uint64_t score2 = StoredScore(c.lon2, c.lat2);
    ScoreToLonLat(static_cast<double>(score2), other);
    Shape s;
    s.lon = centre[0];
    s.lat = centre[1];
    s.radius = c.meters;
    ASSERT_TRUE(InShape(s, other[0], other[1], &d)) << c.lon2;
    EXPECT_TRUE(Covered(CellsForShape(s), score2)) << c.lon2 << "," << c.lat2;
  }
}

}  // namespace
}  // namespace trove::resp::geo
