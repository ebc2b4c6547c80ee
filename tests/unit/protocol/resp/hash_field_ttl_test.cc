// Hash field TTLs, the data half (types/hash_field_ttl.h and HashValue's use
// of it): the side table, the listpackex order of a small hash, the byte form
// with and without TTLs (a hash without them keeps its old bytes and memory),
// copies, and the lazy/active deletion helpers of services/hash_field_expiry.h.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "protocol/resp/services/hash_field_expiry.h"
#include "protocol/resp/types/collections.h"
#include "protocol/resp/types/hash_field_ttl.h"

namespace trove::resp {
namespace {

std::vector<std::string> Fields(const HashValue& h) {
  std::vector<std::string> out;
  for (const auto& [f, v] : h.Entries()) out.emplace_back(f);
  return out;
}

std::vector<std::string> V(std::initializer_list<const char*> l) {
  return std::vector<std::string>(l.begin(), l.end());
}

TEST(FieldTtlsTest, KeepsOneExpiryPerFieldAndTheEarliest) {
  FieldTtls t;
  EXPECT_TRUE(t.empty());
  EXPECT_EQ(t.earliest(), 0);
  t.Set("a", 300);
  t.Set("b", 100);
  t.Set("c", 200);
  EXPECT_EQ(t.size(), 3u);
  EXPECT_EQ(t.earliest(), 100);
  t.Set("b", 400);  // moved, not added
  EXPECT_EQ(t.size(), 3u);
  EXPECT_EQ(t.earliest(), 200);
  EXPECT_EQ(t.Get("b"), 400);
  EXPECT_EQ(t.Get("zz"), 0);
  EXPECT_TRUE(t.Erase("c"));
  EXPECT_FALSE(t.Erase("c"));
  EXPECT_EQ(t.earliest(), 300);
  std::vector<std::pair<std::string, int64_t>> seen;
  t.ForEach([&](std::string_view f, int64_t at) { seen.emplace_back(std::string(f), at); });
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0], (std::pair<std::string, int64_t>("a", 300)));
  EXPECT_EQ(seen[1], (std::pair<std::string, int64_t>("b", 400)));
}

TEST(FieldTtlsTest, PassedMeansAtOrBeforeNowAndCollectsEarliestFirst) {
  EXPECT_FALSE(FieldTtlPassed(0, 1000));  // 0: no expiry
  EXPECT_TRUE(FieldTtlPassed(1000, 1000));
  EXPECT_FALSE(FieldTtlPassed(1001, 1000));
  FieldTtls t;
  for (int i = 1; i <= 10; ++i) t.Set("f" + std::to_string(i), 100 * i);
  EXPECT_EQ(t.CountPassed(500), 5u);
  std::vector<std::string> out;
  t.CollectPassed(500, 3, &out);
  EXPECT_EQ(out, V({"f1", "f2", "f3"}));
  out.clear();
  t.CollectPassed(99, 100, &out);
  EXPECT_TRUE(out.empty());
}

TEST(FieldTtlsTest, CopyOwnsItsOwnIndex) {
  auto t = std::make_unique<FieldTtls>();
  t->Set("x", 5);
  t->Set("y", 7);
  FieldTtls c(*t);
  t.reset();  // the copy's time index must not point into the original
  EXPECT_EQ(c.earliest(), 5);
  EXPECT_TRUE(c.Erase("x"));
  EXPECT_EQ(c.earliest(), 7);
  EXPECT_EQ(c.Get("y"), 7);
}

TEST(HashFieldTtlTest, NoTtlHashKeepsItsBytesEncodingAndMemory) {
  HashValue h;
  h.Set("f1", "v1");
  h.Set("f2", "v2");
  std::string bytes;
  h.Encode(&bytes);
  // The pre-TTL form: count 2, then length-prefixed fields and values.
  EXPECT_EQ(bytes, std::string("\x02\x02" "f1" "\x02" "v1" "\x02" "f2" "\x02" "v2", 13));
  EXPECT_STREQ(h.encoding(), "listpack");
  EXPECT_EQ(h.field_ttls(), nullptr);
  EXPECT_EQ(h.next_field_expiry(), 0);
  // bytes_ counts field + value + 32 per entry, plus the 64 of every value.
  EXPECT_EQ(h.MemoryUsage(), 2u * (2 + 2 + 32) + 64);
  EXPECT_EQ(HashValue::PeekNextFieldExpiry(bytes), 0);
  HashValue back;
  ASSERT_TRUE(back.Decode(bytes));
  EXPECT_EQ(back.field_ttls(), nullptr);
  EXPECT_EQ(back.MemoryUsage(), h.MemoryUsage());
}

