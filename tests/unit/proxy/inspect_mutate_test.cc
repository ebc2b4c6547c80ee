// The token helpers inspectors and mutators share (proxy/inspect_mutate.h),
// against mcmc's rules (memcached's vendored mcmc.c).
#include "proxy/inspect_mutate.h"

#include <gtest/gtest.h>
#include <string>

#include "proxy/rctx.h"
#include "proxy/request.h"

namespace trove::proxy {
namespace {

RequestUd Make(const std::string& line) {
  RequestUd r;
  ReqInfo info;
  EXPECT_EQ(ParseRequest(line, line.size() + 2, &info), 0) << line;
  r.Assign(line + "\r\n", line.size(), 2, info, 0);
  return r;
}

TEST(InspectMutateTokens, Int64AsMcmc) {
  int64_t v = 7;
  EXPECT_TRUE(TokenToInt64("0", &v) && v == 0);
  EXPECT_TRUE(TokenToInt64("-12", &v) && v == -12);
  EXPECT_TRUE(TokenToInt64("-", &v) && v == 0);  // mcmc accepts a bare sign
  EXPECT_TRUE(TokenToInt64("9223372036854775807", &v) && v == INT64_MAX);
  EXPECT_TRUE(TokenToInt64("-9223372036854775808", &v) && v == INT64_MIN);
  for (const char* bad : {"", "+5", "12x", "9223372036854775808", "-9223372036854775809", "1-",
                          "00000000000000000000001"}) {
    EXPECT_FALSE(TokenToInt64(bad, &v)) << bad;
  }
}

TEST(InspectMutateTokens, FlagTokenInFindsTheFirstFlag) {
  bool found = false;
  EXPECT_EQ(FlagTokenIn("s2 Oabc Odef t", 'O', &found), "abc");
  EXPECT_TRUE(found);
  EXPECT_EQ(FlagTokenIn("s2  t", 't', &found), "");
  EXPECT_TRUE(found);
  EXPECT_EQ(FlagTokenIn("s2 t", 'O', &found), "");
  EXPECT_FALSE(found);
  EXPECT_EQ(FlagTokenIn("", 'O', &found), "");
  EXPECT_FALSE(found);
}

TEST(InspectMutateTokens, RequestFlagsFollowTheKeyOrLength) {
  bool found = false;
  EXPECT_EQ(RequestFlagToken(Make("mg key Oab T5"), 'T', &found), "5");
  EXPECT_TRUE(found);
  // A key that starts like a flag is not one; an ms's length is skipped.
  EXPECT_EQ(RequestFlagToken(Make("mg Okey v"), 'O', &found), "");
  EXPECT_FALSE(found);
  EXPECT_EQ(RequestFlagToken(Make("ms key 2 T9 O"), 'O', &found), "");
  EXPECT_TRUE(found);
  // Text commands have no flags.
  EXPECT_EQ(RequestFlagToken(Make("get Okey"), 'O', &found), "");
  EXPECT_FALSE(found);
}

TEST(InspectMutateTokens, ReplyMetaFlagsSkipTheCodeAndLength) {
  ResponseUd r;
  r.bytes = "VA 2 t9 Ox\r\nhi\r\n";
  ASSERT_EQ(memcache::ParseReply(r.bytes.data(), r.bytes.size(), &r.parsed),
            memcache::ReplyStatus::kOk);
  EXPECT_TRUE(IsMetaReply(r));
  EXPECT_EQ(ReplyMetaFlags(r), "t9 Ox");
  r.bytes = "SERVER_ERROR x y\r\n";
  ASSERT_EQ(memcache::ParseReply(r.bytes.data(), r.bytes.size(), &r.parsed),
            memcache::ReplyStatus::kOk);
  EXPECT_FALSE(IsMetaReply(r));
  EXPECT_EQ(ReplyMetaFlags(r), "");
  r.bytes = "HD\r\n";
  ASSERT_EQ(memcache::ParseReply(r.bytes.data(), r.bytes.size(), &r.parsed),
            memcache::ReplyStatus::kOk);
  EXPECT_EQ(ReplyMetaFlags(r), "");
  r.failed = true;
  EXPECT_FALSE(IsMetaReply(r));
}

}  // namespace
}  // namespace trove::proxy
