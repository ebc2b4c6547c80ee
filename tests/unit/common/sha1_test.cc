// SHA-1 against the RFC 3174 test vectors and Redis's script names.
#include "common/sha1.h"

#include <gtest/gtest.h>

#include <string>

namespace trove {
namespace {

TEST(Sha1Test, Rfc3174Vectors) {
  EXPECT_EQ(Sha1Hex("abc"), "a9993e364706816aba3e25717850c26c9cd0d89d");
  EXPECT_EQ(Sha1Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
  EXPECT_EQ(Sha1Hex(std::string(1000000, 'a')), "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
  std::string rep;
  for (int i = 0; i < 10; ++i) rep += "0123456701234567012345670123456701234567012345670123456701234567";
  EXPECT_EQ(Sha1Hex(rep), "dea356a2cddd90c7a7ecedc5ebb563934f460452");
}

TEST(Sha1Test, EmptyAndScriptNames) {
  EXPECT_EQ(Sha1Hex(""), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
  // The name EVALSHA uses for "return 1" (SCRIPT LOAD's reply in Redis).
  EXPECT_EQ(Sha1Hex("return 1"), "e0e1f9fabfc9d4800c877a703b823ac0578ff8db");
}

}  // namespace
}  // namespace trove
