// Tests for trove-bench's ValueGen (tools/bench/value_gen.h).
#include "value_gen.h"

#include <gtest/gtest.h>
#include <string>

namespace trove::bench {
namespace {

std::string MakeValue(const ValueGen& g, uint64_t k, uint32_t v) {
  std::string s(g.SizeFor(k, v), '\0');
  EXPECT_EQ(g.Make(k, v, s.data()), s.size());
  return s;
}

TEST(ValueGenTest, FormatsKeysWithPrefix) {
  ValueGen g("user:", 32, 32);
  char buf[64];
  size_t n = g.FormatKey(12345, buf);
  EXPECT_EQ(std::string(buf, n), "user:12345");
  EXPECT_LE(n, g.KeyMaxLen());
  n = g.FormatKey(UINT64_MAX, buf);
  EXPECT_EQ(n, g.KeyMaxLen());
}

TEST(ValueGenTest, ValuesVerifyForTheirKeyAndAnyVersion) {
  ValueGen g("k", 32, 32);
  for (uint64_t k = 0; k < 100; ++k) {
    for (uint32_t v : {0u, 1u, 77u, 0xffffffffu}) {
      std::string s = MakeValue(g, k, v);
      ASSERT_EQ(s.size(), 32u);
      EXPECT_EQ(g.Verify(k, s), VerifyResult::kOk) << k << " v" << v;
      EXPECT_EQ(s.find_first_of("\r\n \0", 0, 4), std::string::npos);
    }
  }
}

TEST(ValueGenTest, ValueOfAnotherKeyIsRejected) {
  ValueGen g("k", 32, 32);
  int rejected = 0;
  for (uint64_t k = 0; k < 1000; ++k) {
    rejected += g.Verify(k + 1, MakeValue(g, k, 3)) != VerifyResult::kOk;
  }
  EXPECT_EQ(rejected, 1000);
}

TEST(ValueGenTest, FlippedOrTruncatedBytesAreRejected) {
  ValueGen g("k", 10, 4096);
  std::string s = MakeValue(g, 42, 9);
  ASSERT_EQ(g.Verify(42, s), VerifyResult::kOk);
  for (size_t i = 0; i < s.size(); i += 7) {
    std::string bad = s;
    bad[i] = bad[i] == 'x' ? 'y' : 'x';
    EXPECT_NE(g.Verify(42, bad), VerifyResult::kOk) << "flip at " << i;
  }
  EXPECT_EQ(g.Verify(42, s.substr(0, s.size() - 1)), VerifyResult::kBadLength);
  EXPECT_EQ(g.Verify(42, s + "z"), VerifyResult::kBadLength);
  EXPECT_EQ(g.Verify(42, ""), VerifyResult::kBadLength);
}

TEST(ValueGenTest, RangedSizesSpanTheRange) {
  ValueGen g("k", 100, 200);
  size_t lo = 1000, hi = 0;
  for (uint64_t k = 0; k < 2000; ++k) {
    size_t n = g.SizeFor(k, 1);
    lo = std::min(lo, n);
    hi = std::max(hi, n);
    ASSERT_EQ(g.Verify(k, MakeValue(g, k, 1)), VerifyResult::kOk);
  }
  EXPECT_EQ(lo, 100u);
  EXPECT_EQ(hi, 200u);
}

TEST(ValueGenTest, ShortValuesCarryNoVersionButStillVerify) {
  ValueGen g("k", 1, 8);
  for (uint64_t k = 0; k < 200; ++k) {
    std::string s = MakeValue(g, k, 5);
    EXPECT_EQ(g.Verify(k, s), VerifyResult::kOk);
    std::string bad = s;
    bad[0] = bad[0] == 'x' ? 'y' : 'x';
    EXPECT_EQ(g.Verify(k, bad), VerifyResult::kBadContent);
  }
}

}  // namespace
}  // namespace trove::bench
