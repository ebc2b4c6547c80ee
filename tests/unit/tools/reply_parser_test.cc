// Tests for trove-bench's reply parsers (tools/bench/reply_parser.h): whole
// inputs, every split point, malformed bytes and limits.
#include "reply_parser.h"

#include <gtest/gtest.h>
#include <string>
#include <vector>

namespace trove::bench {
namespace {

// Parses all of `in` as a stream of memcache replies, feeding it the way a
// socket would: the first `split` bytes, then the rest. Fails the test on
// kError.
std::vector<McReply> ParseMcAll(const std::string& in, size_t split,
                                std::vector<std::string>* data) {
  std::vector<McReply> out;
  std::string buf;
  size_t fed = 0;
  auto feed = [&](size_t upto) {
    buf.append(in, fed, upto - fed);
    fed = upto;
    for (;;) {
      McReply r;
      size_t used = 0;
      ParseStatus st = ParseMcReply(buf.data(), buf.size(), &r, &used);
      if (st == ParseStatus::kNeedMore) return;
      EXPECT_EQ(st, ParseStatus::kOk) << "at split " << split;
      if (st != ParseStatus::kOk) return;
      data->push_back(std::string(r.data));
      r.data = {};
      r.key = {};
      r.text = {};
      out.push_back(r);
      buf.erase(0, used);
    }
  };
  feed(split);
  feed(in.size());
  EXPECT_TRUE(buf.empty()) << "left over: " << buf;
  return out;
}

TEST(McReplyParserTest, ParsesTextGetReply) {
  std::string in = "VALUE foo 5 3\r\nbar\r\nVALUE k2 0 4 99\r\n\r\n\r\n\r\nEND\r\n";
  for (size_t split = 0; split <= in.size(); ++split) {
    std::vector<std::string> data;
    auto r = ParseMcAll(in, split, &data);
    ASSERT_EQ(r.size(), 3u) << split;
    EXPECT_EQ(r[0].kind, McKind::kValue);
    EXPECT_EQ(r[0].flags, 5u);
    EXPECT_EQ(data[0], "bar");
    EXPECT_EQ(r[1].kind, McKind::kValue);
    EXPECT_EQ(data[1], "\r\n\r\n");  // data may hold CRLF; the length decides
    EXPECT_EQ(r[2].kind, McKind::kEnd);
  }
}

TEST(McReplyParserTest, KeepsKeyAndMessageViews) {
  std::string in = "VALUE user:1 0 2\r\nhi\r\n";
  McReply r;
  size_t used;
  ASSERT_EQ(ParseMcReply(in.data(), in.size(), &r, &used), ParseStatus::kOk);
  EXPECT_EQ(r.key, "user:1");
  EXPECT_EQ(r.data, "hi");
  EXPECT_EQ(used, in.size());
  std::string err = "SERVER_ERROR out of memory storing object\r\n";
  ASSERT_EQ(ParseMcReply(err.data(), err.size(), &r, &used), ParseStatus::kOk);
  EXPECT_EQ(r.kind, McKind::kServerError);
  EXPECT_EQ(r.text, "out of memory storing object");
}

TEST(McReplyParserTest, ParsesStatusWordsAndMetaCodes) {
  struct Case {
    const char* in;
    McKind kind;
  } cases[] = {
      {"STORED\r\n", McKind::kStored}, {"NOT_STORED\r\n", McKind::kNotStored},
      {"EXISTS\r\n", McKind::kExists}, {"NOT_FOUND\r\n", McKind::kNotFound},
      {"ERROR\r\n", McKind::kError},   {"CLIENT_ERROR bad\r\n", McKind::kClientError},
      {"HD\r\n", McKind::kMetaHit},    {"HD c123 t-1\r\n", McKind::kMetaHit},
      {"EN\r\n", McKind::kMetaMiss},   {"NS\r\n", McKind::kMetaNotStored},
      {"EX\r\n", McKind::kMetaExists}, {"NF\r\n", McKind::kMetaNotFound},
      {"MN\r\n", McKind::kMetaNoop},
  };
  for (const Case& c : cases) {
    std::string in = c.in;
    McReply r;
    size_t used = 0;
    ASSERT_EQ(ParseMcReply(in.data(), in.size(), &r, &used), ParseStatus::kOk) << c.in;
    EXPECT_EQ(r.kind, c.kind) << c.in;
    EXPECT_EQ(used, in.size());
    // Every strict prefix needs more.
    for (size_t n = 0; n < in.size(); ++n) {
      EXPECT_EQ(ParseMcReply(in.data(), n, &r, &used), ParseStatus::kNeedMore) << c.in << n;
    }
  }
}

TEST(McReplyParserTest, ParsesMetaValueWithFlags) {
  std::string in = "VA 5 f30 kfoo\r\nhello\r\nEN\r\n";
  for (size_t split = 0; split <= in.size(); ++split) {
    std::vector<std::string> data;
    auto r = ParseMcAll(in, split, &data);
    ASSERT_EQ(r.size(), 2u);
    EXPECT_EQ(r[0].kind, McKind::kMetaValue);
    EXPECT_EQ(data[0], "hello");
    EXPECT_EQ(r[1].kind, McKind::kMetaMiss);
  }
}

TEST(McReplyParserTest, RejectsMalformedReplies) {
  const char* bad[] = {
      "BOGUS\r\n",                  // unknown word
      "STORED extra\r\n",           // text codes take no arguments
      "VALUE foo x 3\r\nbar\r\n",   // bad flags
      "VALUE foo 0 -3\r\nbar\r\n",  // bad length
      "VALUE foo 0\r\n",            // missing length
      "VALUE 0 3\r\n",              // key missing (2 tokens)
      "VALUE foo 0 3\r\nbarX\r\n",  // data longer than announced
      "VALUE foo 0 3 1 2\r\nbar\r\n",
      "VA x\r\n",
      "END\n",                            // bare LF
      "\r\n",                             // empty line
      "VALUE foo 4294967296 1\r\nx\r\n",  // flags over 32 bits
  };
  for (const char* b : bad) {
    std::string in = b;
    McReply r;
    size_t used = 0;
    EXPECT_EQ(ParseMcReply(in.data(), in.size(), &r, &used), ParseStatus::kError) << b;
  }
}

TEST(McReplyParserTest, EnforcesLineAndValueLimits) {
  std::string longline(kMaxReplyLine + 2, 'A');
  McReply r;
  size_t used;
  EXPECT_EQ(ParseMcReply(longline.data(), longline.size(), &r, &used), ParseStatus::kError);
  std::string shortline(kMaxReplyLine, 'A');
  EXPECT_EQ(ParseMcReply(shortline.data(), shortline.size(), &r, &used), ParseStatus::kNeedMore);
  std::string huge = "VALUE k 0 " + std::to_string(kMaxReplyValue + 1) + "\r\n";
  EXPECT_EQ(ParseMcReply(huge.data(), huge.size(), &r, &used), ParseStatus::kError);
  std::string big = "VA " + std::to_string(kMaxReplyValue) + "\r\n";
  EXPECT_EQ(ParseMcReply(big.data(), big.size(), &r, &used), ParseStatus::kNeedMore);
}

std::vector<RespReply> ParseRespAll(const std::string& in, size_t split,
                                    std::vector<std::string>* strs) {
  std::vector<RespReply> out;
  std::string buf;
  size_t fed = 0;
  auto feed = [&](size_t upto) {
    buf.append(in, fed, upto - fed);
    fed = upto;
    for (;;) {
      RespReply r;
      size_t used = 0;
      ParseStatus st = ParseRespReply(buf.data(), buf.size(), &r, &used);
      if (st == ParseStatus::kNeedMore) return;
      EXPECT_EQ(st, ParseStatus::kOk) << "at split " << split;
      if (st != ParseStatus::kOk) return;
      strs->push_back(std::string(r.str));
      r.str = {};
      out.push_back(r);
      buf.erase(0, used);
    }
  };
  feed(split);
  feed(in.size());
  EXPECT_TRUE(buf.empty());
  return out;
}

TEST(RespReplyParserTest, ParsesEveryFrameTypeAtEverySplit) {
  std::string in =
      "+OK\r\n-ERR "
      "wrong\r\n:-42\r\n$5\r\nab\r\nc\r\n$-1\r\n$0\r\n\r\n*2\r\n$1\r\nx\r\n$-1\r\n*-1\r\n";
  for (size_t split = 0; split <= in.size(); ++split) {
    std::vector<std::string> s;
    auto r = ParseRespAll(in, split, &s);
    ASSERT_EQ(r.size(), 10u) << split;
    EXPECT_EQ(r[0].kind, RespKind::kSimple);
    EXPECT_EQ(s[0], "OK");
    EXPECT_EQ(r[1].kind, RespKind::kError);
    EXPECT_EQ(s[1], "ERR wrong");
    EXPECT_EQ(r[2].kind, RespKind::kInteger);
    EXPECT_EQ(r[2].integer, -42);
    EXPECT_EQ(r[3].kind, RespKind::kBulk);
    EXPECT_EQ(s[3], "ab\r\nc");
    EXPECT_EQ(r[4].kind, RespKind::kNullBulk);
    EXPECT_EQ(r[5].kind, RespKind::kBulk);
    EXPECT_EQ(s[5], "");
    EXPECT_EQ(r[6].kind, RespKind::kArray);
    EXPECT_EQ(r[6].integer, 2);
    EXPECT_EQ(s[7], "x");
    EXPECT_EQ(r[8].kind, RespKind::kNullBulk);
    EXPECT_EQ(r[9].kind, RespKind::kNullArray);
  }
}

TEST(RespReplyParserTest, ByteByByteNeedsMoreUntilComplete) {
  std::string in = "$11\r\nhello world\r\n";
  RespReply r;
  size_t used;
  for (size_t n = 0; n < in.size(); ++n) {
    ASSERT_EQ(ParseRespReply(in.data(), n, &r, &used), ParseStatus::kNeedMore) << n;
  }
  ASSERT_EQ(ParseRespReply(in.data(), in.size(), &r, &used), ParseStatus::kOk);
  EXPECT_EQ(r.str, "hello world");
  EXPECT_EQ(used, in.size());
}

TEST(RespReplyParserTest, RejectsMalformedFrames) {
  const char* bad[] = {"?what\r\n", ":12a\r\n", "$-2\r\n", "$abc\r\n",    "$3\r\nabcd\r\n",
                       "*-5\r\n",   "+OK\n",    ":\r\n",   "$1048577\r\n"};  // over kMaxReplyValue
  for (const char* b : bad) {
    std::string in = b;
    RespReply r;
    size_t used;
    EXPECT_EQ(ParseRespReply(in.data(), in.size(), &r, &used), ParseStatus::kError) << b;
  }
}

}  // namespace
}  // namespace trove::bench
