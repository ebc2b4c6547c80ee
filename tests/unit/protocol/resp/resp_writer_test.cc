// RespWriter tests: RESP2 and RESP3 forms and error sanitising. Test thread only.
#include "protocol/resp/core/resp_writer.h"

#include <gtest/gtest.h>

namespace trove::resp {
namespace {

std::string Write(int proto, const std::function<void(RespWriter&)>& fn) {
  net::OutputBuffer out;
  RespWriter w(&out, proto);
  fn(w);
  return out.ToString();
}

TEST(RespWriterTest, ScalarsInBothProtocols) {
  EXPECT_EQ(Write(2, [](RespWriter& w) { w.Integer(-42); }), ":-42\r\n");
  EXPECT_EQ(Write(2, [](RespWriter& w) { w.Bulk("ab"); }), "$2\r\nab\r\n");
  EXPECT_EQ(Write(2, [](RespWriter& w) { w.Null(); }), "$-1\r\n");
  EXPECT_EQ(Write(3, [](RespWriter& w) { w.Null(); }), "_\r\n");
  EXPECT_EQ(Write(2, [](RespWriter& w) { w.NullArray(); }), "*-1\r\n");
  EXPECT_EQ(Write(3, [](RespWriter& w) { w.NullArray(); }), "_\r\n");
  EXPECT_EQ(Write(2, [](RespWriter& w) { w.Bool(true); }), ":1\r\n");
  EXPECT_EQ(Write(3, [](RespWriter& w) { w.Bool(false); }), "#f\r\n");
  EXPECT_EQ(Write(2, [](RespWriter& w) { w.Double(1.5); }), "$3\r\n1.5\r\n");
  EXPECT_EQ(Write(3, [](RespWriter& w) { w.Double(1.5); }), ",1.5\r\n");
  EXPECT_EQ(Write(3, [](RespWriter& w) { w.Double(1.0 / 0.0); }), ",inf\r\n");
  EXPECT_EQ(Write(2, [](RespWriter& w) { w.Double(-1.0 / 0.0); }), "$4\r\n-inf\r\n");
  EXPECT_EQ(Write(3, [](RespWriter& w) { w.BigNumber("123"); }), "(123\r\n");
  EXPECT_EQ(Write(3, [](RespWriter& w) { w.Verbatim("hi"); }), "=6\r\ntxt:hi\r\n");
  EXPECT_EQ(Write(2, [](RespWriter& w) { w.Verbatim("hi"); }), "$2\r\nhi\r\n");
}

TEST(RespWriterTest, DoubleUsesRedis70Precision) {
  EXPECT_EQ(FormatDouble(1.1), "1.1000000000000001");
  EXPECT_EQ(FormatDouble(3), "3");
  EXPECT_EQ(FormatLongDouble(10.5L), "10.5");
  EXPECT_EQ(FormatLongDouble(3.0L), "3");
}

TEST(RespWriterTest, AggregatesDegradeInResp2) {
  EXPECT_EQ(Write(2, [](RespWriter& w) { w.MapHeader(2); }), "*4\r\n");
  EXPECT_EQ(Write(3, [](RespWriter& w) { w.MapHeader(2); }), "%2\r\n");
  EXPECT_EQ(Write(2, [](RespWriter& w) { w.SetHeader(3); }), "*3\r\n");
  EXPECT_EQ(Write(3, [](RespWriter& w) { w.SetHeader(3); }), "~3\r\n");
  EXPECT_EQ(Write(3, [](RespWriter& w) { w.PushHeader(1); }), ">1\r\n");
}

TEST(RespWriterTest, ErrorsAndSimpleStringsCannotInjectFrames) {
  EXPECT_EQ(Write(2, [](RespWriter& w) { w.Error("ERR bad\r\n+OK"); }), "-ERR bad  +OK\r\n");
  EXPECT_EQ(Write(2, [](RespWriter& w) { w.Simple("a\nb"); }), "+a b\r\n");
}

TEST(RespWriterTest, LargeBulkIsComplete) {
  std::string big(100000, 'x');
  std::string out = Write(2, [&](RespWriter& w) { w.Bulk(big); });
  EXPECT_EQ(out, "$100000\r\n" + big + "\r\n");
}

}  // namespace
}  // namespace trove::resp
