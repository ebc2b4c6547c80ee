// Tests for trove-bench's Rng, ZipfTable and KeyChooser (tools/bench/key_chooser.h).
#include "key_chooser.h"

#include <cmath>
#include <gtest/gtest.h>
#include <set>
#include <vector>

namespace trove::bench {
namespace {

TEST(RngTest, SameSeedSameSequence) {
  Rng a(99), b(99), c(100);
  bool differs = false;
  for (int i = 0; i < 100; ++i) {
    uint64_t x = a.Next();
    EXPECT_EQ(x, b.Next());
    differs |= x != c.Next();
  }
  EXPECT_TRUE(differs);
}

TEST(RngTest, BelowStaysInRangeAndIsRoughlyUniform) {
  Rng r(1);
  std::vector<int> counts(10);
  for (int i = 0; i < 100000; ++i) {
    uint64_t v = r.Below(10);
    ASSERT_LT(v, 10u);
    ++counts[v];
  }
  for (int c : counts) EXPECT_NEAR(c, 10000, 500);
  for (int i = 0; i < 1000; ++i) {
    double d = r.NextDouble();
    ASSERT_GE(d, 0.0);
    ASSERT_LT(d, 1.0);
  }
}

TEST(ZipfTableTest, ProbabilitiesFollowThePowerLaw) {
  ZipfTable z(1000, 1.0);
  double h = 0;
  for (int k = 1; k <= 1000; ++k) h += 1.0 / k;
  EXPECT_NEAR(z.Probability(0), 1.0 / h, 1e-9);
  EXPECT_NEAR(z.Probability(9), 1.0 / (10 * h), 1e-9);
  EXPECT_NEAR(z.Probability(0) / z.Probability(1), 2.0, 1e-9);
}

TEST(ZipfTableTest, SamplesMatchTheDistribution) {
  const double s = 0.99;
  ZipfTable z(100000, s);
  Rng r(5);
  std::vector<uint64_t> counts(100000);
  const int n = 300000;
  for (int i = 0; i < n; ++i) {
    uint64_t k = z.Sample(r.NextDouble());
    ASSERT_LT(k, 100000u);
    ++counts[k];
  }
  for (uint64_t k : {0, 1, 2, 9, 99}) {
    double want = z.Probability(k) * n;
    EXPECT_NEAR(static_cast<double>(counts[k]), want, 5 * std::sqrt(want) + 5) << "rank " << k;
  }
  EXPECT_EQ(z.Sample(0.0), 0u);
  EXPECT_EQ(z.Sample(0.999999999999), 99999u);
}

TEST(ZipfTableTest, ExponentAboveOneIsSupported) {
  ZipfTable z(100, 2.0);
  EXPECT_NEAR(z.Probability(0) / z.Probability(1), 4.0, 1e-9);
}

TEST(KeyChooserTest, SequentialSlicesCoverEveryKeyOnce) {
  const uint64_t keys = 103;
  const int conns = 4;
  std::vector<int> seen(keys);
  Rng r(1);
  for (int c = 0; c < conns; ++c) {
    KeyChooser kc(KeyPattern::kSequential, keys, c, conns, nullptr);
    uint64_t slice = (keys - c + conns - 1) / conns;
    for (uint64_t i = 0; i < slice; ++i) ++seen[kc.Next(r)];
    // The next lap starts over at the connection's first key.
    EXPECT_EQ(kc.Next(r), static_cast<uint64_t>(c));
  }
  for (uint64_t k = 0; k < keys; ++k) EXPECT_EQ(seen[k], 1) << k;
}

TEST(KeyChooserTest, UniformStaysInRange) {
  KeyChooser kc(KeyPattern::kUniform, 50, 0, 1, nullptr);
  Rng r(3);
  std::set<uint64_t> distinct;
  for (int i = 0; i < 5000; ++i) {
    uint64_t k = kc.Next(r);
    ASSERT_LT(k, 50u);
    distinct.insert(k);
  }
  EXPECT_EQ(distinct.size(), 50u);
}

TEST(KeyChooserTest, ZipfIsSkewedButScattered) {
  const uint64_t keys = 1000;
  ZipfTable z(keys, 1.2);
  KeyChooser kc(KeyPattern::kZipf, keys, 0, 1, &z);
  Rng r(11);
  std::vector<int> counts(keys);
  for (int i = 0; i < 200000; ++i) {
    uint64_t k = kc.Next(r);
    ASSERT_LT(k, keys);
    ++counts[k];
  }
  std::vector<int> sorted = counts;
  std::sort(sorted.rbegin(), sorted.rend());
  // The hottest key gets about P(rank 0) of the traffic.
  EXPECT_NEAR(sorted[0], z.Probability(0) * 200000, 0.05 * z.Probability(0) * 200000);
  // ...and it is not key 0: ranks are scattered over the key space.
  int hottest = static_cast<int>(std::max_element(counts.begin(), counts.end()) - counts.begin());
  EXPECT_NE(hottest, 0);
}

TEST(KeyChooserTest, ZipfScatterIsABijection) {
  // With an exponent near 0 every key is about equally likely, so each of
  // the 300 keys must show up: no two ranks map to the same key.
  const uint64_t keys = 300;
  ZipfTable z(keys, 0.01);
  KeyChooser kc(KeyPattern::kZipf, keys, 0, 1, &z);
  Rng r(2);
  std::set<uint64_t> distinct;
  for (int i = 0; i < 20000; ++i) distinct.insert(kc.Next(r));
  EXPECT_EQ(distinct.size(), keys);
}

}  // namespace
}  // namespace trove::bench
