// Tests for meta_parser: flag parsing, memcached's error texts, base64.
#include "protocol/memcache/meta_parser.h"

#include <gtest/gtest.h>
#include <string>

namespace trove::memcache {
namespace {

struct Parsed {
  MetaFlags f;
  const char* err = nullptr;
  std::string line;
  ParsedLine pl;
  char key_buf[kMaxDecodedKey];
};

void Parse(const std::string& line, size_t first, Parsed* p) {
  p->line = line;
  Tokenize(p->line, &p->pl);
  p->err = ParseMetaFlags(p->pl, first, p->key_buf, &p->f);
}

TEST(MetaParserTest, ParsesTokenFlags) {
  Parsed p;
  Parse("mg foo v k T30 N-1 R5 O123 q u", 2, &p);
  ASSERT_EQ(p.err, nullptr);
  EXPECT_EQ(p.f.key, "foo");
  EXPECT_TRUE(p.f.Has('v'));
  EXPECT_TRUE(p.f.Has('k'));
  EXPECT_TRUE(p.f.Has('q'));
  EXPECT_FALSE(p.f.Has('c'));
  EXPECT_TRUE(p.f.has_ttl);
  EXPECT_EQ(p.f.ttl, 30);
  EXPECT_EQ(p.f.vivify_ttl, -1);
  EXPECT_EQ(p.f.recache_ttl, 5);
  EXPECT_EQ(p.f.opaque, "O123");
}

TEST(MetaParserTest, ParsesSetAndArithFlags) {
  Parsed p;
  Parse("ms foo 2 F7 C99 E100 MA I T0", 3, &p);
  ASSERT_EQ(p.err, nullptr);
  EXPECT_EQ(p.f.client_flags, 7u);
  EXPECT_EQ(p.f.compare_cas, 99u);
  EXPECT_EQ(p.f.explicit_cas, 100u);
  EXPECT_EQ(p.f.mode, 'A');
  EXPECT_TRUE(p.f.Has('I'));
  Parsed a;
  Parse("ma n D5 J10 N0 MD", 2, &a);
  ASSERT_EQ(a.err, nullptr);
  EXPECT_EQ(a.f.delta, 5u);
  EXPECT_EQ(a.f.initial, 10u);
  EXPECT_EQ(a.f.mode, 'D');
}

TEST(MetaParserTest, ReportsMemcachedErrors) {
  struct Case {
    const char* line;
    const char* err;
  } cases[] = {
      {"mg a a", "invalid flag"},
      {"mg a Z", "invalid flag"},
      {"mg a 1", "invalid flag"},
      {"mg a v v", "duplicate flag"},
      {"mg a \x80", "duplicate flag"},
      {"mg a T", "bad token in command line format"},
      {"mg a Tx", "bad token in command line format"},
      {"mg a N1x", "bad token in command line format"},
      {"mg a C-1", "bad token in command line format"},
      {"mg a MEE", "incorrect length for M token"},
      {"mg a Jx", "invalid numeric initial value"},
      {"mg a D", "invalid numeric delta value"},
      {"mg a Fx", "bad command line format"},
      {"mg missing b", "error decoding key"},
  };
  for (const Case& c : cases) {
    Parsed p;
    Parse(c.line, 2, &p);
    ASSERT_NE(p.err, nullptr) << c.line;
    EXPECT_STREQ(p.err, c.err) << c.line;
  }
}

TEST(MetaParserTest, UnknownFlagStopsBeforeLaterErrors) {
  Parsed p;
  Parse("mg a Tx a", 2, &p);
  EXPECT_STREQ(p.err, "invalid flag");
}

TEST(MetaParserTest, DecodesBase64Key) {
  Parsed p;
  Parse("mg Zm9vYmFy b k", 2, &p);
  ASSERT_EQ(p.err, nullptr);
  EXPECT_TRUE(p.f.key_binary);
  EXPECT_EQ(p.f.key, "foobar");
}

TEST(MetaParserTest, Base64RoundTripsAndRejectsJunk) {
  char out[64];
  char back[64];
  for (std::string s : {std::string("a"), std::string("ab"), std::string("abc"),
                        std::string("abcd"), std::string("\0\xff\x10", 3)}) {
    size_t n = Base64Encode(s, out);
    EXPECT_EQ(n % 4, 0u);
    size_t m = Base64Decode(std::string_view(out, n), back, sizeof back);
    EXPECT_EQ(std::string(back, m), s);
  }
  EXPECT_EQ(Base64Encode("foo", out), 4u);
  EXPECT_EQ(std::string(out, 4), "Zm9v");
  EXPECT_EQ(Base64Decode("!!!!", back, sizeof back), 0u);
  EXPECT_EQ(Base64Decode("abc", back, sizeof back), 0u);
  EXPECT_EQ(Base64Decode("a=bc", back, sizeof back), 0u);
  EXPECT_EQ(Base64Decode("YQ==YQ==", back, sizeof back), 0u);
  EXPECT_EQ(Base64Decode("", back, sizeof back), 0u);
  EXPECT_EQ(Base64Decode("Zm9vYmFy", back, 5), 0u);  // would not fit
}

}  // namespace
}  // namespace trove::memcache
