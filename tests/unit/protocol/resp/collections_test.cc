// Collection representations (issue 16's memory work): PtrIndex, HashValue's
// packed entries, SetValue's intset byte form, ZsetValue's member index.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

#include "protocol/resp/types/collections.h"
#include "protocol/resp/types/ptr_index.h"

namespace trove::resp {
namespace {

struct Str {
  std::string s;
};
struct StrKey {
  std::string_view operator()(const Str* e) const { return e->s; }
};

TEST(PtrIndexTest, MatchesAMapThroughRandomInsertsAndErases) {
  std::vector<std::unique_ptr<Str>> pool;
  PtrIndex<Str, StrKey> idx;
  std::map<std::string, Str*> model;
  std::mt19937 rng(16);
  for (int step = 0; step < 20000; ++step) {
    std::string k = "k" + std::to_string(rng() % 700);
    if (rng() % 3 != 0) {
      if (model.count(k) == 0) {
        pool.push_back(std::make_unique<Str>(Str{k}));
        idx.Insert(pool.back().get());
        model[k] = pool.back().get();
      }
    } else {
      Str* e = idx.Erase(k);
      auto it = model.find(k);
      ASSERT_EQ(e, it == model.end() ? nullptr : it->second) << k;
      if (it != model.end()) model.erase(it);
    }
    if (step % 997 == 0) {
      ASSERT_EQ(idx.size(), model.size());
      for (int i = 0; i < 700; ++i) {
        std::string q = "k" + std::to_string(i);
        auto it = model.find(q);
        ASSERT_EQ(idx.Find(q), it == model.end() ? nullptr : it->second) << q;
      }
      size_t seen = 0;
      idx.ForEach([&](Str*) { ++seen; });
      ASSERT_EQ(seen, model.size());
    }
  }
  // The load never passes 3/4.
  EXPECT_LE(idx.size() * 4, idx.capacity() * 3);
}

TEST(PtrIndexTest, ReplaceRepointsTheSlotOfTheSameKey) {
  Str a{"x"}, b{"x"}, c{"y"};
  PtrIndex<Str, StrKey> idx;
  idx.Insert(&a);
  idx.Insert(&c);
  idx.Replace(&b);
  EXPECT_EQ(idx.Find("x"), &b);
  EXPECT_EQ(idx.Find("y"), &c);
  EXPECT_EQ(idx.Find("z"), nullptr);
  EXPECT_EQ(idx.Erase("x"), &b);
  EXPECT_EQ(idx.size(), 1u);
}

TEST(HashValueTest, ShortAndLongEntriesKeepFieldsAndValues) {
  HashValue h;
  std::string long_field(300, 'f'), long_value(70000, 'v');
  EXPECT_TRUE(h.Set("a", "1"));
  EXPECT_TRUE(h.Set(long_field, "x"));
  EXPECT_TRUE(h.Set("b", long_value));
  EXPECT_TRUE(h.Set("", ""));
  EXPECT_FALSE(h.Set("a", "2"));        // same length: in place
  EXPECT_FALSE(h.Set("a", "longer"));   // reallocated
  EXPECT_FALSE(h.Set("b", "short"));    // long form to short form
  EXPECT_EQ(h.size(), 4u);
  EXPECT_EQ(*h.Find("a"), "longer");
  EXPECT_EQ(*h.Find(long_field), "x");
  EXPECT_EQ(*h.Find("b"), "short");
  EXPECT_EQ(*h.Find(""), "");
  EXPECT_FALSE(h.Find("c").has_value());
  // Compact: insertion order, as a listpack.
  auto e = h.Entries();
  ASSERT_EQ(e.size(), 4u);
  EXPECT_EQ(e[0].first, "a");
  EXPECT_EQ(e[1].first, long_field);
  EXPECT_EQ(e[2].first, "b");
  EXPECT_EQ(e[3].first, "");
  EXPECT_TRUE(h.Erase("a"));
  EXPECT_FALSE(h.Erase("a"));
  EXPECT_EQ(h.Entries()[0].first, long_field);
}

TEST(HashValueTest, LargeHashRoundTripsThroughEncodeAndClone) {
  HashValue h;
  for (int i = 0; i < 1000; ++i) h.Set("field:" + std::to_string(i), "v" + std::to_string(i));
  h.CheckEncoding(128, 64);
  EXPECT_FALSE(h.compact());
  for (int i = 0; i < 1000; i += 2) h.Erase("field:" + std::to_string(i));
  std::string bytes;
  h.Encode(&bytes);
  HashValue d;
  ASSERT_TRUE(d.Decode(bytes));
  auto copy = h.Clone();
  auto* c = static_cast<HashValue*>(copy.get());
  h.Set("field:1", "changed");  // the copy owns its own entries
  for (const HashValue* v : {static_cast<const HashValue*>(&d), static_cast<const HashValue*>(c)}) {
    ASSERT_EQ(v->size(), 500u);
    for (int i = 0; i < 1000; ++i) {
      auto f = v->Find("field:" + std::to_string(i));
      if (i % 2 == 0) {
        EXPECT_FALSE(f.has_value()) << i;
      } else {
        ASSERT_TRUE(f.has_value()) << i;
        EXPECT_EQ(*f, "v" + std::to_string(i));
      }
    }
  }
}

std::string EncodeSet(const std::vector<std::string>& members) {
  SetValue s;
  for (const auto& m : members) s.Add(m);
  s.CheckEncoding(512, 128, 64);
  std::string b;
  s.Encode(&b);
  return b;
}

TEST(SetValueTest, IntsetIsFixedWidthAscendingAndDecodes) {
  // Widths 2, 4 and 8 bytes, chosen by the extreme values, as Redis's intset.
  struct Case {
    std::vector<std::string> members;
    char width;
  };
  for (const Case& c : {Case{{"5", "-3", "32767", "-32768"}, 2},
                        Case{{"1", "40000", "-2147483648"}, 4},
                        Case{{"9223372036854775807", "-9223372036854775808", "0"}, 8}}) {
    std::string b = EncodeSet(c.members);
    ASSERT_GE(b.size(), 3u);
    EXPECT_EQ(b[0], '\0');
    EXPECT_EQ(b[1], c.width);
    EXPECT_EQ(b.size(), 3 + c.members.size() * static_cast<size_t>(c.width));
    SetValue d;
    ASSERT_TRUE(d.Decode(b));
    EXPECT_EQ(d.size(), c.members.size());
    for (const auto& m : c.members) EXPECT_TRUE(d.Contains(m)) << m;
    auto ordered = d.Ordered();
    for (size_t i = 1; i < ordered.size(); ++i) {
      EXPECT_LT(std::stoll(ordered[i - 1]), std::stoll(ordered[i]));
    }
  }
  // 200 integers below 2^31 take 4 bytes each (the string form took about 10).
  std::vector<std::string> many;
  for (int i = 0; i < 200; ++i) many.push_back(std::to_string(1000000000 - i * 4999));
  EXPECT_EQ(EncodeSet(many).size(), 4u + 800u);  // [0][width][count: 2-byte varint]
}

TEST(SetValueTest, EncodingNamesFollowRedis72) {
  SetValue s;
  s.Add("1");
  s.CheckEncoding(512, 2, 64);
  EXPECT_STREQ(s.encoding(), "intset");
  s.Add("a");
  s.CheckEncoding(512, 2, 64);
  EXPECT_STREQ(s.encoding(), "listpack");
  s.Add("b");  // 3 members > set-max-listpack-entries 2
  s.CheckEncoding(512, 2, 64);
  EXPECT_STREQ(s.encoding(), "hashtable");
  s.Remove("b");
  s.CheckEncoding(512, 2, 64);
  EXPECT_STREQ(s.encoding(), "hashtable");  // never converts back
  SetValue big;
  big.Add(std::string(65, 'x'));  // longer than set-max-listpack-value
  big.CheckEncoding(512, 128, 64);
  EXPECT_STREQ(big.encoding(), "hashtable");
}

TEST(SetValueTest, StringFormStillDecodes) {
  SetValue s;
  s.Add("a");
  s.Add("17");
  s.CheckEncoding(512, 128, 64);  // not all integers: listpack (reported), string form
  std::string b;
  s.Encode(&b);
  ASSERT_NE(b[0], '\0');
  SetValue d;
  ASSERT_TRUE(d.Decode(b));
  EXPECT_TRUE(d.Contains("a"));
  EXPECT_TRUE(d.Contains("17"));
  // An intset in the earlier string form (a warm-restart file of an older
  // build): count, then length-prefixed decimal members.
  SetValue old;
  ASSERT_TRUE(old.Decode(std::string("\x02\x01" "7\x02" "-4", 6)));
  EXPECT_TRUE(old.Contains("7"));
  EXPECT_TRUE(old.Contains("-4"));
  // Truncated intsets are refused, not read past their end.
  SetValue bad;
  EXPECT_FALSE(bad.Decode(std::string("\0\x04\x02\x01\x00\x00\x00", 7)));
  EXPECT_FALSE(bad.Decode(std::string("\0\x03\x01\x01\x00\x00", 6)));
}

TEST(ZsetValueTest, ScoresRanksAndUpdatesThroughTheMemberIndex) {
  ZsetValue z;
  for (int i = 0; i < 1000; ++i) z.Put("m" + std::to_string(i), 1000 - i);
  EXPECT_EQ(z.size(), 1000u);
  EXPECT_EQ(*z.Score("m0"), 1000);
  EXPECT_EQ(z.Rank("m999"), 0);
  EXPECT_EQ(z.Rank("m0"), 999);
  EXPECT_FALSE(z.Put("m0", -1));  // moves to the front
  EXPECT_EQ(z.Rank("m0"), 0);
  EXPECT_EQ(*z.Score("m0"), -1);
  EXPECT_FALSE(z.Put("m0", -1));  // same score: nothing moves
  EXPECT_TRUE(z.Remove("m500"));
  EXPECT_FALSE(z.Remove("m500"));
  EXPECT_EQ(z.Score("m500"), nullptr);
  EXPECT_EQ(z.Rank("m500"), -1);
  auto copy = z.Clone();
  z.Put("m1", 5000);
  auto* c = static_cast<ZsetValue*>(copy.get());
  EXPECT_EQ(c->size(), 999u);
  EXPECT_EQ(*c->Score("m1"), 999);  // the copy has its own index
  EXPECT_EQ(c->Rank("m0"), 0);
  EXPECT_EQ(c->ordered().begin()->second, "m0");
  std::string b;
  z.Encode(&b);
  ZsetValue d;
  ASSERT_TRUE(d.Decode(b));
  EXPECT_EQ(d.size(), 999u);
  EXPECT_EQ(*d.Score("m1"), 5000);
}

}  // namespace
}  // namespace trove::resp
