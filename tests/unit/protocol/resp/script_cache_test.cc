// ScriptCache: bodies by SHA-1, byte count, epoch on flush, workers racing.
#include "protocol/resp/services/script_cache.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "common/sha1.h"

namespace trove::resp {
namespace {

TEST(ScriptCacheTest, StoresBodiesBySha) {
  ScriptCache c;
  const std::string body = "return 1";
  const std::string sha = Sha1Hex(body);
  EXPECT_FALSE(c.Exists(sha));
  c.Add(sha, body);
  c.Add(sha, body);  // again: counted once
  std::string got;
  ASSERT_TRUE(c.Get(sha, &got));
  EXPECT_EQ(got, body);
  EXPECT_TRUE(c.Exists("E0E1F9FABFC9D4800C877A703B823AC0578FF8DB"));  // any case
  EXPECT_EQ(c.count(), 1u);
  EXPECT_EQ(c.bytes(), body.size());
}

TEST(ScriptCacheTest, FlushEmptiesAndRaisesTheEpoch) {
  ScriptCache c;
  c.Add(Sha1Hex("a"), "a");
  const uint64_t e = c.epoch();
  c.Flush();
  EXPECT_EQ(c.count(), 0u);
  EXPECT_EQ(c.bytes(), 0u);
  EXPECT_GT(c.epoch(), e);
  std::string got;
  EXPECT_FALSE(c.Get(Sha1Hex("a"), &got));
}

TEST(ScriptCacheTest, EvictsTheOldestEvalBodiesOnly) {
  using Origin = ScriptCache::Origin;
  ScriptCache c;
  c.Add(Sha1Hex("loaded"), "loaded", Origin::kLoad);
  c.Add(Sha1Hex("b0"), "b0", Origin::kEval);
  c.Add(Sha1Hex("b0"), "b0", Origin::kLoad);  // SCRIPT LOAD makes it permanent
  const uint64_t e = c.epoch();
  for (size_t i = 1; i <= ScriptCache::kMaxEvalScripts + 3; ++i) {
    const std::string body = "b" + std::to_string(i);
    c.Add(Sha1Hex(body), body, Origin::kEval);
    if (i == 10) c.Add(Sha1Hex("b1"), "b1", Origin::kEval);  // refreshed: b2..b9 are older
  }
  EXPECT_EQ(c.evicted(), 3u);
  EXPECT_GT(c.epoch(), e);
  EXPECT_TRUE(c.Exists(Sha1Hex("loaded")));
  EXPECT_TRUE(c.Exists(Sha1Hex("b0")));
  EXPECT_TRUE(c.Exists(Sha1Hex("b1")));
  EXPECT_FALSE(c.Exists(Sha1Hex("b2")));
  EXPECT_FALSE(c.Exists(Sha1Hex("b3")));
  EXPECT_FALSE(c.Exists(Sha1Hex("b4")));
  EXPECT_TRUE(c.Exists(Sha1Hex("b5")));
  EXPECT_EQ(c.count(), ScriptCache::kMaxEvalScripts + 2);
}

TEST(ScriptCacheTest, WorkersAddAndReadConcurrently) {
  ScriptCache c;
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t) {
    ts.emplace_back([&c, t] {
      for (int i = 0; i < 200; ++i) {
        const std::string body = "return " + std::to_string(i % 50);
        c.Add(Sha1Hex(body), body);
        std::string got;  // a flush on another thread may have dropped it
        if (c.Get(Sha1Hex(body), &got)) {
          EXPECT_EQ(got, body);
        }
        if (t == 0 && i == 100) c.Flush();
      }
    });
  }
  for (std::thread& th : ts) th.join();
  EXPECT_LE(c.count(), 50u);
}

}  // namespace
}  // namespace trove::resp
