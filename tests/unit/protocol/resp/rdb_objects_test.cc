// DUMP/RESTORE payloads (types/rdb_objects.h) and the packed blobs inside
// them (types/rdb_packed.h): round trips of every type, payloads captured
// from redis-server 7.0.15, the older forms built here by hand, Redis 7.4's
// hashes with field TTLs (types 22-25, built by hand from rdb.c's layout),
// and malformed input (every truncation, flipped bytes, duplicates, lying
// headers, bad TTLs) refused without reading outside the payload.
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

// Loads a payload as RESTORE does, field TTLs applied (the encoding left
// as loaded: compact).
RdbValue MustLoad(const std::string& payload) {
  RdbValue v;
  EXPECT_EQ(LoadPayload(payload, &v), RdbLoad::kOk);
  ApplyFieldTtls(&v);
  return v;
}

// Listpack entries as Redis writes them: a short string, or an integer (7-bit
// or int64 form).
std::string LpStr(const std::string& s) {
  return static_cast<char>(0x80 | s.size()) + s + static_cast<char>(1 + s.size());
}
std::string LpInt(int64_t v) {
  if (v >= 0 && v <= 127) return std::string{static_cast<char>(v), '\x01'};
  std::string e(1, '\xf4');
  PutLe(&e, static_cast<uint64_t>(v), 8);
  return e + '\x09';
}
std::string ListpackOf(const std::vector<std::string>& entries) {
  std::string data;
  for (const auto& e : entries) data += e;
  std::string lp;
  PutLe(&lp, 6 + data.size() + 1, 4);
  PutLe(&lp, entries.size(), 2);
  return lp + data + "\xff";
}
// A hash's (field, expiry) in its order (Entries: listpackex order).
using TtlList = std::vector<std::pair<std::string, int64_t>>;
TtlList TtlOrder(const HashValue& h) {
  TtlList out;
  for (const auto& [f, val] : h.Entries()) out.emplace_back(std::string(f), h.FieldExpiry(f));
  return out;
}
TtlList TtlOrder(const RdbValue& v) { return TtlOrder(static_cast<const HashValue&>(*v.coll)); }
constexpr int64_t kT = 1700000000000;  // a unix time in ms

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
  for (int t : {6, 7, 8, 15, 19, 21, 200}) {
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
  HashValue h;
  h.Set("a", "1");
  h.Set("b", "2");
  h.SetFieldExpiry("a", kT);
  DumpCollection(ValueType::kHash, h, &p);
  bodies.push_back(body_of(p));
  std::string ex(1, static_cast<char>(RdbType::kHashListpackEx));
  PutLe(&ex, kT, 8);
  AppendRdbString(&ex, ListpackOf({LpStr("a"), LpStr("1"), LpInt(kT), LpStr("b"), LpStr("2"), LpInt(0)}));
  bodies.push_back(ex);
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
    if (LoadPayload(WithFooter(b), &v) == RdbLoad::kOk) ApplyFieldTtls(&v);
  }
}

// ---- hashes with field TTLs (Redis 7.4's types 22-25) ----

// DUMP of a hash with a field TTL: RDB_TYPE_HASH_METADATA (24), the earliest
// expiry, then per field the TTL relative to it (+1; 0 none), field, value,
// in RDB version 12. The fields with a TTL come last first, so a loader
// inserting each before the first not-earlier TTL rebuilds the order.
TEST(RdbObjectsTest, HashWithFieldTtlsIsWrittenAsMetadata) {
  HashValue h;
  for (const char* f : {"a", "b", "c", "d"}) h.Set(f, std::string("v") + f);
  h.SetFieldExpiry("a", kT + 5);
  h.SetFieldExpiry("b", kT + 5);
  h.SetFieldExpiry("c", kT + 1);
  ASSERT_EQ(TtlOrder(h),
            (TtlList{{"c", kT + 1}, {"b", kT + 5}, {"a", kT + 5}, {"d", 0}}));
  std::string p;
  DumpCollection(ValueType::kHash, h, &p);
  std::string body(1, '\x18');
  PutLe(&body, kT + 1, 8);
  body += '\x04';
  body += Bytes("\x05\x01" "a" "\x02" "va", 6);
  body += Bytes("\x05\x01" "b" "\x02" "vb", 6);
  body += Bytes("\x01\x01" "c" "\x02" "vc", 6);
  body += Bytes("\x00\x01" "d" "\x02" "vd", 6);
  EXPECT_EQ(p, WithFooter(body, 12));
  RdbValue v = MustLoad(p);
  EXPECT_STREQ(v.coll->encoding(), "listpackex");
  EXPECT_EQ(TtlOrder(v), (TtlList{{"c", kT + 1}, {"b", kT + 5}, {"a", kT + 5}, {"d", 0}}));
}

