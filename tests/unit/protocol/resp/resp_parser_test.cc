// RespParser tests: whole, byte by byte, split at every offset, limits and
// malformed input (Redis 7's exact error texts). Test thread only.
#include "protocol/resp/core/resp_parser.h"

#include <gtest/gtest.h>
#include <string>
#include <vector>

namespace trove::resp {
namespace {

struct Parsed {
  std::vector<std::vector<std::string>> requests;
  std::string error;
  size_t consumed = 0;
};

// Feeds `input` offering growing prefixes cut at `cuts` (plus the whole), as
// the net layer does: unconsumed bytes are offered again with more appended.
Parsed Feed(const std::string& input, const std::vector<size_t>& cuts) {
  RespParser p;
  Parsed out;
  size_t start = 0;
  std::vector<size_t> ends = cuts;
  ends.push_back(input.size());
  for (size_t end : ends) {
    if (end < start) continue;
    while (true) {
      ParseStatus st = p.Parse(input.data() + start, end - start);
      if (st == ParseStatus::kNeedMore) break;
      if (st == ParseStatus::kError) {
        out.error = p.error();
        return out;
      }
      std::vector<std::string> args(p.args().begin(), p.args().end());
      if (!args.empty()) out.requests.push_back(args);
      start += p.consumed();
      out.consumed = start;
    }
  }
  return out;
}

Parsed Whole(const std::string& s) { return Feed(s, {}); }
Parsed ByteByByte(const std::string& s) {
  std::vector<size_t> cuts;
  for (size_t i = 1; i < s.size(); ++i) cuts.push_back(i);
  return Feed(s, cuts);
}

using Reqs = std::vector<std::vector<std::string>>;

void ExpectAllSplits(const std::string& s, const Reqs& want) {
  EXPECT_EQ(Whole(s).requests, want);
  EXPECT_EQ(ByteByByte(s).requests, want);
  for (size_t i = 1; i < s.size(); ++i) {
    EXPECT_EQ(Feed(s, {i}).requests, want) << "split at " << i;
  }
}

TEST(RespParserTest, MultibulkWholeAndSplitAtEveryOffset) {
  ExpectAllSplits("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nhello\r\n", {{"SET", "k", "hello"}});
}

TEST(RespParserTest, PipelinedMixOfMultibulkAndInline) {
  ExpectAllSplits("*1\r\n$4\r\nPING\r\nGET a\r\n*2\r\n$4\r\nECHO\r\n$0\r\n\r\n",
                  {{"PING"}, {"GET", "a"}, {"ECHO", ""}});
}

TEST(RespParserTest, BinarySafeBulkWithCrlfInside) {
  std::string v("a\r\nb\0c", 6);
  std::string req = "*2\r\n$4\r\nECHO\r\n$6\r\n" + v + "\r\n";
  ExpectAllSplits(req, {{"ECHO", v}});
}

TEST(RespParserTest, InlineQuotingAsSdssplitargs) {
  ExpectAllSplits("set \"a b\" 'c d'\r\n", {{"set", "a b", "c d"}});
  ExpectAllSplits("echo \"\\x41\\n\"\n", {{"echo", "A\n"}});
  ExpectAllSplits("echo 'it\\'s'\r\n", {{"echo", "it's"}});
  EXPECT_EQ(Whole("set a\"b c\"d\r\n").error, "Protocol error: unbalanced quotes in request");
  EXPECT_EQ(Whole("set \"abc\r\n").error, "Protocol error: unbalanced quotes in request");
}

TEST(RespParserTest, EmptyRequestsAreSkipped) {
  ExpectAllSplits("\r\n*0\r\n*-1\r\n   \r\nPING\r\n", {{"PING"}});
}

TEST(RespParserTest, MalformedMultibulkErrors) {
  EXPECT_EQ(Whole("*x\r\n").error, "Protocol error: invalid multibulk length");
  EXPECT_EQ(Whole("*+1\r\n").error, "Protocol error: invalid multibulk length");
  EXPECT_EQ(Whole("*2147483648\r\n").error, "Protocol error: invalid multibulk length");
  EXPECT_EQ(Whole("*1\r\nx\r\n").error, "Protocol error: expected '$', got 'x'");
  EXPECT_EQ(Whole("*1\r\n$-1\r\n").error, "Protocol error: invalid bulk length");
  EXPECT_EQ(Whole("*1\r\n$abc\r\n").error, "Protocol error: invalid bulk length");
  EXPECT_EQ(Whole("*1\r\n$536870913\r\n").error, "Protocol error: invalid bulk length");
}

// Redis's limits before AUTH: 10 arguments, 16 KiB per argument.
TEST(RespParserTest, UnauthenticatedLimits) {
  auto parse = [](const std::string& in, bool unauth) {
    RespParser p;
    p.set_unauthenticated(unauth);
    ParseStatus st = p.Parse(in.data(), in.size());
    return st == ParseStatus::kError ? p.error() : std::string("ok");
  };
  std::string ten = "*10\r\n";
  for (int i = 0; i < 10; ++i) ten += "$1\r\na\r\n";
  EXPECT_EQ(parse(ten, true), "ok");
  EXPECT_EQ(parse("*11\r\n", true), "Protocol error: unauthenticated multibulk length");
  EXPECT_EQ(parse("*11\r\n", false), "ok");  // just waits for more
  EXPECT_EQ(parse("*2147483648\r\n", true), "Protocol error: invalid multibulk length");
  std::string b16 = "*1\r\n$16384\r\n" + std::string(16384, 'x') + "\r\n";
  EXPECT_EQ(parse(b16, true), "ok");
  EXPECT_EQ(parse("*1\r\n$16385\r\n", true), "Protocol error: unauthenticated bulk length");
  EXPECT_EQ(parse("*1\r\n$16385\r\n", false), "ok");
  EXPECT_EQ(parse("*1\r\n$536870913\r\n", true), "Protocol error: invalid bulk length");
}

TEST(RespParserTest, LargeCountIsNotPreallocated) {
  // Redis accepts up to INT_MAX arguments; the parser must just wait.
  Parsed p = Whole("*2000000000\r\n$1\r\na\r\n");
  EXPECT_TRUE(p.error.empty());
  EXPECT_TRUE(p.requests.empty());
}

TEST(RespParserTest, InlineAndCountLimits) {
  std::string big(limits::kRespInlineMax + 1, 'a');
  EXPECT_EQ(Whole(big).error, "Protocol error: too big inline request");
  EXPECT_EQ(Whole("*" + big).error, "Protocol error: too big mbulk count string");
  EXPECT_EQ(Whole("*1\r\n$" + big).error, "Protocol error: too big bulk count string");
  // Under the limit it is only incomplete.
  EXPECT_TRUE(Whole(std::string(1000, 'a')).error.empty());
}

TEST(RespParserTest, BytesWantedDuringBulk) {
  RespParser p;
  std::string req = "*2\r\n$4\r\nECHO\r\n$100\r\n";
  EXPECT_EQ(p.Parse(req.data(), req.size()), ParseStatus::kNeedMore);
  EXPECT_EQ(p.bytes_wanted(), req.size() + 102);
}

TEST(RespParserTest, StrictIntegers) {
  int64_t v;
  EXPECT_TRUE(ParseStrictInt64("0", &v));
  EXPECT_TRUE(ParseStrictInt64("-9223372036854775808", &v));
  EXPECT_EQ(v, INT64_MIN);
  EXPECT_FALSE(ParseStrictInt64("9223372036854775808", &v));
  EXPECT_FALSE(ParseStrictInt64("01", &v));
  EXPECT_FALSE(ParseStrictInt64("+1", &v));
  EXPECT_FALSE(ParseStrictInt64(" 1", &v));
  EXPECT_FALSE(ParseStrictInt64("-", &v));
  EXPECT_FALSE(ParseStrictInt64("-0", &v));
  EXPECT_FALSE(ParseStrictInt64("", &v));
}

}  // namespace
}  // namespace trove::resp
