// Rng, ZipfTable and KeyChooser (see key_chooser.h; owner-thread only except
// the immutable ZipfTable).
#include "key_chooser.h"

#include <algorithm>
#include <cmath>

#include "common/check.h"

namespace trove::bench {

namespace {
uint64_t SplitMix(uint64_t& x) {
  uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
}  // namespace

Rng::Rng(uint64_t seed) {
  for (auto& w : s_) w = SplitMix(seed);
}

uint64_t Rng::Next() {
  uint64_t result = Rotl(s_[1] * 5, 7) * 9;
  uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = Rotl(s_[3], 45);
  return result;
}

ZipfTable::ZipfTable(uint64_t n, double exponent) {
  CHECK(n > 0 && exponent > 0);
  cdf_.resize(n);
  double sum = 0;
  for (uint64_t k = 0; k < n; ++k) {
    sum += 1.0 / std::pow(static_cast<double>(k + 1), exponent);
    cdf_[k] = sum;
  }
  for (auto& c : cdf_) c /= sum;
  cdf_.back() = 1.0;
}

uint64_t ZipfTable::Sample(double u) const {
  auto it = std::upper_bound(cdf_.begin(), cdf_.end(), u);
  if (it == cdf_.end()) --it;
  return static_cast<uint64_t>(it - cdf_.begin());
}

double ZipfTable::Probability(uint64_t k) const { return k == 0 ? cdf_[0] : cdf_[k] - cdf_[k - 1]; }

KeyChooser::KeyChooser(KeyPattern pattern, uint64_t key_count, uint64_t start, uint64_t stride,
                       const ZipfTable* zipf)
    : pattern_(pattern),
      key_count_(key_count),
      start_(start % key_count),
      next_(start_),
      stride_(stride == 0 ? 1 : stride),
      mask_(0),
      zipf_(zipf) {
  CHECK(key_count > 0);
  uint64_t p = 1;
  while (p < key_count) p <<= 1;
  mask_ = p - 1;
  CHECK(pattern != KeyPattern::kZipf || (zipf != nullptr && zipf->size() == key_count));
}

uint64_t KeyChooser::Next(Rng& rng) {
  switch (pattern_) {
    case KeyPattern::kSequential: {
      uint64_t k = next_;
      next_ += stride_;
      if (next_ >= key_count_) next_ = start_;
      return k;
    }
    case KeyPattern::kUniform:
      return rng.Below(key_count_);
    case KeyPattern::kZipf: {
      uint64_t rank = zipf_->Sample(rng.NextDouble());
      // An odd multiplier modulo a power of two is a bijection; fold into
      // range by cycle walking, which keeps the bijection on [0, key_count).
      uint64_t x = rank;
      do {
        x = (x * 0x9e3779b97f4a7c15ULL + 0x632be59bd9b4e019ULL) & mask_;
      } while (x >= key_count_);
      return x;
    }
  }
  return 0;
}

}  // namespace trove::bench
