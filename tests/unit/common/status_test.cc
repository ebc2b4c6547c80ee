#include <gtest/gtest.h>

#include "common/clock.h"
#include "common/result.h"
#include "common/status.h"
#include "common/str_append.h"

namespace trove {
namespace {

TEST(StatusTest, OkHasNoMessage) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.message(), "");
}

TEST(StatusTest, ErrnoIsCopied) {
  Status s = Status::FromErrno("bind", EADDRINUSE);
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kIoError);
  EXPECT_NE(s.message().find("bind: "), std::string_view::npos);
}

TEST(ResultTest, HoldsValueOrStatus) {
  Result<int> r(5);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value(), 5);
  Result<int> e(Status::Invalid("bad"));
  EXPECT_FALSE(e.ok());
  EXPECT_EQ(e.status().message(), "bad");
}

TEST(StrAppendTest, ParsesAndFormats) {
  uint64_t v;
  EXPECT_TRUE(ParseU64("18446744073709551615", &v));
  EXPECT_EQ(v, UINT64_MAX);
  EXPECT_FALSE(ParseU64("18446744073709551616", &v));
  EXPECT_FALSE(ParseU64("12a", &v));
  EXPECT_FALSE(ParseU64("", &v));
  EXPECT_FALSE(ParseU64("-1", &v));
  std::string s;
  AppendU64(s, 42);
  AppendI64(s, -7);
  EXPECT_EQ(s, "42-7");
}

TEST(StrAppendTest, ParseDoubleTakesWholeStringsOnly) {
  double d = 0;
  EXPECT_TRUE(ParseDouble("1.25", &d));
  EXPECT_EQ(d, 1.25);
  EXPECT_TRUE(ParseDouble("-2e3", &d));
  EXPECT_EQ(d, -2000.0);
  EXPECT_FALSE(ParseDouble("", &d));
  EXPECT_FALSE(ParseDouble("1.5x", &d));
  EXPECT_FALSE(ParseDouble("abc", &d));
  EXPECT_TRUE(ParseDouble("1e999", &d));  // overflow: inf, with errno set
  EXPECT_EQ(errno, ERANGE);
}

TEST(ClockTest, ManualClockMovesOnlyWhenTold) {
  ManualClock c(1000);
  EXPECT_EQ(c.UnixSeconds(), 1000);
  c.AdvanceSeconds(5);
  EXPECT_EQ(c.UnixSeconds(), 1005);
}

}  // namespace
}  // namespace trove
