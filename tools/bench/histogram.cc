// LatencyHistogram bucket arithmetic and percentiles (any thread, see header).
#include "histogram.h"

#include <cmath>
#include <limits>

namespace trove::bench {

void LatencyHistogram::Reset() {
  buckets_.fill(0);
  count_ = 0;
  sum_ = 0;
  max_ = 0;
  min_ = std::numeric_limits<uint64_t>::max();
}

void LatencyHistogram::Merge(const LatencyHistogram& o) {
  for (int i = 0; i < kBucketCount; ++i) buckets_[i] += o.buckets_[i];
  count_ += o.count_;
  sum_ += o.sum_;
  if (o.count_ && o.max_ > max_) max_ = o.max_;
  if (o.count_ && o.min_ < min_) min_ = o.min_;
}

uint64_t LatencyHistogram::BucketLow(int b) {
  if (b < static_cast<int>(kSubCount)) return static_cast<uint64_t>(b);
  uint64_t shift = static_cast<uint64_t>(b) / kSubCount - 1;
  uint64_t sub = static_cast<uint64_t>(b) % kSubCount;
  return (kSubCount + sub) << shift;
}

uint64_t LatencyHistogram::BucketWidth(int b) {
  if (b < static_cast<int>(kSubCount)) return 1;
  return uint64_t{1} << (static_cast<uint64_t>(b) / kSubCount - 1);
}

uint64_t LatencyHistogram::Percentile(double p) const {
  if (count_ == 0) return 0;
  if (p >= 100.0) return max_;
  double want = std::ceil(p / 100.0 * static_cast<double>(count_));
  uint64_t rank = want < 1 ? 1 : static_cast<uint64_t>(want);
  uint64_t seen = 0;
  for (int b = 0; b < kBucketCount; ++b) {
    seen += buckets_[b];
    if (seen >= rank) {
      uint64_t mid = BucketLow(b) + BucketWidth(b) / 2;
      if (mid > max_) mid = max_;
      if (mid < min_) mid = min_;
      return mid;
    }
  }
  return max_;
}

}  // namespace trove::bench
