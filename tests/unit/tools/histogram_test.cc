// Tests for trove-bench's LatencyHistogram (tools/bench/histogram.h).
#include "histogram.h"

#include <algorithm>
#include <cmath>
#include <gtest/gtest.h>
#include <vector>

#include "key_chooser.h"

namespace trove::bench {
namespace {

TEST(LatencyHistogramTest, EmptyReportsZero) {
  LatencyHistogram h;
  EXPECT_EQ(h.count(), 0u);
  EXPECT_EQ(h.Percentile(50), 0u);
  EXPECT_EQ(h.max(), 0u);
  EXPECT_EQ(h.min(), 0u);
}

TEST(LatencyHistogramTest, SmallValuesAreExact) {
  LatencyHistogram h;
  for (uint64_t v = 0; v < 256; ++v) h.Record(v);
  EXPECT_EQ(h.Percentile(50), 127u);  // rank 128 of 0..255
  EXPECT_EQ(h.Percentile(100), 255u);
  EXPECT_EQ(h.min(), 0u);
}

TEST(LatencyHistogramTest, BucketsTileTheRangeWithoutGaps) {
  for (int b = 1; b < LatencyHistogram::kBucketCount; ++b) {
    ASSERT_EQ(LatencyHistogram::BucketLow(b - 1) + LatencyHistogram::BucketWidth(b - 1),
              LatencyHistogram::BucketLow(b))
        << b;
  }
  for (uint64_t v : {uint64_t{0}, uint64_t{127}, uint64_t{128}, uint64_t{1000}, uint64_t{123456789},
                     uint64_t{1} << 39}) {
    int b = LatencyHistogram::BucketOf(v);
    EXPECT_LE(LatencyHistogram::BucketLow(b), v);
    EXPECT_GT(LatencyHistogram::BucketLow(b) + LatencyHistogram::BucketWidth(b), v);
  }
}

TEST(LatencyHistogramTest, RelativeErrorBelowOnePercent) {
  // The value a bucket reports (its midpoint) is within 1% of every value in
  // it, for values from 1 ns to ~17 s.
  Rng rng(7);
  for (int i = 0; i < 200000; ++i) {
    uint64_t v = 1 + (rng.Next() >> (30 + rng.Below(34)));
    int b = LatencyHistogram::BucketOf(v);
    uint64_t mid = LatencyHistogram::BucketLow(b) + LatencyHistogram::BucketWidth(b) / 2;
    double err =
        std::fabs(static_cast<double>(mid) - static_cast<double>(v)) / static_cast<double>(v);
    ASSERT_LT(err, 0.01) << "value " << v << " reported as " << mid;
  }
  // And through the public API, with a far max so clamping to max can't help.
  for (int i = 0; i < 500; ++i) {
    uint64_t v = 1 + (rng.Next() >> (30 + rng.Below(34)));
    LatencyHistogram h;
    h.Record(v);
    h.Record(v + 1000000000000ULL);
    double got = static_cast<double>(h.Percentile(50));
    ASSERT_LT(std::fabs(got - static_cast<double>(v)) / static_cast<double>(v), 0.01) << v;
  }
}

TEST(LatencyHistogramTest, PercentilesMatchSortedSamples) {
  Rng rng(42);
  std::vector<uint64_t> samples;
  LatencyHistogram h;
  for (int i = 0; i < 100000; ++i) {
    // Log-uniform latencies between 10 us and 100 ms.
    double us = 10.0 * std::pow(10000.0, rng.NextDouble());
    uint64_t ns = static_cast<uint64_t>(us * 1000);
    samples.push_back(ns);
    h.Record(ns);
  }
  std::sort(samples.begin(), samples.end());
  for (double p : {50.0, 90.0, 99.0, 99.9}) {
    size_t rank = static_cast<size_t>(std::ceil(p / 100 * samples.size()));
    double exact = static_cast<double>(samples[rank - 1]);
    double got = static_cast<double>(h.Percentile(p));
    EXPECT_NEAR(got, exact, exact * 0.01) << "p" << p;
  }
  EXPECT_EQ(h.max(), samples.back());
  EXPECT_EQ(h.min(), samples.front());
  EXPECT_EQ(h.count(), samples.size());
}

TEST(LatencyHistogramTest, MergeEqualsRecordingIntoOne) {
  LatencyHistogram a, b, both;
  for (uint64_t v = 1; v < 50000; v += 7) {
    (v % 3 ? a : b).Record(v * 13);
    both.Record(v * 13);
  }
  a.Merge(b);
  EXPECT_EQ(a.count(), both.count());
  EXPECT_EQ(a.max(), both.max());
  EXPECT_EQ(a.min(), both.min());
  EXPECT_DOUBLE_EQ(a.mean(), both.mean());
  for (double p : {1.0, 50.0, 99.0, 99.99}) EXPECT_EQ(a.Percentile(p), both.Percentile(p));
}

TEST(LatencyHistogramTest, HugeValuesClampIntoLastBucketButMaxIsExact) {
  LatencyHistogram h;
  uint64_t huge = uint64_t{1} << 60;
  h.Record(huge);
  EXPECT_EQ(LatencyHistogram::BucketOf(huge), LatencyHistogram::kBucketCount - 1);
  EXPECT_EQ(h.max(), huge);
  EXPECT_EQ(h.Percentile(100), huge);
}

TEST(LatencyHistogramTest, ResetForgetsEverything) {
  LatencyHistogram h;
  h.Record(5000);
  h.Reset();
  EXPECT_EQ(h.count(), 0u);
  h.Record(10);
  EXPECT_EQ(h.Percentile(50), 10u);
  EXPECT_EQ(h.max(), 10u);
}

}  // namespace
}  // namespace trove::bench
