// The proxy's request parser and request edits (proxy/request.h) and the
// router's lookup rules (proxy/router.h), against memcached's proxy.
#include <gtest/gtest.h>

#include <string>

#include "proxy/request.h"
#include "proxy/router.h"

namespace trove::proxy {
namespace {

using namespace memcache::cmd;  // NOLINT

int Parse(const std::string& line, ReqInfo* info) { return ParseRequest(line, line.size() + 2, info); }

RequestUd Make(const std::string& line, const std::string& value = "") {
  RequestUd r;
  ReqInfo info;
  EXPECT_EQ(Parse(line, &info), 0) << line;
  r.Assign(line + "\r\n" + value, line.size(), 2, info, 0);
  return r;
}

TEST(ProxyRequestParse, TokenCountsAsMemcachedsProxy) {
  ReqInfo i;
  for (const char* bad : {"get", "incr k", "decr k", "touch k", "gat 10", "gats 1", "mg", "md", "ma",
                          "ms k", "set with the wrong number", "ms k x", "set k 0 0 -1"}) {
    EXPECT_EQ(Parse(bad, &i), -1) << bad;
  }
  EXPECT_EQ(Parse("flush_all", &i), -2);
  EXPECT_EQ(Parse("bogus k", &i), -2);
  EXPECT_EQ(ParseRequest("mn", 3, &i), -1);  // shorter than 4 bytes with its LF
  EXPECT_EQ(Parse("mn", &i), 0);
  EXPECT_EQ(Parse("version", &i), 0);
}

TEST(ProxyRequestParse, KeysValuesNoreplyAndFlags) {
  ReqInfo i;
  ASSERT_EQ(Parse("gat 10 foo bar", &i), 0);
  EXPECT_EQ(i.cmd, kCmdGat);
  EXPECT_TRUE(i.get_type);
  EXPECT_EQ(i.key_token, 2);
  EXPECT_EQ(std::string("gat 10 foo bar").substr(i.key_off, i.key_len), "foo");
  ASSERT_EQ(Parse("set k 1 2 10 noreply", &i), 0);
  EXPECT_TRUE(i.noreply);
  EXPECT_TRUE(i.has_value);
  EXPECT_EQ(i.vlen, 10u);
  ASSERT_EQ(Parse("ms k 5 T10 q k", &i), 0);
  EXPECT_TRUE(i.meta);
  EXPECT_EQ(i.vlen, 5u);
  EXPECT_TRUE(i.HasFlag('T'));
  EXPECT_TRUE(i.HasFlag('q'));
  EXPECT_FALSE(i.HasFlag('O'));
  ASSERT_EQ(Parse("get foo", &i), 0);
  EXPECT_FALSE(i.HasFlag('f'));  // text commands have no flags
}

TEST(ProxyRequestEdit, RenderAppendAndDelete) {
  RequestUd r = Make("mg setexist N50 Oexists T73 c");
  ASSERT_TRUE(r.Render(r.FlagIndex('O'), 'O', "overwrite"));
  EXPECT_EQ(r.line(), "mg setexist N50 Ooverwrite T73 c");
  ASSERT_TRUE(r.Render(r.FlagIndex('O'), 0, ""));
  EXPECT_EQ(r.line(), "mg setexist N50 T73 c");
  ASSERT_TRUE(r.Render(r.FlagIndex('c'), 0, ""));
  EXPECT_EQ(r.line(), "mg setexist N50 T73");  // trailing spaces trimmed
  ASSERT_TRUE(r.Append('F', "1234"));
  EXPECT_EQ(r.line(), "mg setexist N50 T73 F1234");
  EXPECT_TRUE(r.info.HasFlag('F'));
  EXPECT_EQ(r.bytes, "mg setexist N50 T73 F1234\r\n");
}

TEST(ProxyRequestEdit, ValueSurvivesAndLengthIsLimited) {
  RequestUd r = Make("set k 8 10 2", "hi\r\n");
  ASSERT_TRUE(r.Render(2, 0, "20"));
  EXPECT_EQ(r.bytes, "set k 20 10 2\r\nhi\r\n");
  EXPECT_FALSE(r.Append('X', std::string(kRequestMaxLen, 'x')));
  EXPECT_EQ(r.bytes, "set k 20 10 2\r\nhi\r\n");
  RequestUd v = Make("version");
  EXPECT_FALSE(v.Render(0, 0, ""));  // no request is left
}

TEST(ProxyRequestEdit, BackendBytesMangleNoreplyAndQuiet) {
  std::string out;
  BackendBytes(Make("set /b/a 0 0 2 noreply", "hi\r\n"), &out);
  EXPECT_EQ(out, "set /b/a 0 0 2 noreplY\r\nhi\r\n");
  BackendBytes(Make("ms /b/a 2 q", "hi\r\n"), &out);
  EXPECT_EQ(out, "ms /b/a 2  \r\nhi\r\n");
  BackendBytes(Make("mg k v"), &out);
  EXPECT_EQ(out, "mg k v\r\n");
}

TEST(ProxyRouter, PrefixAnchorAndFallbacks) {
  RouterConf r;
  r.map["one"].any = 1;
  RouterConf::Entry sub;
  sub.by_cmd_map = true;
  sub.by_cmd[kCmdGet] = 2;
  sub.any = 3;
  r.map["cmd"] = sub;
  r.cmap[kCmdIncr] = 4;
  r.def = 5;
  r.sep = '|';
  EXPECT_EQ(r.Route("one|x", kCmdMg), 1);
  EXPECT_EQ(r.Route("cmd|x", kCmdGet), 2);
  EXPECT_EQ(r.Route("cmd|x", kCmdSet), 3);
  EXPECT_EQ(r.Route("nope|x", kCmdIncr), 4);
  EXPECT_EQ(r.Route("one/x", kCmdMg), 5);  // no stop: default
  EXPECT_EQ(r.Route("|x", kCmdMg), 5);      // empty prefix
  r.type = RouterConf::kLongSep;
  r.lstop = "+#+";
  EXPECT_EQ(r.Route("one+#+foo", kCmdMs), 1);
  EXPECT_EQ(r.Route("one+#found", kCmdMs), 5);
  r.type = RouterConf::kAnchorSmall;
  r.astart = '_';
  r.astop = ',';
  EXPECT_EQ(r.Route("_one,bar", kCmdMd), 1);
  EXPECT_EQ(r.Route("one,bar", kCmdMd), 5);  // no anchor: the fallbacks
  EXPECT_EQ(r.Route("", kCmdMd), LUA_NOREF);
  r.type = RouterConf::kAnchorBig;
  r.lstart = "=?=";
  r.lstop = "__";
  EXPECT_EQ(r.Route("=?=one__key", kCmdMa), 1);
  EXPECT_EQ(r.Route("=?=one_nothing", kCmdMa), 5);
  r.type = RouterConf::kCmdMap;
  EXPECT_EQ(r.Route("one|x", kCmdIncr), 4);
  EXPECT_EQ(r.Route("one|x", kCmdGets), 5);
}

}  // namespace
}  // namespace trove::proxy
