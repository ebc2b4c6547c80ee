// Redis's HyperLogLog encodings (types/hyperloglog.h): the element hash,
// the sparse opcode edits, promotion, the estimator and corruption checks.
// The expected bytes, digests and counts were captured from redis-server
// 7.0.15 (GET after the same PFADDs; PFDEBUG DECODE; PFCOUNT).
#include "protocol/resp/types/hyperloglog.h"

#include <array>
#include <cstdint>
#include <gtest/gtest.h>
#include <random>
#include <string>
#include <vector>

#include "common/sha256.h"

namespace trove::resp::hll {
namespace {

std::string Unhex(std::string_view h) {
  std::string out;
  for (size_t i = 0; i + 1 < h.size(); i += 2)
    out.push_back(static_cast<char>(std::stoi(std::string(h.substr(i, 2)), nullptr, 16)));
  return out;
}

// PFADD's effect on a value: every element, then the cache marked stale
// when anything changed. Returns whether something did.
bool AddAll(std::string* v, const std::vector<std::string>& elements, size_t sparse_max = 3000) {
  bool changed = false;
  for (const std::string& e : elements) {
    const Change c = Add(v, e, sparse_max);
    EXPECT_NE(c, Change::kCorrupt) << e;
    changed |= c == Change::kChanged;
  }
  if (changed) InvalidateCache(v);
  return changed;
}

std::vector<std::string> Numbered(const char* prefix, int from, int to) {
  std::vector<std::string> v;
  for (int i = from; i < to; ++i) v.push_back(prefix + std::to_string(i));
  return v;
}

// PFCOUNT of one key: the cache, else the estimate written into it.
uint64_t CountAndCache(std::string* v) {
  uint64_t card = 0;
  if (CachedCardinality(*v, &card)) return card;
  EXPECT_TRUE(Count(*v, &card));
  SetCachedCardinality(v, card);
  return card;
}

TEST(HyperLogLogTest, ElementsLandInRedissRegisters) {
  // PFDEBUG DECODE of a one-element HyperLogLog in Redis.
  struct Case {
    std::string element;
    uint32_t index;
    uint8_t rank;
  };
  const Case cases[] = {{"a", 12711, 2},
                        {"b", 15780, 1},
                        {"c", 8436, 1},
                        {"d", 7292, 1},
                        {"", 5938, 2},
                        {"foo", 7348, 5},
                        {"hello world!", 8716, 3},
                        {"0123456789abcdef", 5949, 1}};
  for (const Case& c : cases) {
    const Pattern p = PatternOf(c.element);
    EXPECT_EQ(p.index, c.index) << c.element;
    EXPECT_EQ(p.rank, c.rank) << c.element;
    std::string v;
    MakeEmpty(&v);
    ASSERT_EQ(Add(&v, c.element, 3000), Change::kChanged);
    const std::string want = "Z:" + std::to_string(c.index) + " v:" + std::to_string(c.rank) +
                             ",1 Z:" + std::to_string(kRegisters - c.index - 1);
    EXPECT_EQ(DecodeSparse(v), want) << c.element;
  }
}

TEST(HyperLogLogTest, SparseEditsMakeRedissBytes) {
  std::string v;
  MakeEmpty(&v);
  EXPECT_EQ(v, Unhex("48594c4c010000000000000000000000"
                     "7fff"));
  ASSERT_TRUE(AddAll(&v, {"a", "b", "c"}));
  EXPECT_EQ(v, Unhex("48594c4c01000000000000000000008060f38050b1844bfb80425a"));
  EXPECT_EQ(CountAndCache(&v), 3u);
  EXPECT_EQ(v, Unhex("48594c4c01000000030000000000000060f38050b1844bfb80425a"));
  EXPECT_FALSE(AddAll(&v, {"a", "b", "c"}));  // no register rises: the cache stays valid
  ASSERT_TRUE(AddAll(&v, {"d"}));
  // Only the stale bit is set; the old count stays in the low bytes.
  EXPECT_EQ(v, Unhex("48594c4c0100000003000000000000805c7b8044768050b1844bfb80425a"));
  EXPECT_EQ(DecodeSparse(v), "Z:7292 v:1,1 Z:1143 v:1,1 Z:4274 v:2,1 Z:3068 v:1,1 Z:603");

  std::string x;
  MakeEmpty(&x);
  ASSERT_TRUE(AddAll(&x, Numbered("x", 0, 50)));
  EXPECT_EQ(x, Unhex("48594c4c010000000000000000000080388043389442a384404780148042148040fb90"
                     "4088801e8042ca88414384410980409d8440ebb4404390404c8840dd8004840784429180"
                     "414080413a8040508842988041fe84405984258441088c40c88441199044908040cb8840"
                     "5d80412484440d98417f8c446d80409f8842088024842d88407b9444558c4108842a8443"
                     "be844126a433844074804050884061"));
  EXPECT_EQ(CountAndCache(&x), 50u);
}

TEST(HyperLogLogTest, GrowthMatchesRedisDigestsAndCounts) {
  // PFADD "e:0".."e:<n-1>" in batches of 1000, then PFCOUNT.
  struct Case {
    int n;
    uint64_t count;
    uint8_t encoding;
    size_t length;
    const char* sha_before;  // of GET before PFCOUNT
    const char* sha_after;   // and after
  };
  const Case cases[] = {{10, 10, kEncodingSparse, 48,
                         "266e2b5dce39739dda4f5b948719c2c317e796f214592e3b64147405c9c36d4b",
                         "9ab98344dc87019657e171f6e8a4f32d2e6ed98f3b8b15d9d275cb07433dead0"},
                        {1000, 995, kEncodingSparse, 1880,
                         "c2671a9624dab5ce1b720750b043da93e6c1cfb2bf4b545672c63a6ac04f30f8",
                         "a86ca62f68ba0d2df6c038a5445a3b8fb574702ab4d0bb5b1f50f78e0bdafa4f"},
                        {10000, 10077, kEncodingDense, kDenseSize,
                         "f900667938e991c396c6f8cea8ee52416b0e05c121eb5ef1097f9f192f7b074a",
                         "6b6f81a9f6ab61118aa080e4cc72b46db368efafda4b528a132cf8ebf4e7bdd9"},
                        {100000, 100342, kEncodingDense, kDenseSize,
                         "da808d14a4b1c73fe2b3a847521f9ceb5fb2098609528956fcd70f34f6b1c390",
                         "322b389d5a0941d13efdcbf535633e15466d543e186e2620dbab32ec1d5267e8"}};
  for (const Case& c : cases) {
    std::string v;
    MakeEmpty(&v);
    for (int i = 0; i < c.n; i += 1000) AddAll(&v, Numbered("e:", i, std::min(c.n, i + 1000)));
    EXPECT_EQ(EncodingOf(v), c.encoding) << c.n;
    EXPECT_EQ(v.size(), c.length) << c.n;
    EXPECT_EQ(Sha256Hex(v), c.sha_before) << c.n;
    EXPECT_EQ(CountAndCache(&v), c.count) << c.n;
    EXPECT_EQ(Sha256Hex(v), c.sha_after) << c.n;
  }
}

TEST(HyperLogLogTest, PromotesWhenTheSparseFormOutgrowsItsLimit) {
  // hll-sparse-max-bytes 500, one element per PFADD (Redis: dense, 402).
  std::string v;
  MakeEmpty(&v);
  for (const std::string& e : Numbered("s:", 0, 400)) {
    AddAll(&v, {e}, 500);
    if (EncodingOf(v) == kEncodingSparse) {
      ASSERT_LE(v.size(), 500u);
    }
  }
  EXPECT_EQ(EncodingOf(v), kEncodingDense);
  EXPECT_EQ(CountAndCache(&v), 402u);
  EXPECT_EQ(Sha256Hex(v), "5770ea91eca69df349dbbabfc94343069cf0f8bb20b59b899d2c78a9a86945bb");
}

TEST(HyperLogLogTest, PromotesForARankAboveThirtyTwo) {
  std::string v;
  MakeEmpty(&v);
  ASSERT_EQ(SetRegister(&v, 100, 32, 3000), Change::kChanged);
  EXPECT_EQ(EncodingOf(v), kEncodingSparse);
  EXPECT_EQ(DecodeSparse(v), "Z:100 v:32,1 Z:16283");
  ASSERT_EQ(SetRegister(&v, 5, 33, 3000), Change::kChanged);
  ASSERT_EQ(EncodingOf(v), kEncodingDense);
  ASSERT_EQ(v.size(), kDenseSize);
  const auto* regs = reinterpret_cast<const uint8_t*>(v.data()) + kHeaderSize;
  EXPECT_EQ(DenseRegister(regs, 5), 33);
  EXPECT_EQ(DenseRegister(regs, 100), 32);
  EXPECT_EQ(DenseRegister(regs, 101), 0);
  EXPECT_EQ(SetRegister(&v, 5, 20, 3000), Change::kNone);
}

TEST(HyperLogLogTest, AdjacentEqualValuesJoinIntoOneOpcode) {
  std::string v;
  MakeEmpty(&v);
  for (uint32_t i : {10u, 12u, 11u, 13u}) ASSERT_EQ(SetRegister(&v, i, 3, 3000), Change::kChanged);
  EXPECT_EQ(DecodeSparse(v), "z:10 v:3,4 Z:16370");
  ASSERT_EQ(SetRegister(&v, 14, 3, 3000), Change::kChanged);  // a VAL holds at most 4
  EXPECT_EQ(DecodeSparse(v), "z:10 v:3,4 v:3,1 Z:16369");
  // Splitting the run of four gives v:3,1 v:5,1 v:3,2; the join pass then
  // folds v:3,2 into the v:3,1 after it.
  ASSERT_EQ(SetRegister(&v, 11, 5, 3000), Change::kChanged);
  EXPECT_EQ(DecodeSparse(v), "z:10 v:3,1 v:5,1 v:3,3 Z:16369");
  EXPECT_FALSE(WouldRaise(v, 11, 5));
  EXPECT_TRUE(WouldRaise(v, 11, 6));
  EXPECT_TRUE(WouldRaise(v, 0, 1));
}

TEST(HyperLogLogTest, DenseAndSparseAgreeAndMerge) {
  std::string sparse, dense, other;
  MakeEmpty(&sparse);
  MakeEmpty(&dense);
  ASSERT_TRUE(ToDense(&dense));
  ASSERT_EQ(EncodingOf(dense), kEncodingDense);
  const std::vector<std::string> elements = Numbered("m:", 0, 700);
  AddAll(&sparse, elements);
  AddAll(&dense, elements);
  ASSERT_EQ(EncodingOf(sparse), kEncodingSparse);
  uint64_t a = 0, b = 0;
  ASSERT_TRUE(Count(sparse, &a));
  ASSERT_TRUE(Count(dense, &b));
  EXPECT_EQ(a, b);
  std::string converted = sparse;
  ASSERT_TRUE(ToDense(&converted));
  EXPECT_EQ(converted.substr(kHeaderSize), dense.substr(kHeaderSize));

  // The union of two, as PFCOUNT of several keys and PFMERGE compute it.
  MakeEmpty(&other);
  AddAll(&other, Numbered("m:", 500, 900));
  std::array<uint8_t, kRegisters> max{};
  ASSERT_TRUE(MergeInto(sparse, max.data()));
  ASSERT_TRUE(MergeInto(other, max.data()));
  std::string merged;
  MakeEmpty(&merged);
  ASSERT_TRUE(Absorb(&merged, max.data(), false, 3000));
  std::string all;
  MakeEmpty(&all);
  AddAll(&all, Numbered("m:", 0, 900));
  ASSERT_TRUE(Count(merged, &a));
  ASSERT_TRUE(Count(all, &b));
  EXPECT_EQ(a, b);
  EXPECT_EQ(CountRaw(max.data()), a);
  EXPECT_GT(a, 880u);
  EXPECT_LT(a, 920u);
}

// A dense value whose registers come from a 64-bit LCG (choices[(x >> 33)
// % size]), packed as Redis packs them.
std::string HandMadeDense(uint64_t seed, const std::vector<uint8_t>& choices) {
  std::string v(kDenseSize, '\0');
  v.replace(0, 4, "HYLL");
  v[15] = static_cast<char>(0x80);  // stale: PFCOUNT computes
  auto* regs = reinterpret_cast<uint8_t*>(v.data()) + kHeaderSize;
  std::vector<uint8_t> want(kRegisters);
  uint64_t x = seed;
  for (uint32_t i = 0; i < kRegisters; ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    want[i] = choices[(x >> 33) % choices.size()];
    SetDenseRegister(regs, i, want[i]);
  }
  // Each register kept its value through its neighbours' writes.
  for (uint32_t i = 0; i < kRegisters; ++i) EXPECT_EQ(DenseRegister(regs, i), want[i]) << i;
  return v;
}

TEST(HyperLogLogTest, EstimatesHandMadeDenseValuesAsRedisDoes) {
  // The same values SET into redis-server 7.0.15 and PFCOUNTed there.
  struct Case {
    uint64_t seed;
    std::vector<uint8_t> choices;
    int64_t count;
  };
  const Case cases[] = {
      {7, {0, 0, 0, 1, 1, 2, 3, 5, 8, 13, 21, 34, 51, 60}, 31601},  // ranks past 51 ignored
      {1, {0}, 0},
      {3, {1, 2, 3, 4, 5, 6}, 71766},
      // Every register at the top rank: an infinite estimate, which Redis
      // answers as LLONG_MIN.
      {5, {51}, INT64_MIN},
      {9, {50, 51, 52, 63}, INT64_MIN}};
  for (const Case& c : cases) {
    std::string v = HandMadeDense(c.seed, c.choices);
    uint64_t card = 0;
    ASSERT_TRUE(Count(v, &card));
    EXPECT_EQ(static_cast<int64_t>(card), c.count) << c.seed;
    SetCachedCardinality(&v, card);
    EXPECT_EQ(CachedCardinality(v, &card), c.count != INT64_MIN) << c.seed;
  }
  std::string with_ones = HandMadeDense(1, {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                            0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 2});
  uint64_t card = 0;
  ASSERT_TRUE(Count(with_ones, &card));
  EXPECT_EQ(card, 1551u);
  std::string empty;
  MakeEmpty(&empty);
  ASSERT_TRUE(Count(empty, &card));
  EXPECT_EQ(card, 0u);
}

TEST(HyperLogLogTest, ValidatesTheHeader) {
  std::string v;
  MakeEmpty(&v);
  EXPECT_TRUE(IsHll(v, v.size()));
  EXPECT_FALSE(IsHll(v.substr(0, 15), 15));
  std::string bad = v;
  bad[0] = 'h';
  EXPECT_FALSE(IsHll(bad, bad.size()));
  bad = v;
  bad[4] = 2;
  EXPECT_FALSE(IsHll(bad, bad.size()));
  bad = v;
  bad[4] = 0;  // dense, but not 12304 bytes long
  EXPECT_FALSE(IsHll(bad, bad.size()));
  std::string dense = v;
  ASSERT_TRUE(ToDense(&dense));
  EXPECT_TRUE(IsHll(dense.substr(0, kHeaderSize), dense.size()));
  EXPECT_FALSE(IsHll(dense.substr(0, kHeaderSize), dense.size() + 1));
}

TEST(HyperLogLogTest, FindsCorruptSparseOpcodes) {
  std::string v;
  MakeEmpty(&v);
  AddAll(&v, {"a", "b", "c"});
  uint64_t card = 0;
  std::array<uint8_t, kRegisters> max{};
  std::string tail = v + "hello";  // registers past 16384
  EXPECT_FALSE(Count(tail, &card));
  EXPECT_FALSE(MergeInto(tail, max.data()));
  std::string copy = tail;
  EXPECT_FALSE(ToDense(&copy));
  EXPECT_EQ(copy, tail);  // left as it was
  // Registers inside the covered part can still be set, as in Redis.
  EXPECT_EQ(SetRegister(&copy, 3, 1, 3000), Change::kChanged);

  std::string cut = v.substr(0, v.size() - 2);  // the last XZERO is gone
  EXPECT_FALSE(Count(cut, &card));
  std::string before = cut;
  EXPECT_EQ(SetRegister(&cut, kRegisters - 1, 1, 3000), Change::kCorrupt);
  EXPECT_EQ(cut, before);
  EXPECT_EQ(SetRegister(&cut, 1, 40, 3000), Change::kCorrupt);  // promotion fails
  EXPECT_EQ(cut, before);

  std::string empty_ops = v.substr(0, kHeaderSize);
  EXPECT_FALSE(Count(empty_ops, &card));
  EXPECT_EQ(SetRegister(&empty_ops, 0, 1, 3000), Change::kCorrupt);
  EXPECT_EQ(DecodeSparse(empty_ops), "");
}

TEST(HyperLogLogTest, SelfTestPassesAndNoticesATinySparseLimit) {
  EXPECT_EQ(SelfTest(20240601, 3000), "");
  // Ten elements do not fit in 30 bytes: Redis's own test fails the same way.
  EXPECT_EQ(SelfTest(1, 30), "TESTFAILED sparse encoding not used");
}

}  // namespace
}  // namespace trove::resp::hll
