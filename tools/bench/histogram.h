// LatencyHistogram: log-linear buckets over nanoseconds for trove-bench.
// Each load thread owns one; the main thread merges them after the run.
#pragma once

#include <array>
#include <cstdint>

namespace trove::bench {

// Records values (nanoseconds) into buckets that split each power of two into
// 128 equal parts, so a bucket is at most 1/128 of its lower bound wide and the
// reported value (the bucket midpoint) is within 0.4% of any recorded value.
// Values below 128 are exact. Values past ~2^40 ns (18 minutes) land in the
// last bucket; the exact maximum is kept aside.
//
// Thread safety: not thread-safe; one owner thread records, and Merge() runs
// after the owners have stopped.
//
// Invariants:
//  1. count_ == sum of buckets_.
//  2. max_ >= every recorded value; min_ <= every recorded value.
class LatencyHistogram {
 public:
  static constexpr int kSubBits = 7;
  static constexpr uint64_t kSubCount = uint64_t{1} << kSubBits;
  static constexpr int kMaxShift = 34;
  static constexpr int kBucketCount = static_cast<int>((kMaxShift + 1) * kSubCount);

  LatencyHistogram() { Reset(); }

  void Record(uint64_t v) {
    ++buckets_[BucketOf(v)];
    ++count_;
    sum_ += v;
    if (v > max_) max_ = v;
    if (v < min_) min_ = v;
  }
  void Merge(const LatencyHistogram& o);
  void Reset();

  uint64_t count() const { return count_; }
  uint64_t max() const { return count_ ? max_ : 0; }
  uint64_t min() const { return count_ ? min_ : 0; }
  double mean() const {
    return count_ ? static_cast<double>(sum_) / static_cast<double>(count_) : 0;
  }

  // The value at percentile p (0 < p <= 100): the midpoint of the bucket that
  // holds the ceil(p/100 * count)-th smallest value, clamped to [min, max].
  // 0 when empty.
  uint64_t Percentile(double p) const;

  static int BucketOf(uint64_t v) {
    if (v < kSubCount) return static_cast<int>(v);
    int msb = 63 - __builtin_clzll(v);
    int shift = msb - kSubBits;
    if (shift > kMaxShift - 1) return kBucketCount - 1;
    return static_cast<int>((static_cast<uint64_t>(shift) + 1) * kSubCount +
                            ((v >> shift) - kSubCount));
  }
  // Smallest value of bucket b and its width.
  static uint64_t BucketLow(int b);
  static uint64_t BucketWidth(int b);

 private:
  std::array<uint64_t, kBucketCount> buckets_;
  uint64_t count_;
  uint64_t sum_;
  uint64_t max_;
  uint64_t min_;
};

}  // namespace trove::bench
