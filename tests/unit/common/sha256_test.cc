// SHA-256 against FIPS 180-4 / NIST test vectors, block-boundary lengths
// cross-checked with sha256sum, and ConstantTimeEqual.
#include "common/sha256.h"

#include <gtest/gtest.h>

#include <string>

namespace trove {
namespace {

TEST(Sha256Test, KnownVectors) {
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(Sha256Hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  // Redis's documented example: ACL SETUSER ... #<hash of "foobar">.
  EXPECT_EQ(Sha256Hex("foobar"), "c3ab8ff13720e8ad9047dd39466b3c8974e592c2fa383d4a3960714caef0c4f2");
}

TEST(Sha256Test, PaddingAtBlockBoundaries) {
  // Lengths around 55/56 and 64 bytes take the one- or two-block padding
  // path (expected digests from sha256sum).
  const struct {
    size_t n;
    const char* hex;
  } kCases[] = {
      {55, "d5e285683cd4efc02d021a5c62014694958901005d6f71e89e0989fac77e4072"},
      {56, "04c26261370ee7541549d16dee320c723e3fd14671e66a099afe0a377c16888e"},
      {63, "75220b47218278e656f2013bb8f0c455a25eaf01e86c64924e9d48d89776d6f2"},
      {64, "7ce100971f64e7001e8fe5a51973ecdfe1ced42befe7ee8d5fd6219506b5393c"},
      {119, "000b48d4edf0fa7bee3c6236ecd2785baa5db4eeb8bb54341b029e0d9fa5fb0c"},
      {120, "13f05a0b594787f5ecd315edc96141bd3243203d1b7d4f0836f37308b276ba98"},
  };
  for (const auto& c : kCases) EXPECT_EQ(Sha256Hex(std::string(c.n, 'x')), c.hex) << c.n;
}

TEST(Sha256Test, ConstantTimeEqual) {
  EXPECT_TRUE(ConstantTimeEqual("", ""));
  EXPECT_TRUE(ConstantTimeEqual("secret", "secret"));
  EXPECT_FALSE(ConstantTimeEqual("secret", "secreT"));
  EXPECT_FALSE(ConstantTimeEqual("Secret", "secret"));
  EXPECT_FALSE(ConstantTimeEqual("secret", "secrets"));
}

}  // namespace
}  // namespace trove
