// CRC-64/Jones against its check value and Redis's own test vector; LZF
// decompression of literal runs, overlapping back references and bad streams.
#include <gtest/gtest.h>

#include <string>

#include "common/crc64.h"
#include "common/lzf.h"

namespace trove {
namespace {

TEST(Crc64Test, CheckValues) {
  EXPECT_EQ(Crc64(0, "123456789"), 0xe9c6d914c4b8d9caULL);
  // The value Redis's crc64 self-test expects for its lorem-ipsum paragraph
  // (its terminating NUL included).
  const std::string li =
      "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor "
      "incididunt ut labore et dolore magna aliqua. Ut enim ad minim veniam, quis nostrud "
      "exercitation ullamco laboris nisi ut aliquip ex ea commodo consequat. Duis aute irure "
      "dolor in reprehenderit in voluptate velit esse cillum dolore eu fugiat nulla pariatur. "
      "Excepteur sint occaecat cupidatat non proident, sunt in culpa qui officia deserunt "
      "mollit anim id est laborum.";
  EXPECT_EQ(Crc64(0, std::string_view(li.c_str(), li.size() + 1)), 0xc7794709e69683b3ULL);
  EXPECT_EQ(Crc64(0, ""), 0u);
  // Continuing a CRC equals computing it in one go.
  EXPECT_EQ(Crc64(Crc64(0, "12345"), "6789"), Crc64(0, "123456789"));
}

TEST(LzfTest, LiteralsAndBackReferences) {
  std::string out;
  // "abc" literal, then a back reference of length 6 at distance 3 (overlapping).
  const std::string in = std::string("\x02" "abc", 4) + std::string("\x80\x02", 2);
  ASSERT_TRUE(LzfDecompress(in, 9, &out));
  EXPECT_EQ(out, "abcabcabc");
  // A long back reference: length 7 + 10 + 2 = 19 at distance 1.
  const std::string in2 = std::string("\x00" "z", 2) + std::string("\xe0\x0a\x00", 3);
  ASSERT_TRUE(LzfDecompress(in2, 20, &out));
  EXPECT_EQ(out, std::string(20, 'z'));
}

TEST(LzfTest, MalformedStreamsFail) {
  std::string out;
  EXPECT_FALSE(LzfDecompress(std::string("\x05" "ab", 3), 6, &out));  // literal past the end
  EXPECT_FALSE(LzfDecompress(std::string("\x20\x05", 2), 3, &out));   // reference before start
  EXPECT_FALSE(LzfDecompress(std::string("\x02" "abc", 4), 4, &out)); // shorter than expected
  EXPECT_FALSE(LzfDecompress(std::string("\x02" "abc", 4), 2, &out)); // longer than expected
  EXPECT_FALSE(LzfDecompress(std::string("\xe0", 1), 9, &out));       // truncated reference
  // A claimed length no stream this short can reach (the fuzzer's 4 GB
  // claim in 9 bytes): refused before allocating.
  EXPECT_FALSE(LzfDecompress(std::string("\x02" "abc\x80\x02", 6), 4161447012u, &out));
  EXPECT_LT(out.capacity(), 1u << 20);
}

}  // namespace
}  // namespace trove
