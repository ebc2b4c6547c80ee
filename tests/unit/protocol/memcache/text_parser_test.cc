// Tests for text_parser: line framing (whole, byte by byte, every split),
// the 2048-byte junk rule, tokenizing and memcached's number rules.
#include "protocol/memcache/text_parser.h"

#include <gtest/gtest.h>
#include <string>
#include <vector>

namespace trove::memcache {
namespace {

// Feeds `input` through FindLine the way a connection would: bytes arrive in
// pieces of `step` (0 = all at once); returns the lines found.
std::vector<std::string> Frame(const std::string& input, size_t step, bool* closed = nullptr) {
  std::vector<std::string> lines;
  std::string buf;
  size_t pos = 0;
  if (closed) *closed = false;
  while (pos < input.size()) {
    size_t n = step == 0 ? input.size() : std::min(step, input.size() - pos);
    buf.append(input, pos, n);
    pos += n;
    for (;;) {
      LineResult r = FindLine(buf.data(), buf.size(), 1 << 20);
      if (r.status == LineStatus::kClose) {
        if (closed) *closed = true;
        return lines;
      }
      if (r.status == LineStatus::kNeedMore) break;
      lines.emplace_back(r.line);
      buf.erase(0, r.consumed);
    }
  }
  return lines;
}

TEST(TextParserTest, FindsCrlfAndBareLfLines) {
  auto lines = Frame("get a\r\nset b 0 0 1\nmn\r\n", 0);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0], "get a");
  EXPECT_EQ(lines[1], "set b 0 0 1");
  EXPECT_EQ(lines[2], "mn");
}

TEST(TextParserTest, SameLinesAtEverySplitAndByteByByte) {
  const std::string in = "get a b c\r\n\r\nmg foo v k O123\r\nx\n  stats  \r\n";
  auto whole = Frame(in, 0);
  ASSERT_EQ(whole.size(), 5u);
  EXPECT_EQ(whole[1], "\r");  // memcached keeps the CR of a bare "\r\n"
  EXPECT_EQ(Frame(in, 1), whole);
  for (size_t split = 1; split < in.size(); ++split) {
    std::vector<std::string> lines;
    std::string buf = in.substr(0, split);
    auto take = [&] {
      for (;;) {
        LineResult r = FindLine(buf.data(), buf.size(), 1 << 20);
        if (r.status != LineStatus::kOk) break;
        lines.emplace_back(r.line);
        buf.erase(0, r.consumed);
      }
    };
    take();
    buf += in.substr(split);
    take();
    EXPECT_EQ(lines, whole) << "split at " << split;
  }
}

TEST(TextParserTest, NeedsMoreUntilNewline) {
  LineResult r = FindLine("get a", 5, 1 << 20);
  EXPECT_EQ(r.status, LineStatus::kNeedMore);
  EXPECT_EQ(r.consumed, 0u);
}

TEST(TextParserTest, ClosesOnJunkWithoutNewlinePastLimit) {
  std::string junk(kLineLimit, 'x');
  EXPECT_EQ(FindLine(junk.data(), junk.size(), 1 << 20).status, LineStatus::kNeedMore);
  junk.push_back('x');
  EXPECT_EQ(FindLine(junk.data(), junk.size(), 1 << 20).status, LineStatus::kClose);
}

TEST(TextParserTest, LongMultigetWaitsUpToCap) {
  std::string get = "get ";
  while (get.size() <= kLineLimit + 10) get += "key ";
  EXPECT_EQ(FindLine(get.data(), get.size(), 1 << 20).status, LineStatus::kNeedMore);
  EXPECT_EQ(FindLine(get.data(), get.size(), 100).status, LineStatus::kClose);
  std::string spaced = std::string(50, ' ') + get;
  EXPECT_EQ(FindLine(spaced.data(), spaced.size(), 1 << 20).status, LineStatus::kNeedMore);
  std::string too_spaced = std::string(101, ' ') + get;
  EXPECT_EQ(FindLine(too_spaced.data(), too_spaced.size(), 1 << 20).status, LineStatus::kClose);
  std::string gets = "gets " + get.substr(4);
  EXPECT_EQ(FindLine(gets.data(), gets.size(), 1 << 20).status, LineStatus::kNeedMore);
  std::string gat = "gat 0 " + get.substr(4);
  EXPECT_EQ(FindLine(gat.data(), gat.size(), 1 << 20).status, LineStatus::kClose);
}

TEST(TextParserTest, LongLineWithNewlineIsALine) {
  std::string line = "set " + std::string(3000, 'k') + " 0 0 1\r\n";
  LineResult r = FindLine(line.data(), line.size(), 1 << 20);
  EXPECT_EQ(r.status, LineStatus::kOk);
  EXPECT_EQ(r.consumed, line.size());
}

TEST(TextParserTest, TokenizesOnSpacesOnly) {
  ParsedLine pl;
  Tokenize("  set\tx  a 0 ", &pl);
  ASSERT_EQ(pl.count, 3u);
  EXPECT_EQ(pl.tokens[0], "set\tx");
  EXPECT_EQ(pl.tokens[1], "a");
  EXPECT_EQ(pl.tokens[2], "0");
  EXPECT_EQ(pl.ntokens(), 4u);
  EXPECT_FALSE(pl.truncated());
  Tokenize("", &pl);
  EXPECT_EQ(pl.count, 0u);
}

TEST(TextParserTest, KeepsRestPastTokenLimit) {
  std::string line = "get";
  for (int i = 0; i < 30; ++i) line += " k" + std::to_string(i);
  ParsedLine pl;
  Tokenize(line, &pl);
  EXPECT_EQ(pl.count, kMaxTokens);
  EXPECT_TRUE(pl.truncated());
  EXPECT_EQ(pl.tokens[kMaxTokens - 1], "k21");
  EXPECT_EQ(pl.rest.substr(0, 3), "k22");
}

TEST(TextParserTest, WordIteratorWalksAllWords) {
  WordIterator it("  a bb   ccc ");
  std::string_view w;
  std::vector<std::string_view> words;
  while (it.Next(&w)) words.push_back(w);
  ASSERT_EQ(words.size(), 3u);
  EXPECT_EQ(words[2], "ccc");
}

TEST(TextParserTest, NumbersFollowMemcachedRules) {
  uint32_t f = 0;
  EXPECT_TRUE(ParseFlags("4294967295", &f));
  EXPECT_EQ(f, 4294967295u);
  EXPECT_TRUE(ParseFlags("4294967296", &f));  // truncated, as memcached does
  EXPECT_EQ(f, 0u);
  EXPECT_FALSE(ParseFlags("-1", &f));
  EXPECT_FALSE(ParseFlags("1x", &f));
  EXPECT_FALSE(ParseFlags("", &f));
  int64_t i = 0;
  EXPECT_TRUE(ParseInt("-1", &i));
  EXPECT_EQ(i, -1);
  EXPECT_TRUE(ParseInt("+5", &i));
  EXPECT_EQ(i, 5);
  EXPECT_FALSE(ParseInt("x", &i));
  uint64_t u = 0;
  EXPECT_TRUE(ParseUint("18446744073709551615", &u));
  EXPECT_EQ(u, UINT64_MAX);
  EXPECT_FALSE(ParseUint("18446744073709551616", &u));
  EXPECT_FALSE(ParseUint("-5", &u));
}

}  // namespace
}  // namespace trove::memcache