TEST(HashFieldTtlTest, TtlsMakeListpackexAndRoundTripThroughBytes) {
  HashValue h;
  for (const char* f : {"a", "b", "c", "d"}) h.Set(f, std::string("v") + f);
  const size_t plain = h.MemoryUsage();
  h.SetFieldExpiry("c", 2000);
  h.SetFieldExpiry("a", 1000);
  EXPECT_STREQ(h.encoding(), "listpackex");
  EXPECT_GT(h.MemoryUsage(), plain);
  EXPECT_EQ(h.next_field_expiry(), 1000);
  // listpackex order: TTL fields first, earliest first, then the others.
  EXPECT_EQ(Fields(h), V({"a", "c", "b", "d"}));
  std::string bytes;
  h.Encode(&bytes);
  ASSERT_GE(bytes.size(), 2u);
  EXPECT_EQ(bytes[0], '\0');
  EXPECT_EQ(bytes[1], '\1');
  EXPECT_EQ(HashValue::PeekNextFieldExpiry(bytes), 1000);
  HashValue back;
  ASSERT_TRUE(back.Decode(bytes));
  EXPECT_EQ(Fields(back), Fields(h));
  EXPECT_EQ(back.FieldExpiry("a"), 1000);
  EXPECT_EQ(back.FieldExpiry("c"), 2000);
  EXPECT_EQ(back.FieldExpiry("b"), 0);
  EXPECT_EQ(back.MemoryUsage(), h.MemoryUsage());
  EXPECT_EQ(*back.Find("c"), "vc");
}

TEST(HashFieldTtlTest, DecodeRefusesAnUnknownVersionAndCutBytes) {
  HashValue h;
  h.Set("a", "1");
  h.SetFieldExpiry("a", 50);
  std::string bytes;
  h.Encode(&bytes);
  std::string later = bytes;
  later[1] = '\2';
  HashValue x;
  EXPECT_FALSE(x.Decode(later));
  for (size_t cut = 1; cut < bytes.size(); ++cut) {
    HashValue y;
    EXPECT_FALSE(y.Decode(std::string_view(bytes).substr(0, cut))) << cut;
  }
}

TEST(HashFieldTtlTest, EqualExpiriesKeepTheirOrderThroughBytes) {
  HashValue h;
  for (const char* f : {"a", "b", "c"}) h.Set(f, "v");
  h.SetFieldExpiry("a", 100);
  h.SetFieldExpiry("b", 100);  // Redis puts it before the equal one
  EXPECT_EQ(Fields(h), V({"b", "a", "c"}));
  std::string bytes;
  h.Encode(&bytes);
  HashValue back;
  ASSERT_TRUE(back.Decode(bytes));
  EXPECT_EQ(Fields(back), V({"b", "a", "c"}));
}

TEST(HashFieldTtlTest, HsetDropsTheTtlAndMovesTheFieldLastKeepTtlDoesNot) {
  HashValue h;
  for (const char* f : {"a", "b", "c"}) h.Set(f, "1");
  h.SetFieldExpiry("a", 100);
  h.SetFieldExpiry("b", 200);
  EXPECT_EQ(Fields(h), V({"a", "b", "c"}));
  EXPECT_FALSE(h.Set("b", "22", /*keep_ttl=*/true));  // HINCRBY: in place, TTL kept
  EXPECT_EQ(h.FieldExpiry("b"), 200);
  EXPECT_EQ(Fields(h), V({"a", "b", "c"}));
  EXPECT_FALSE(h.Set("a", "9"));  // HSET: TTL gone, the field re-inserted at the end
  EXPECT_EQ(h.FieldExpiry("a"), 0);
  EXPECT_EQ(Fields(h), V({"b", "c", "a"}));
  EXPECT_EQ(h.next_field_expiry(), 200);
  EXPECT_TRUE(h.PersistField("b"));
  EXPECT_FALSE(h.PersistField("b"));
  EXPECT_EQ(Fields(h), V({"c", "a", "b"}));
  EXPECT_EQ(h.next_field_expiry(), 0);
  // The emptied table stays: Redis keeps reporting listpackex.
  EXPECT_STREQ(h.encoding(), "listpackex");
  ASSERT_NE(h.field_ttls(), nullptr);
  EXPECT_TRUE(h.field_ttls()->empty());
}

