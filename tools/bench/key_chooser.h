// Random numbers and key choice (sequential, uniform, Zipf) for trove-bench.
// A ZipfTable is built once and then read by every load thread; each
// connection owns its Rng and KeyChooser.
#pragma once

#include <cstdint>
#include <vector>

namespace trove::bench {

// xoshiro256** seeded through splitmix64: fast, reproducible from one seed.
// Thread safety: one owner.
class Rng {
 public:
  explicit Rng(uint64_t seed);
  uint64_t Next();
  // Uniform in [0, n) for n > 0 (Lemire's multiply-shift; the bias is below
  // 2^-32 for the key counts we use).
  uint64_t Below(uint64_t n) {
    return static_cast<uint64_t>((static_cast<unsigned __int128>(Next()) * n) >> 64);
  }
  // Uniform double in [0, 1).
  double NextDouble() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

 private:
  uint64_t s_[4];
};

// The cumulative distribution of Zipf(n, s): P(rank k) ~ 1 / (k+1)^s for
// k in [0, n). Sampling is a binary search over the table, so any exponent
// s > 0 works (the YCSB closed form needs s < 1).
//
// Thread safety: immutable after construction; any number of readers.
class ZipfTable {
 public:
  ZipfTable(uint64_t n, double exponent);
  // Maps u in [0, 1) to a rank in [0, n).
  uint64_t Sample(double u) const;
  uint64_t size() const { return cdf_.size(); }
  // P(rank k), for tests.
  double Probability(uint64_t k) const;

 private:
  std::vector<double> cdf_;  // cdf_[k] = P(rank <= k); cdf_.back() == 1.
};

enum class KeyPattern { kSequential, kUniform, kZipf };

// Picks key indexes in [0, key_count). Sequential walks start, start+stride,
// ... and wraps back to start (so connection i of m with start=i, stride=m
// owns one slice and all connections together cover every key once per lap).
// Zipf scatters ranks over the key space with a fixed bijection so the hot
// keys are not neighbours.
//
// Thread safety: one owner; the ZipfTable it points to is shared read-only.
class KeyChooser {
 public:
  KeyChooser(KeyPattern pattern, uint64_t key_count, uint64_t start, uint64_t stride,
             const ZipfTable* zipf);
  uint64_t Next(Rng& rng);

 private:
  KeyPattern pattern_;
  uint64_t key_count_;
  uint64_t start_;
  uint64_t next_;
  uint64_t stride_;
  uint64_t mask_;  // smallest power of two >= key_count_, minus one
  const ZipfTable* zipf_;
};

}  // namespace trove::bench