TEST(RdbObjectsTest, HashFieldTtlsRoundTripSmallAndLarge) {
  for (int n : {3, 1000}) {
    HashValue h;
    for (int i = 0; i < n; ++i) h.Set("f" + std::to_string(i), std::to_string(i * 7));
    if (n > 128) h.CheckEncoding(128, 64);
    for (int i = 0; i < n; i += 2) h.SetFieldExpiry("f" + std::to_string(i), kT + i % 5);
    h.SetFieldExpiry("f1", 1);  // long past: kept, as Redis keeps it
    std::string p;
    DumpCollection(ValueType::kHash, h, &p);
    EXPECT_EQ(p[0], '\x18');
    RdbValue v;
    ASSERT_EQ(LoadPayload(p, &v), RdbLoad::kOk);
    auto* back = static_cast<HashValue*>(v.coll.get());
    back->CheckEncoding(128, 64);  // as RESTORE: the encoding, then the TTLs
    ApplyFieldTtls(&v);
    ASSERT_EQ(back->size(), static_cast<size_t>(n));
    for (const auto& [f, val] : h.Entries()) {
      EXPECT_EQ(back->Find(f).value_or("?"), val);
      EXPECT_EQ(back->FieldExpiry(f), h.FieldExpiry(f)) << f;
    }
    EXPECT_EQ(back->next_field_expiry(), 1);
    EXPECT_STREQ(back->encoding(), n > 128 ? "hashtable" : "listpackex");
    if (n <= 128) {
      EXPECT_EQ(TtlOrder(v), TtlOrder(MustLoad(p)));
    }
  }
}

// A hash that had field TTLs: a small one (listpackex) keeps the TTL form,
// all TTLs 0, so it restores as listpackex (Redis dumps it as type 25 with
// TTLs 0); a large one whose TTLs are gone is a plain type-4 hash, as in
// Redis; one that never had any is the version-10 type-4 payload.
TEST(RdbObjectsTest, HashThatHadFieldTtls) {
  HashValue small;
  small.Set("a", "1");
  small.Set("b", "2");
  small.SetFieldExpiry("a", kT);
  small.PersistField("a");
  std::string p;
  DumpCollection(ValueType::kHash, small, &p);
  std::string body(1, '\x18');
  PutLe(&body, 0, 8);
  body += Bytes("\x02\x00\x01" "b" "\xc0\x02" "\x00\x01" "a" "\xc0\x01", 11);
  EXPECT_EQ(p, WithFooter(body, 12));
  RdbValue v = MustLoad(p);
  EXPECT_STREQ(v.coll->encoding(), "listpackex");
  EXPECT_EQ(TtlOrder(v), (TtlList{{"b", 0}, {"a", 0}}));
  EXPECT_EQ(v.coll->next_field_expiry(), 0);

  HashValue large = small;
  large.CheckEncoding(1, 64);
  DumpCollection(ValueType::kHash, large, &p);
  EXPECT_EQ(p[0], '\x04');
  EXPECT_EQ(p[p.size() - 10], '\x0a');  // RDB version 10
  HashValue never;
  never.Set("b", "2");
  never.Set("a", "1");
  std::string q;
  DumpCollection(ValueType::kHash, never, &q);
  EXPECT_EQ(q, WithFooter(Bytes("\x04\x02\x01" "b" "\xc0\x02\x01" "a" "\xc0\x01", 10)));
}

// Hand-made payloads of the four forms.
TEST(RdbObjectsTest, LoadsTheHashFormsWithFieldTtls) {
  // 25: the listpack's order is kept, ties included.
  std::string body(1, '\x19');
  PutLe(&body, kT, 8);
  AppendRdbString(&body, ListpackOf({LpStr("x"), LpStr("1"), LpInt(kT), LpStr("y"), LpInt(2),
                                     LpInt(kT), LpStr("z"), LpStr("3"), LpInt(kT + 9),
                                     LpStr("w"), LpStr(""), LpInt(0)}));
  RdbValue v = MustLoad(WithFooter(body, 12));
  EXPECT_EQ(TtlOrder(v), (TtlList{{"x", kT}, {"y", kT}, {"z", kT + 9}, {"w", 0}}));
  EXPECT_EQ(HashOf(v), (std::map<std::string, std::string>{{"x", "1"}, {"y", "2"}, {"z", "3"}, {"w", ""}}));
  EXPECT_STREQ(v.coll->encoding(), "listpackex");
  // 23: the same without the earliest expiry; a TTL 1 ms after the epoch
  // (long past) is kept.
  body = std::string(1, '\x17');
  AppendRdbString(&body, ListpackOf({LpStr("a"), LpStr("1"), LpInt(1), LpStr("b"), LpStr("2"), LpInt(0)}));
  v = MustLoad(WithFooter(body, 12));
  EXPECT_EQ(TtlOrder(v), (TtlList{{"a", 1}, {"b", 0}}));
  // 24: TTLs relative to the earliest (+1), fields in any order; Redis's
  // loader puts each before the first not-earlier TTL, so ties come out
  // last first.
  body = std::string(1, '\x18');
  PutLe(&body, kT, 8);
  body += '\x04';
  body += Bytes("\x00\x01" "n" "\x01" "N", 5);
  body += Bytes("\x05\x01" "a" "\x01" "A", 5);
  body += Bytes("\x01\x01" "b" "\x01" "B", 5);
  body += Bytes("\x05\x01" "c" "\x01" "C", 5);
  v = MustLoad(WithFooter(body, 12));
  EXPECT_EQ(TtlOrder(v), (TtlList{{"b", kT}, {"c", kT + 4}, {"a", kT + 4}, {"n", 0}}));
  // 22: absolute TTLs, no earliest expiry; all TTLs 0 is still listpackex.
  body = Bytes("\x16\x02\x00\x01" "a" "\x01" "A" "\x00\x01" "b" "\x01" "B", 12);
  v = MustLoad(WithFooter(body, 12));
  EXPECT_EQ(TtlOrder(v), (TtlList{{"a", 0}, {"b", 0}}));
  EXPECT_STREQ(v.coll->encoding(), "listpackex");
  body = std::string("\x16\x01", 2);
  AppendRdbLength(&body, static_cast<uint64_t>(kT));
  body += Bytes("\x01" "a" "\x01" "A", 4);
  v = MustLoad(WithFooter(body, 12));
  EXPECT_EQ(TtlOrder(v), (TtlList{{"a", kT}}));
  // The latest time HEXPIRE accepts, relative and absolute.
  body = std::string(1, '\x18');
  PutLe(&body, static_cast<uint64_t>(kMaxFieldExpiryMs), 8);
  body += Bytes("\x01\x01\x01" "a" "\x01" "A", 6);
  EXPECT_EQ(TtlOrder(MustLoad(WithFooter(body, 12))), (TtlList{{"a", kMaxFieldExpiryMs}}));
}