TEST(HashFieldTtlTest, EraseDropsTheTtlAndMemoryComesBack) {
  HashValue h;
  h.Set("a", "1");
  h.Set("b", "2");
  h.SetFieldExpiry("b", 10);  // creates the table
  const size_t with_table = h.MemoryUsage();
  h.SetFieldExpiry("a", 20);
  EXPECT_GT(h.MemoryUsage(), with_table);
  h.PersistField("a");
  EXPECT_EQ(h.MemoryUsage(), with_table);
  EXPECT_TRUE(h.Erase("b"));
  EXPECT_EQ(h.next_field_expiry(), 0);
  EXPECT_EQ(h.FieldExpiry("b"), 0);
}

TEST(HashFieldTtlTest, CloneAndLargeHashKeepTtls) {
  HashValue h;
  for (int i = 0; i < 20; ++i) h.Set("f" + std::to_string(i), "v");
  h.SetFieldExpiry("f7", 77);
  h.CheckEncoding(10, 64);  // past the entry limit: a hash table now
  EXPECT_STREQ(h.encoding(), "hashtable");
  EXPECT_EQ(h.FieldExpiry("f7"), 77);
  std::unique_ptr<CollectionBase> c = h.Clone();
  auto* hc = static_cast<HashValue*>(c.get());
  EXPECT_EQ(hc->FieldExpiry("f7"), 77);
  EXPECT_EQ(hc->MemoryUsage(), h.MemoryUsage());
  EXPECT_STREQ(hc->encoding(), "hashtable");
  h.PersistField("f7");
  EXPECT_EQ(hc->FieldExpiry("f7"), 77);  // a deep copy
}

TEST(HashFieldTtlTest, ErasePassedFieldsDeletesOnlyPassedOnesUpToMax) {
  HashValue h;
  for (int i = 1; i <= 6; ++i) h.Set("f" + std::to_string(i), "v");
  for (int i = 1; i <= 4; ++i) h.SetFieldExpiry("f" + std::to_string(i), 100 * i);
  EXPECT_FALSE(ErasePassedField(&h, "f1", 99));
  EXPECT_TRUE(ErasePassedField(&h, "f1", 100));
  EXPECT_FALSE(ErasePassedField(&h, "f5", 1000));  // no TTL
  EXPECT_EQ(ErasePassedFields(&h, 1000, 2), 2u);  // f2, f3
  EXPECT_EQ(Fields(h), V({"f4", "f5", "f6"}));
  EXPECT_EQ(ErasePassedFields(&h, 399, 10), 0u);
  EXPECT_EQ(ErasePassedFields(&h, 400, 10), 1u);
  EXPECT_EQ(h.size(), 2u);
  EXPECT_EQ(h.next_field_expiry(), 0);
}

TEST(HashFieldTtlTest, PeekIgnoresOtherBytes) {
  EXPECT_EQ(HashValue::PeekNextFieldExpiry(""), 0);
  EXPECT_EQ(HashValue::PeekNextFieldExpiry(std::string("\0", 1)), 0);
  EXPECT_EQ(HashValue::PeekNextFieldExpiry(std::string("\0\2\5", 3)), 0);  // a later version
  EXPECT_EQ(HashValue::PeekNextFieldExpiry(std::string("\0\1\5", 3)), 5);
}

}  // namespace
}  // namespace trove::resp
