// LatencyBucket against Redis 7.0.15's reported bounds, and HistogramSlots.
// Test thread only.
#include "protocol/resp/services/latency_histogram.h"

#include <gtest/gtest.h>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/resp/core/command_table.h"

namespace trove::resp {
namespace {

int64_t Bound(int64_t usec) { return LatencyBucketUpperUsec(LatencyBucket(usec)); }

TEST(LatencyHistogramTest, BucketBoundsAreRedisOnes) {
  const int64_t want[] = {1,     2,     4,     8,      16,     33,     66,
                          132,   264,   528,   1056,   2113,   4227,   8454,
                          16908, 33816, 67633, 135266, 270532, 541065, 1073741};
  for (int k = 0; k < kLatencyBuckets; ++k) EXPECT_EQ(LatencyBucketUpperUsec(k), want[k]) << k;
}

TEST(LatencyHistogramTest, CallsLandInTheFirstBucketThatHoldsThem) {
  // Values checked against redis-server 7.0.15 (DEBUG SLEEP, then LATENCY HISTOGRAM).
  EXPECT_EQ(Bound(0), 1);
  EXPECT_EQ(Bound(1), 1);
  EXPECT_EQ(Bound(2), 2);
  EXPECT_EQ(Bound(3), 4);
  EXPECT_EQ(Bound(16), 16);
  EXPECT_EQ(Bound(17), 33);
  EXPECT_EQ(Bound(33), 33);
  EXPECT_EQ(Bound(34), 66);
  EXPECT_EQ(Bound(264), 264);
  EXPECT_EQ(Bound(265), 528);
  EXPECT_EQ(Bound(20216), 33816);
  EXPECT_EQ(Bound(300000), 541065);
  EXPECT_EQ(Bound(600000), 1073741);
  EXPECT_EQ(Bound(int64_t{1} << 40), 1073741);  // above 1 s: clamped as Redis
  EXPECT_EQ(Bound(-5), 1);
}

TEST(LatencyHistogramTest, AddCountsIntoTheBucket) {
  LatencyHistogram h;
  h.Add(3);
  h.Add(4);
  EXPECT_EQ(h.buckets[2].load(), 2u);
  EXPECT_EQ(h.buckets[0].load(), 0u);
}

const std::string& NameOf(std::initializer_list<std::string_view> words) {
  const HistogramSlots& slots = HistogramSlots::Get();
  std::vector<std::string_view> argv(words);
  const CommandSpec* spec = CommandTable::Get().Find(argv[0]);
  static const std::string kNone = "(none)";
  const int s = slots.SlotOf(*spec, argv);
  return s < 0 ? kNone : slots.name(static_cast<size_t>(s));
}

TEST(HistogramSlotsTest, ContainersRecordPerSubcommand) {
  EXPECT_EQ(NameOf({"GET", "k"}), "get");
  EXPECT_EQ(NameOf({"client", "ID"}), "client|id");
  EXPECT_EQ(NameOf({"CONFIG", "resetstat"}), "config|resetstat");
  EXPECT_EQ(NameOf({"command"}), "command");
  EXPECT_EQ(NameOf({"command", "count"}), "command|count");
  EXPECT_EQ(NameOf({"slowlog", "get", "1"}), "slowlog|get");
  EXPECT_EQ(NameOf({"client", "nosuch"}), "(none)");
}

TEST(HistogramSlotsTest, NamesResolveAsRedisLookupCommand) {
  const HistogramSlots& slots = HistogramSlots::Get();
  std::vector<int> v;
  slots.SlotsNamed("CLIENT|Id", &v);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(slots.name(static_cast<size_t>(v[0])), "client|id");
  v.clear();
  slots.SlotsNamed("config", &v);
  ASSERT_EQ(v.size(), 6u);  // the parent, then get help resetstat rewrite set
  EXPECT_EQ(slots.name(static_cast<size_t>(v[0])), "config");
  EXPECT_EQ(slots.name(static_cast<size_t>(v[3])), "config|resetstat");
  v.clear();
  slots.SlotsNamed("nosuch", &v);
  slots.SlotsNamed("get|x", &v);
  slots.SlotsNamed("client|nosuch", &v);
  EXPECT_TRUE(v.empty());
  slots.AllSlots(&v);
  EXPECT_EQ(v.size(), slots.size());
}

}  // namespace
}  // namespace trove::resp
