// PopCount against a byte-by-byte count: every length around the versions'
// block edges (8-byte words, 32-byte blocks, the 64-byte switch to the long
// version, 31 vector blocks between folds) and every start alignment.
#include "common/popcount.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

namespace trove {
namespace {

uint64_t Naive(const uint8_t* p, size_t n) {
  uint64_t c = 0;
  for (size_t i = 0; i < n; ++i) {
    for (uint8_t b = p[i]; b != 0; b &= static_cast<uint8_t>(b - 1)) ++c;
  }
  return c;
}

TEST(PopCountTest, MatchesNaiveCountForAllLengthsAndAlignments) {
  std::mt19937 rng(41);
  std::vector<uint8_t> buf(4096 + 64);
  for (uint8_t& b : buf) b = static_cast<uint8_t>(rng());
  for (size_t off = 0; off < 8; ++off) {
    for (size_t n = 0; n <= 1100; ++n) {
      ASSERT_EQ(PopCount(buf.data() + off, n), Naive(buf.data() + off, n)) << off << " " << n;
    }
  }
  EXPECT_EQ(PopCount(buf.data(), 4096), Naive(buf.data(), 4096));
}

TEST(PopCountTest, AllOnesPastTheByteCounterFold) {
  // 31 vector blocks of 0xFF is 248 per byte counter, the most before a fold.
  std::vector<uint8_t> ones(32 * 100 + 5, 0xFF);
  EXPECT_EQ(PopCount(ones.data(), ones.size()), 8 * ones.size());
  std::vector<uint8_t> zeros(1000, 0);
  EXPECT_EQ(PopCount(zeros.data(), zeros.size()), 0u);
}

}  // namespace
}  // namespace trove
