// The proxy's pure parts: backend reply framing, the token bucket, the jump
// hash, command numbers, backend identity, and the copy of config values
// between Lua VMs.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "protocol/memcache/response_parser.h"
#include "proxy/lua_vm.h"
#include "proxy/proxy_types.h"

namespace trove::proxy {
namespace {

using memcache::ParsedReply;
using memcache::ParseReply;
using memcache::ReplyStatus;

ReplyStatus Parse(const std::string& s, ParsedReply* r) { return ParseReply(s.data(), s.size(), r); }

TEST(ResponseParser, FramesTextValueBlocksThroughEnd) {
  ParsedReply r;
  const std::string two = "VALUE a 0 2\r\nhi\r\nVALUE b 5 3\r\nabc\r\nEND\r\n";
  ASSERT_EQ(Parse(two + "HD\r\n", &r), ReplyStatus::kOk);
  EXPECT_EQ(r.len, two.size());
  EXPECT_EQ(r.vlen, 2u);
  EXPECT_EQ(r.type, memcache::kTypeGet);
  for (size_t cut = 1; cut < two.size(); ++cut) {
    EXPECT_EQ(Parse(two.substr(0, cut), &r), ReplyStatus::kNeedMore) << cut;
  }
  ASSERT_EQ(Parse("END\r\n", &r), ReplyStatus::kOk);
  EXPECT_EQ(r.code, memcache::kCodeEnd);
}

TEST(ResponseParser, MetaAndTextCodes) {
  ParsedReply r;
  ASSERT_EQ(Parse("VA 3 t1\r\nabc\r\n", &r), ReplyStatus::kOk);
  EXPECT_EQ(r.vlen, 3u);
  EXPECT_EQ(r.len, 14u);
  EXPECT_EQ(Parse("VA 3 t1\r\nab", &r), ReplyStatus::kNeedMore);
  struct Case {
    const char* in;
    int code;
  } cases[] = {{"HD\r\n", memcache::kCodeOk},          {"EN\r\n", memcache::kCodeEnd},
               {"NF\r\n", memcache::kCodeNotFound},    {"NS\r\n", memcache::kCodeNotStored},
               {"EX\r\n", memcache::kCodeExists},      {"MN\r\n", memcache::kCodeNop},
               {"STORED\r\n", memcache::kCodeStored},  {"DELETED\r\n", memcache::kCodeDeleted},
               {"TOUCHED\r\n", memcache::kCodeTouched}, {"VERSION 1.2\r\n", memcache::kCodeVersion},
               {"ERROR\r\n", memcache::kCodeError},
               {"CLIENT_ERROR bad\r\n", memcache::kCodeClientError},
               {"SERVER_ERROR out of memory\r\n", memcache::kCodeServerError},
               {"12345\r\n", memcache::kCodeOk}};
  for (const Case& c : cases) {
    ASSERT_EQ(Parse(c.in, &r), ReplyStatus::kOk) << c.in;
    EXPECT_EQ(r.code, c.code) << c.in;
    EXPECT_EQ(r.len, std::string(c.in).size()) << c.in;
  }
  EXPECT_TRUE(r.code == memcache::kCodeOk);
}

TEST(ResponseParser, GarbageAndAbsurdLengthsAreBad) {
  ParsedReply r;
  EXPECT_EQ(Parse("garbage\r\n", &r), ReplyStatus::kBad);
  EXPECT_EQ(Parse("VALUE a 0 4294967293\r\n", &r), ReplyStatus::kBad);
  EXPECT_EQ(Parse("VA 4294967293\r\n", &r), ReplyStatus::kBad);
  EXPECT_EQ(Parse("VALUE a 0 2\r\nhiXX", &r), ReplyStatus::kBad);  // no CRLF after the value
  EXPECT_EQ(Parse("HD\r", &r), ReplyStatus::kNeedMore);
}

TEST(TokenBucket, StartsFullAndPassesOnlyWhileItHoldsMore) {
  int64_t bucket = 5, last = 0;
  int passed = 0;
  for (int i = 0; i < 10; ++i) passed += GlobalTbf::TbfTake(&bucket, &last, 5, 2, 100, 1, 0) ? 1 : 0;
  EXPECT_EQ(passed, 4);  // 5 -> 1: the fifth would empty it
  // Less than a tick: nothing added.
  EXPECT_FALSE(GlobalTbf::TbfTake(&bucket, &last, 5, 2, 100, 1, 100));
  // 2.5 ticks later: two whole ticks (4 tokens), capped at the limit.
  EXPECT_TRUE(GlobalTbf::TbfTake(&bucket, &last, 5, 2, 100, 1, 250));
  EXPECT_EQ(bucket, 4);
  EXPECT_EQ(last, 200);
  EXPECT_TRUE(GlobalTbf::TbfTake(&bucket, &last, 5, 2, 100, 1, 100000));
  EXPECT_EQ(bucket, 4);  // refilled to 5, took 1
}

TEST(JumpHash, StableInRangeAndMovesKeysOnlyToTheNewBucket) {
  for (uint64_t k = 0; k < 2000; ++k) {
    const uint64_t key = k * 0x9E3779B97F4A7C15ULL;
    EXPECT_EQ(JumpHash(key, 1), 0);
    for (int32_t n = 1; n < 12; ++n) {
      const int32_t a = JumpHash(key, n);
      const int32_t b = JumpHash(key, n + 1);
      ASSERT_GE(a, 0);
      ASSERT_LT(a, n);
      EXPECT_TRUE(b == a || b == n) << key << " " << n;
    }
  }
  std::set<int32_t> seen;
  for (uint64_t k = 0; k < 300; ++k) seen.insert(JumpHash(k * 7919 + 1, 3));
  EXPECT_EQ(seen.size(), 3u);
}

TEST(Commands, NumbersAndValueTokens) {
  EXPECT_EQ(CmdOf("mg"), kCmdMg);
  EXPECT_EQ(CmdOf("prepend"), kCmdPrepend);
  EXPECT_EQ(kCmdPrepend, 20);
  EXPECT_EQ(kCmdEndStorage, 21);
  EXPECT_EQ(CmdOf("version"), kCmdVersion);
  EXPECT_EQ(CmdOf("nope"), 0);
  EXPECT_EQ(ValueLengthToken(kCmdSet), 4);
  EXPECT_EQ(ValueLengthToken(kCmdCas), 4);
  EXPECT_EQ(ValueLengthToken(kCmdMs), 2);
  EXPECT_EQ(ValueLengthToken(kCmdGet), -1);
}

TEST(BackendSpec, KeyChangesWithEveryOption) {
  BackendSpec a{"b1", "127.0.0.1", "11211", {}, ""};
  BackendSpec b = a;
  EXPECT_EQ(a.Key(), b.Key());
  b.opts.connections = 3;
  EXPECT_NE(a.Key(), b.Key());
  b = a;
  b.opts.read_timeout = 0.25;
  EXPECT_NE(a.Key(), b.Key());
  b = a;
  b.label = "b2";
  EXPECT_NE(a.Key(), b.Key());
  b = a;
  b.key_prefix = "pfx";  // a pool's beprefix: sockets of its own
  EXPECT_NE(a.Key(), b.Key());
}

TEST(LuaCopy, PlainValuesCrossVmsAndFunctionsDoNot) {
  VmContext cfg_ctx;
  cfg_ctx.is_config = true;
  lua_State* L = NewVm(&cfg_ctx);
  ASSERT_NE(L, nullptr);
  ASSERT_EQ(luaL_dostring(L, "return { a = 1, b = 'x', c = { 1.5, true }, [7] = false }"), LUA_OK);
  CopiedValue v;
  std::string err;
  ASSERT_TRUE(CopyOut(L, -1, &v, &err)) << err;
  VmContext w_ctx;
  lua_State* W = NewVm(&w_ctx);
  PushCopy(W, v);
  lua_setglobal(W, "t");
  ASSERT_EQ(luaL_dostring(W, "return t.a == 1 and t.b == 'x' and t.c[1] == 1.5 and t.c[2] == true "
                             "and t[7] == false and math.type(t.a) == 'integer'"),
            LUA_OK);
  EXPECT_TRUE(lua_toboolean(W, -1));
  ASSERT_EQ(luaL_dostring(L, "return { f = function() end }"), LUA_OK);
  CopiedValue bad;
  EXPECT_FALSE(CopyOut(L, -1, &bad, &err));
  EXPECT_NE(err.find("function"), std::string::npos);
  // The config functions refuse to run in a worker VM and vice versa.
  EXPECT_NE(luaL_dostring(W, "mcp.backend('x', '127.0.0.1', 1)"), LUA_OK);
  EXPECT_NE(luaL_dostring(L, "mcp.attach(mcp.CMD_MG, function() end)"), LUA_OK);
  EXPECT_EQ(luaL_dostring(L, "return mcp.start_arg == false and mcp.CMD_ANY_STORAGE ~= nil"), LUA_OK);
  EXPECT_TRUE(lua_toboolean(L, -1));
  lua_close(L);
  lua_close(W);
}

}  // namespace
}  // namespace trove::proxy
