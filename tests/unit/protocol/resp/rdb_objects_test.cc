// DUMP/RESTORE payloads (types/rdb_objects.h) and the packed blobs inside
// them (types/rdb_packed.h): round trips of every type, payloads captured
// from redis-server 7.0.15, the older forms built here by hand, and
// malformed input (every truncation, flipped bytes, duplicates, lying
// headers) refused without reading outside the payload.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "common/crc64.h"
#include "protocol/resp/types/rdb_codec.h"
#include "protocol/resp/types/rdb_objects.h"
#include "protocol/resp/types/rdb_packed.h"

namespace trove::resp {
namespace {

using engine::ValueType;

std::string Bytes(const char* s, size_t n) { return std::string(s, n); }

// body + the footer of RDB version `version`.
std::string WithFooter(std::string body, uint16_t version = kRdbVersionWritten) {
  body.push_back(static_cast<char>(version & 0xff));
  body.push_back(static_cast<char>(version >> 8));
  uint64_t crc = Crc64(0, body);
  for (int i = 0; i < 8; ++i, crc >>= 8) body.push_back(static_cast<char>(crc & 0xff));
  return body;
}

void PutLe(std::string* out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

// A ziplist of short strings (6-bit lengths, 1-byte prevlens).
std::string Ziplist(const std::vector<std::string>& entries) {
  std::string e;
  size_t prev = 0, last = 10;
  for (const auto& s : entries) {
    last = 10 + e.size();
    std::string one;
    one.push_back(static_cast<char>(prev));
    one.push_back(static_cast<char>(s.size()));
    one += s;
    prev = one.size();
    e += one;
  }
  std::string zl;
  PutLe(&zl, 10 + e.size() + 1, 4);
  PutLe(&zl, last, 4);
  PutLe(&zl, entries.size(), 2);
  return zl + e + "\xff";
}

// A listpack of short strings (6-bit lengths, 1-byte backlens).
std::string Listpack(const std::vector<std::string>& entries) {
  std::string e;
  for (const auto& s : entries) {
    e.push_back(static_cast<char>(0x80 | s.size()));
    e += s;
    e.push_back(static_cast<char>(1 + s.size()));
  }
  std::string lp;
  PutLe(&lp, 6 + e.size() + 1, 4);
  PutLe(&lp, entries.size(), 2);
  return lp + e + "\xff";
}

// type byte + a blob as an RDB string + footer.
std::string PackedPayload(RdbType type, const std::string& blob) {
  std::string body(1, static_cast<char>(type));
  AppendRdbString(&body, blob);
  return WithFooter(body);
}

std::vector<std::string> ListOf(const RdbValue& v) {
  const auto& l = static_cast<const ListValue&>(*v.coll);
  return {l.items().begin(), l.items().end()};
}
std::set<std::string> SetOf(const RdbValue& v) {
  const auto& s = static_cast<const SetValue&>(*v.coll);
  return {s.members().begin(), s.members().end()};
}
std::map<std::string, double> ZsetOf(const RdbValue& v) {
  std::map<std::string, double> m;
  for (const auto& [score, member] : static_cast<const ZsetValue&>(*v.coll).ordered())
    m[member] = score;
  return m;
}
std::map<std::string, std::string> HashOf(const RdbValue& v) {
  std::map<std::string, std::string> m;
  for (const auto& [f, val] : static_cast<const HashValue&>(*v.coll).Entries())
    m[std::string(f)] = std::string(val);
  return m;
}

RdbValue MustLoad(const std::string& payload) {
  RdbValue v;
  EXPECT_EQ(LoadPayload(payload, &v), RdbLoad::kOk);
  return v;
}

TEST(RdbObjectsTest, StringsAreWrittenAsRedis70WritesThem) {
  std::string p;
  DumpString("hello", &p);
  EXPECT_EQ(p, Bytes("\x00\x05hello\x0a\x00\x63\x72\xdf\x76\x65\x34\x20\x0a", 17));
  DumpString("12345", &p);
  EXPECT_EQ(p, Bytes("\x00\xc1\x39\x30\x0a\x00\x9d\x94\xea\x27\x93\xfc\x08\xb9", 14));
  for (const std::string& s : std::vector<std::string>{"", "0", "-1", "127", "-128", "128", "-32768", "32768",
                              "2147483647", "-2147483648", "2147483648", "007", "-0", "+1",
                              std::string("\x00\xff bin", 6), std::string(70000, 'x')}) {
    DumpString(s, &p);
    RdbValue v = MustLoad(p);
    EXPECT_EQ(v.type, ValueType::kString);
    EXPECT_EQ(v.str, s);
  }
}

TEST(RdbObjectsTest, CollectionsRoundTrip) {
  ListValue list;
  for (int i = 0; i < 1000; ++i) list.PushBack(i % 3 == 0 ? std::to_string(i) : "e" + std::to_string(i));
  list.PushBack("");
  std::string p;
  DumpCollection(ValueType::kList, list, &p);
  EXPECT_EQ(p[0], static_cast<char>(RdbType::kList));
  RdbValue v = MustLoad(p);
  ASSERT_EQ(v.type, ValueType::kList);
  EXPECT_EQ(ListOf(v), std::vector<std::string>(list.items().begin(), list.items().end()));

  for (bool ints : {true, false}) {
    SetValue set;
    for (int i = -300; i < 300; ++i) set.Add(ints ? std::to_string(i * 7) : "m" + std::to_string(i));
    set.Add(ints ? "9223372036854775807" : "");
    set.CheckEncoding(512, 128, 64);
    DumpCollection(ValueType::kSet, set, &p);
    v = MustLoad(p);
    ASSERT_EQ(v.type, ValueType::kSet);
    EXPECT_EQ(SetOf(v), std::set<std::string>(set.members().begin(), set.members().end()));
  }

  ZsetValue z;
  for (int i = 0; i < 200; ++i) z.Put("m" + std::to_string(i), i * 0.25 - 10);
  z.Put("inf", HUGE_VAL);
  z.Put("-inf", -HUGE_VAL);
  z.Put("", 1e-300);
  DumpCollection(ValueType::kZset, z, &p);
  EXPECT_EQ(p[0], static_cast<char>(RdbType::kZset2));
  v = MustLoad(p);
  ASSERT_EQ(v.type, ValueType::kZset);
  EXPECT_EQ(ZsetOf(v).size(), 203u);
  EXPECT_EQ(ZsetOf(v)["-inf"], -HUGE_VAL);
  EXPECT_EQ(ZsetOf(v)["m7"], 7 * 0.25 - 10);

  HashValue h;
  for (int i = 0; i < 700; ++i) h.Set("f" + std::to_string(i), std::string(static_cast<size_t>(i % 90), 'v'));
  h.Set("", "");
  DumpCollection(ValueType::kHash, h, &p);
  v = MustLoad(p);
  ASSERT_EQ(v.type, ValueType::kHash);
  std::map<std::string, std::string> want;
  for (const auto& [f, val] : h.Entries()) want[std::string(f)] = std::string(val);
  EXPECT_EQ(HashOf(v), want);
}

// DUMP replies of redis-server 7.0.15 (its default thresholds).
TEST(RdbObjectsTest, LoadsRedis70Payloads) {
  // HSET hlp f1 v1 f2 2 "" empty: a listpack hash.
  RdbValue v = MustLoad(Bytes(
      "\x10\x1e\x1e\x00\x00\x00\x06\x00\x82\x66\x31\x03\x82\x76\x31\x03\x82\x66\x32\x03\x02\x01"
      "\x80\x01\x85\x65\x6d\x70\x74\x79\x06\xff\x0a\x00\x2a\x28\x03\xda\x62\x0f\x88\x7a", 42));
  EXPECT_EQ(HashOf(v), (std::map<std::string, std::string>{{"f1", "v1"}, {"f2", "2"}, {"", "empty"}}));
  // SADD iset 1 2 3 -5 70000: an intset of 4-byte integers.
  v = MustLoad(Bytes(
      "\x0b\x1c\x04\x00\x00\x00\x05\x00\x00\x00\xfb\xff\xff\xff\x01\x00\x00\x00\x02\x00\x00\x00"
      "\x03\x00\x00\x00\x70\x11\x01\x00\x0a\x00\x23\xe5\xf3\x76\x55\x98\x61\x7d", 40));
  EXPECT_EQ(SetOf(v), (std::set<std::string>{"1", "2", "3", "-5", "70000"}));
  // RPUSH ql a b 123 -7 "": a QUICKLIST_2 of one packed node.
  v = MustLoad(Bytes(
      "\x12\x01\x02\x14\x14\x00\x00\x00\x05\x00\x81\x61\x02\x81\x62\x02\x7b\x01\xdf\xf9\x02\x80"
      "\x01\xff\x0a\x00\x29\x91\x5f\xc4\x0b\x3f\xae\x48", 34));
  EXPECT_EQ(ListOf(v), (std::vector<std::string>{"a", "b", "123", "-7", ""}));
  // ZADD zlp 1 a 2.5 b -3 c: a listpack zset (integer and text scores).
  v = MustLoad(Bytes(
      "\x11\x1a\x1a\x00\x00\x00\x06\x00\x81\x63\x02\xdf\xfd\x02\x81\x61\x02\x01\x01\x81\x62\x02"
      "\x83\x32\x2e\x35\x04\xff\x0a\x00\xa6\x8a\x1a\xb1\xa9\xf2\xdc\xc2", 38));
  EXPECT_EQ(ZsetOf(v), (std::map<std::string, double>{{"a", 1}, {"b", 2.5}, {"c", -3}}));
  // SET lzf <"abcdefgh" x 20>: an LZF-compressed string.
  v = MustLoad(Bytes(
      "\x00\xc3\x10\x40\xa0\x08\x61\x62\x63\x64\x65\x66\x67\x68\x61\xe0\x8c\x07\x01\x67\x68\x0a"
      "\x00\xa2\xb2\xee\x8c\xb4\x77\xf1\x4a", 31));
  std::string want;
  for (int i = 0; i < 20; ++i) want += "abcdefgh";
  EXPECT_EQ(v.str, want);
}

TEST(RdbObjectsTest, LoadsTheOlderPackedForms) {
  RdbValue v = MustLoad(PackedPayload(RdbType::kHashZiplist, Ziplist({"f", "v", "g", "w"})));
  EXPECT_EQ(HashOf(v), (std::map<std::string, std::string>{{"f", "v"}, {"g", "w"}}));
  v = MustLoad(PackedPayload(RdbType::kZsetZiplist, Ziplist({"a", "1.5", "b", "-2"})));
  EXPECT_EQ(ZsetOf(v), (std::map<std::string, double>{{"a", 1.5}, {"b", -2}}));
  v = MustLoad(PackedPayload(RdbType::kListZiplist, Ziplist({"x", "", "y"})));
  EXPECT_EQ(ListOf(v), (std::vector<std::string>{"x", "", "y"}));
  v = MustLoad(PackedPayload(RdbType::kSetListpack, Listpack({"p", "q"})));
  EXPECT_EQ(SetOf(v), (std::set<std::string>{"p", "q"}));
  // QUICKLIST: two ziplist nodes (an empty one is skipped, as Redis does).
  std::string body = "\x0e\x03";
  AppendRdbString(&body, Ziplist({"a", "b"}));
  AppendRdbString(&body, Ziplist({}));
  AppendRdbString(&body, Ziplist({"c"}));
  v = MustLoad(WithFooter(body));
  EXPECT_EQ(ListOf(v), (std::vector<std::string>{"a", "b", "c"}));
  // QUICKLIST_2 with a plain node (container 1) between packed ones.
  body = "\x12\x03\x02";
  AppendRdbString(&body, Listpack({"a"}));
  body += "\x01";
  AppendRdbString(&body, std::string(100, 'P'));
  body += "\x02";
  AppendRdbString(&body, Listpack({"z"}));
  v = MustLoad(WithFooter(body));
  EXPECT_EQ(ListOf(v), (std::vector<std::string>{"a", std::string(100, 'P'), "z"}));
  // ZIPMAP: "foo" => "bar" (one free byte after it), "hello" => "world".
  v = MustLoad(PackedPayload(RdbType::kHashZipmap,
                             Bytes("\x02\x03" "foo" "\x03\x01" "bar" "X" "\x05" "hello" "\x05\x00"
                                   "world" "\xff", 25)));
  EXPECT_EQ(HashOf(v), (std::map<std::string, std::string>{{"foo", "bar"}, {"hello", "world"}}));
  // ZSET (text scores; 254 and 255 are inf and -inf).
  body = "\x03\x03";
  AppendRdbString(&body, "a");
  body += "\x03" "1.5";
  AppendRdbString(&body, "b");
  body += "\xfe";
  AppendRdbString(&body, "c");
  body += "\xff";
  v = MustLoad(WithFooter(body));
  EXPECT_EQ(ZsetOf(v), (std::map<std::string, double>{{"a", 1.5}, {"b", HUGE_VAL}, {"c", -HUGE_VAL}}));
}

TEST(RdbObjectsTest, ListpackAndZiplistIntegerEncodings) {
  // listpack: 7-bit 5, 13-bit -100, int16 1000, int24 -70000, int32, int64.
  std::string e = "\x05\x01";
  e += Bytes("\xdf\x9c\x02", 3);  // -100 in 13 bits: 0x1f9c
  e += Bytes("\xf1\xe8\x03\x03", 4);
  e += Bytes("\xf2\x90\xee\xfe\x04", 5);
  e += Bytes("\xf3\x00\x00\x00\x80\x05", 6);
  e += Bytes("\xf4\xff\xff\xff\xff\xff\xff\xff\x7f\x09", 10);
  std::string lp;
  PutLe(&lp, 6 + e.size() + 1, 4);
  PutLe(&lp, 6, 2);
  lp += e + "\xff";
  std::vector<std::string> got;
  ASSERT_TRUE(WalkListpack(lp, [&](std::string_view s) {
    got.emplace_back(s);
    return true;
  }));
  EXPECT_EQ(got, (std::vector<std::string>{"5", "-100", "1000", "-70000", "-2147483648",
                                           "9223372036854775807"}));
  // ziplist: immediate 12, int8 -3, int16, int24, int32, int64.
  const std::vector<std::string> encs = {"\xfd", Bytes("\xfe\xfd", 2), Bytes("\xc0\x18\xfc", 3),
                                         Bytes("\xf0\x90\xee\xfe", 4),
                                         Bytes("\xd0\x00\x00\x00\x80", 5),
                                         Bytes("\xe0\x01\x00\x00\x00\x00\x00\x00\x80", 9)};
  std::string entries;
  size_t prev = 0, last = 10;
  for (const auto& enc : encs) {
    last = 10 + entries.size();
    entries.push_back(static_cast<char>(prev));
    entries += enc;
    prev = 1 + enc.size();
  }
  std::string zl;
  PutLe(&zl, 10 + entries.size() + 1, 4);
  PutLe(&zl, last, 4);
  PutLe(&zl, encs.size(), 2);
  zl += entries + "\xff";
  got.clear();
  ASSERT_TRUE(WalkZiplist(zl, [&](std::string_view s) {
    got.emplace_back(s);
    return true;
  }));
  EXPECT_EQ(got, (std::vector<std::string>{"12", "-3", "-1000", "-70000", "-2147483648",
                                           "-9223372036854775807"}));
}

TEST(RdbObjectsTest, RefusesWhatRedisRefuses) {
  RdbValue v;
  auto bad = [&](const std::string& p) { return LoadPayload(p, &v) == RdbLoad::kBadData; };
  std::string body = "\x02\x02";  // SET with a duplicate member
  AppendRdbString(&body, "a");
  AppendRdbString(&body, "a");
  EXPECT_TRUE(bad(WithFooter(body)));
  EXPECT_TRUE(bad(PackedPayload(RdbType::kHashListpack, Listpack({"f", "1", "f", "2"}))));
  EXPECT_TRUE(bad(PackedPayload(RdbType::kHashListpack, Listpack({"f", "1", "g"}))));  // odd
  EXPECT_TRUE(bad(PackedPayload(RdbType::kHashListpack, Listpack({}))));               // empty
  EXPECT_TRUE(bad(PackedPayload(RdbType::kZsetListpack, Listpack({"a", "x1"}))));     // score
  EXPECT_TRUE(bad(PackedPayload(RdbType::kZsetListpack, Listpack({"a", "nan"}))));
  body = "\x05\x01";  // ZSET_2 with a NaN score
  AppendRdbString(&body, "m");
  body += Bytes("\x00\x00\x00\x00\x00\x00\xf8\x7f", 8);
  EXPECT_TRUE(bad(WithFooter(body)));
  EXPECT_TRUE(bad(WithFooter(Bytes("\x01\x00", 2))));  // empty list
  EXPECT_TRUE(bad(WithFooter("\x12\x01\x03\x01x")));  // container 3
  std::string is;  // intset not ascending
  PutLe(&is, 2, 4);
  PutLe(&is, 2, 4);
  PutLe(&is, 5, 2);
  PutLe(&is, 5, 2);
  EXPECT_TRUE(bad(PackedPayload(RdbType::kSetIntset, is)));
  for (int t : {6, 7, 8, 15, 19, 21, 22, 23, 24, 25, 200}) {
    EXPECT_TRUE(bad(WithFooter(std::string(1, static_cast<char>(t)) + "\x01\x01x"))) << t;
  }
  std::string ok;
  DumpString("x", &ok);
  std::string trailing = ok.substr(0, ok.size() - 10) + "z";
  EXPECT_TRUE(bad(WithFooter(trailing)));
  std::string body11 = ok.substr(0, ok.size() - 10);
  EXPECT_EQ(LoadPayload(WithFooter(body11, 12), &v), RdbLoad::kOk);  // Redis 7.4
  EXPECT_EQ(LoadPayload(WithFooter(body11, 13), &v), RdbLoad::kBadFooter);
  ok[1] ^= 1;
  EXPECT_EQ(LoadPayload(ok, &v), RdbLoad::kBadFooter);
}

// Every prefix of a valid body fails (each form declares its sizes up
// front), and random corruption never reads outside the payload (ASan).
TEST(RdbObjectsTest, TruncatedAndCorruptedBodiesFailCleanly) {
  std::vector<std::string> bodies;
  auto body_of = [](const std::string& p) { return p.substr(0, p.size() - 10); };
  std::string p;
  DumpString("hello world", &p);
  bodies.push_back(body_of(p));
  ListValue l;
  for (int i = 0; i < 20; ++i) l.PushBack(std::to_string(i * 1000));
  DumpCollection(ValueType::kList, l, &p);
  bodies.push_back(body_of(p));
  ZsetValue z;
  z.Put("a", 1);
  z.Put("b", 2);
  DumpCollection(ValueType::kZset, z, &p);
  bodies.push_back(body_of(p));
  bodies.push_back(body_of(PackedPayload(RdbType::kHashZiplist, Ziplist({"f", "v", "g", "w"}))));
  bodies.push_back(body_of(PackedPayload(RdbType::kHashListpack, Listpack({"f", "v"}))));
  bodies.push_back(body_of(PackedPayload(RdbType::kHashZipmap, Bytes("\x01\x01" "a" "\x01\x00" "b" "\xff", 7))));
  RdbValue v;
  for (const auto& b : bodies) {
    ASSERT_EQ(LoadPayload(WithFooter(b), &v), RdbLoad::kOk);
    for (size_t n = 0; n < b.size(); ++n) {
      EXPECT_EQ(LoadPayload(WithFooter(b.substr(0, n)), &v), RdbLoad::kBadData) << n;
    }
  }
  std::mt19937 rng(20240);
  for (int round = 0; round < 20000; ++round) {
    std::string b = bodies[rng() % bodies.size()];
    const int flips = 1 + static_cast<int>(rng() % 3);
    for (int i = 0; i < flips; ++i) b[rng() % b.size()] = static_cast<char>(rng());
    (void)LoadPayload(WithFooter(b), &v);
  }
}

}  // namespace
}  // namespace trove::resp