TEST(RdbObjectsTest, RefusesBadHashFormsWithFieldTtls) {
  RdbValue v;
  auto bad = [&](const std::string& body) {
    return LoadPayload(WithFooter(body, 12), &v) == RdbLoad::kBadData;
  };
  auto ex = [](const std::vector<std::string>& entries) {
    std::string b(1, '\x19');
    PutLe(&b, kT, 8);
    AppendRdbString(&b, ListpackOf(entries));
    return b;
  };
  EXPECT_FALSE(bad(ex({LpStr("a"), LpStr("1"), LpInt(kT)})));
  EXPECT_TRUE(bad(ex({LpStr("a"), LpStr("1"), LpStr("5")})));  // a TTL as a string
  EXPECT_TRUE(bad(ex({LpStr("a"), LpStr("1"), LpInt(kT + 1), LpStr("b"), LpStr("2"), LpInt(kT)})));
  EXPECT_TRUE(bad(ex({LpStr("a"), LpStr("1"), LpInt(0), LpStr("b"), LpStr("2"), LpInt(kT)})));
  EXPECT_TRUE(bad(ex({LpStr("a"), LpStr("1"), LpInt(-1)})));
  EXPECT_TRUE(bad(ex({LpStr("a"), LpStr("1"), LpInt(kMaxFieldExpiryMs + 1)})));
  EXPECT_TRUE(bad(ex({LpStr("a"), LpStr("1"), LpInt(0), LpStr("a"), LpStr("2"), LpInt(0)})));
  EXPECT_TRUE(bad(ex({LpStr("a"), LpStr("1")})));  // not whole triplets
  EXPECT_TRUE(bad(ex({})));                        // empty
  std::string cut(1, '\x19');
  PutLe(&cut, kT, 7);  // the earliest expiry cut short
  EXPECT_TRUE(bad(cut));
  auto meta = [](uint64_t earliest, uint64_t ttl) {
    std::string b(1, '\x18');
    PutLe(&b, earliest, 8);
    b += '\x01';
    AppendRdbLength(&b, ttl);
    return b + Bytes("\x01" "a" "\x01" "A", 4);
  };
  EXPECT_FALSE(bad(meta(kT, 1)));
  EXPECT_FALSE(bad(meta(~uint64_t{0}, 0)));  // a bad earliest expiry, unused
  EXPECT_TRUE(bad(meta(~uint64_t{0}, 1)));
  EXPECT_TRUE(bad(meta(kT, ~uint64_t{0})));  // no wrap-around
  EXPECT_TRUE(bad(meta(static_cast<uint64_t>(kMaxFieldExpiryMs), 2)));
  EXPECT_TRUE(bad(Bytes("\x18\x00\x00\x00\x00\x00\x00\x00\x00\x00", 10)));  // no fields
  EXPECT_TRUE(bad(Bytes("\x16\x02\x00\x01" "a" "\x01" "A" "\x00\x01" "a" "\x01" "B", 12)));
  std::string far = "\x16\x01";
  AppendRdbLength(&far, static_cast<uint64_t>(kMaxFieldExpiryMs) + 1);
  EXPECT_TRUE(bad(far + Bytes("\x01" "a" "\x01" "A", 4)));
}

}  // namespace
}  // namespace trove::resp
