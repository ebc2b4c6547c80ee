// Tracking (the client-side caching table, BCAST prefixes, InvalidateAll,
// the table limit) and LiveClients, without workers: no group is set, so
// every message is delivered in place to a test hook that records it. Test
// thread, plus four threads in the concurrency test.
#include "protocol/resp/services/tracking.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/mutex.h"

namespace trove::resp {
namespace {

struct Delivery {
  uint64_t conn;
  std::vector<std::string> keys;
  bool flush;
  bool bcast;
  uint64_t modifier;
};

Mutex g_mu{LockRank::kNone};
std::vector<Delivery> g_got;

void Record(uint64_t conn, const std::shared_ptr<const TrackingMessage>& m) {
  MutexLock l(&g_mu);
  g_got.push_back(Delivery{conn, m->keys, m->flush, m->bcast, m->modifier});
}

std::vector<Delivery> Got() {
  MutexLock l(&g_mu);
  return g_got;
}

// The deliveries to `conn`, in order.
std::vector<Delivery> GotFor(uint64_t conn) {
  std::vector<Delivery> out;
  for (const Delivery& d : Got()) {
    if (d.conn == conn) out.push_back(d);
  }
  return out;
}

class TrackingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    MutexLock l(&g_mu);
    g_got.clear();
  }
  Tracking t_{&Record};
};

TEST_F(TrackingTest, InvalidateSendsOneMessagePerClientAndForgetsTheKey) {
  t_.Remember("k", 1);
  t_.Invalidate("k", 9);
  auto got = Got();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].conn, 1u);
  EXPECT_EQ(got[0].keys, (std::vector<std::string>{"k"}));
  EXPECT_FALSE(got[0].flush);
  EXPECT_FALSE(got[0].bcast);
  EXPECT_EQ(got[0].modifier, 9u);
  t_.Invalidate("k", 9);  // already taken out: nothing
  t_.Invalidate("never", 9);
  EXPECT_EQ(Got().size(), 1u);
  EXPECT_EQ(t_.total_keys(), 0u);
}

TEST_F(TrackingTest, EveryClientOfAKeyGetsItOnce) {
  t_.Remember("k", 1);
  t_.Remember("k", 2);
  t_.Remember("k", 2);  // the same client twice counts once
  EXPECT_EQ(t_.total_keys(), 1u);
  EXPECT_EQ(t_.total_items(), 2u);
  std::vector<std::string_view> keys{"k", "other"};
  t_.Invalidate(keys, 0);
  ASSERT_EQ(Got().size(), 2u);
  for (uint64_t c : {1u, 2u}) {
    auto got = GotFor(c);
    ASSERT_EQ(got.size(), 1u) << c;
    EXPECT_EQ(got[0].keys, (std::vector<std::string>{"k"}));
    EXPECT_EQ(got[0].modifier, 0u);
  }
  EXPECT_EQ(t_.total_keys(), 0u);
  EXPECT_EQ(t_.total_items(), 0u);
}

TEST_F(TrackingTest, CountersAndMemoryFollowTheTable) {
  EXPECT_EQ(t_.memory_bytes(), 0u);
  t_.Remember("a", 1);
  const size_t one = t_.memory_bytes();
  EXPECT_GT(one, 0u);
  t_.Remember("a", 2);
  EXPECT_GT(t_.memory_bytes(), one);  // one more id
  t_.Remember("bb", 1);
  t_.Remember("ccc", 3);
  EXPECT_EQ(t_.total_keys(), 3u);
  EXPECT_EQ(t_.total_items(), 4u);
  t_.Invalidate("a", 0);
  EXPECT_EQ(t_.total_keys(), 2u);
  EXPECT_EQ(t_.total_items(), 2u);
  t_.InvalidateAll();
  EXPECT_EQ(t_.total_keys(), 0u);
  EXPECT_EQ(t_.total_items(), 0u);
  EXPECT_EQ(t_.memory_bytes(), 0u);
}

TEST_F(TrackingTest, BcastPrefixesGetOneMessageWithTheirMatchingKeys) {
  t_.AddPrefix("a", 1);
  t_.AddPrefix("", 2);  // every key
  EXPECT_EQ(t_.total_prefixes(), 2u);
  std::vector<std::string_view> keys{"a1", "b1"};
  t_.Invalidate(keys, 7);
  ASSERT_EQ(Got().size(), 2u);
  auto c1 = GotFor(1);
  ASSERT_EQ(c1.size(), 1u);
  EXPECT_EQ(c1[0].keys, (std::vector<std::string>{"a1"}));
  EXPECT_TRUE(c1[0].bcast);
  EXPECT_FALSE(c1[0].flush);
  EXPECT_EQ(c1[0].modifier, 7u);
  auto c2 = GotFor(2);
  ASSERT_EQ(c2.size(), 1u);
  EXPECT_EQ(c2[0].keys, (std::vector<std::string>{"a1", "b1"}));
  EXPECT_TRUE(c2[0].bcast);
  EXPECT_EQ(c2[0].modifier, 7u);
  t_.Invalidate("b2", 0);  // matches only ""
  EXPECT_EQ(Got().size(), 3u);
  EXPECT_EQ(Got().back().conn, 2u);

  t_.RemovePrefix("a", 1);
  EXPECT_EQ(t_.total_prefixes(), 1u);
  t_.Invalidate("a2", 0);
  ASSERT_EQ(Got().size(), 4u);
  EXPECT_EQ(Got().back().conn, 2u);
  EXPECT_EQ(GotFor(1).size(), 1u);
}

TEST_F(TrackingTest, APrefixIsCountedOnceAndGoesWithItsLastClient) {
  t_.AddPrefix("p", 1);
  t_.AddPrefix("p", 2);
  t_.AddPrefix("p", 2);
  EXPECT_EQ(t_.total_prefixes(), 1u);
  t_.RemovePrefix("p", 1);
  EXPECT_EQ(t_.total_prefixes(), 1u);
  t_.RemovePrefix("q", 2);  // not registered: no-op
  EXPECT_EQ(t_.total_prefixes(), 1u);
  t_.Invalidate("px", 0);
  ASSERT_EQ(Got().size(), 1u);
  EXPECT_EQ(Got()[0].conn, 2u);
  t_.RemovePrefix("p", 2);
  EXPECT_EQ(t_.total_prefixes(), 0u);
  t_.Invalidate("px", 0);
  EXPECT_EQ(Got().size(), 1u);
}

TEST_F(TrackingTest, InvalidateAllSendsOneFlushToEveryTrackingClient) {
  t_.ClientOn(1);
  t_.ClientOn(2);
  t_.ClientOn(3);  // BCAST only
  t_.AddPrefix("x", 3);
  t_.Remember("k1", 1);
  t_.Remember("k2", 1);
  t_.Remember("k1", 2);
  t_.InvalidateAll();
  ASSERT_EQ(Got().size(), 3u);
  for (uint64_t c : {1u, 2u, 3u}) {
    auto got = GotFor(c);
    ASSERT_EQ(got.size(), 1u) << c;
    EXPECT_TRUE(got[0].flush);
    EXPECT_TRUE(got[0].keys.empty());
  }
  EXPECT_EQ(t_.total_keys(), 0u);
  EXPECT_EQ(t_.total_items(), 0u);
  t_.Invalidate("k1", 0);  // the table is empty
  EXPECT_EQ(Got().size(), 3u);
}

TEST_F(TrackingTest, ClientOnOffCountsAndCallsActiveFnOnEdgesOnly) {
  int calls = 0;
  t_.set_active_fn([&calls] { ++calls; });
  EXPECT_FALSE(t_.active());
  t_.ClientOn(1);
  EXPECT_TRUE(t_.active());
  EXPECT_EQ(calls, 1);
  t_.ClientOn(1);  // again: counts once
  t_.ClientOn(2);
  EXPECT_EQ(t_.clients(), 2u);
  EXPECT_EQ(calls, 1);
  t_.ClientOff(1);
  EXPECT_TRUE(t_.active());
  EXPECT_EQ(t_.clients(), 1u);
  EXPECT_EQ(calls, 1);
  t_.ClientOff(1);  // not on: no-op
  EXPECT_EQ(calls, 1);
  t_.ClientOff(2);
  EXPECT_FALSE(t_.active());
  EXPECT_EQ(t_.clients(), 0u);
  EXPECT_EQ(calls, 2);
  t_.ClientOn(3);
  EXPECT_EQ(calls, 3);
}

TEST_F(TrackingTest, LoweringMaxKeysEvictsAtOnce) {
  EXPECT_EQ(t_.max_keys(), Tracking::kDefaultMaxKeys);
  for (int i = 0; i < 250; ++i) t_.Remember("key:" + std::to_string(i), 1);
  EXPECT_EQ(t_.total_keys(), 250u);
  EXPECT_TRUE(Got().empty());
  t_.SetMaxKeys(1);
  EXPECT_EQ(Got().size(), 249u);
  EXPECT_EQ(t_.total_keys(), 1u);
  EXPECT_EQ(t_.total_items(), 1u);
  for (const Delivery& d : Got()) {
    EXPECT_EQ(d.conn, 1u);
    EXPECT_EQ(d.keys.size(), 1u);
    EXPECT_EQ(d.modifier, 0u);
  }
}

TEST_F(TrackingTest, EnforceLimitAfterRememberEvictsOneKey) {
  t_.SetMaxKeys(10);
  for (int i = 0; i < 10; ++i) t_.Remember("k" + std::to_string(i), 1);
  t_.EnforceLimit();
  EXPECT_EQ(t_.total_keys(), 10u);
  EXPECT_TRUE(Got().empty());
  t_.Remember("k10", 2);  // Remember itself never sends (it may run under stripes)
  EXPECT_EQ(t_.total_keys(), 11u);
  EXPECT_TRUE(Got().empty());
  t_.EnforceLimit();
  EXPECT_EQ(t_.total_keys(), 10u);
  auto got = Got();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].modifier, 0u);
  EXPECT_FALSE(got[0].bcast);
  ASSERT_EQ(got[0].keys.size(), 1u);
  t_.Invalidate(got[0].keys[0], 0);  // the victim is gone from the table
  EXPECT_EQ(Got().size(), 1u);

  t_.SetMaxKeys(0);  // no limit
  EXPECT_EQ(t_.max_keys(), 0u);
  for (int i = 0; i < 50; ++i) t_.Remember("n" + std::to_string(i), 1);
  t_.EnforceLimit();
  EXPECT_EQ(t_.total_keys(), 60u);
  EXPECT_EQ(Got().size(), 1u);
}

TEST_F(TrackingTest, ConcurrentRememberAndInvalidateEndEmpty) {
  constexpr int kThreads = 4;
  constexpr int kOps = 2000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([this, t] {
      const uint64_t id = static_cast<uint64_t>(t) + 1;
      for (int i = 0; i < kOps; ++i) {
        const std::string key = "t" + std::to_string(t) + ":" + std::to_string((i / 2) % 100);
        if (i % 2 == 0) {
          t_.Remember(key, id);
          t_.Remember("shared", id);
        } else {
          t_.Invalidate(key, id);
          t_.Invalidate("shared", id);
        }
      }
      for (int i = 0; i < 100; ++i) {
        t_.Invalidate("t" + std::to_string(t) + ":" + std::to_string(i), id);  // nothing left
      }
    });
  }
  for (auto& th : threads) th.join();
  t_.Invalidate("shared", 0);
  EXPECT_EQ(t_.total_keys(), 0u);
  EXPECT_EQ(t_.total_items(), 0u);
  EXPECT_EQ(t_.memory_bytes(), 0u);
  // Each own key was remembered (even i) and invalidated (the next, odd i)
  // in turn by its thread alone: one message per Remember of an own key.
  for (uint64_t c = 1; c <= kThreads; ++c) {
    size_t own = 0;
    for (const Delivery& d : GotFor(c)) {
      if (d.keys[0] != "shared") ++own;
    }
    EXPECT_EQ(own, static_cast<size_t>(kOps / 2)) << c;
  }
}

TEST_F(TrackingTest, EvictionCaptureCollectsOnItsOwnThreadOnly) {
  EXPECT_FALSE(Tracking::CaptureEvicted("none"));  // no capture open
  Tracking::EvictionCapture outer;
  EXPECT_TRUE(Tracking::CaptureEvicted("a"));
  bool other_thread = true;
  std::thread([&] { other_thread = Tracking::CaptureEvicted("b"); }).join();
  EXPECT_FALSE(other_thread);
  {
    Tracking::EvictionCapture inner;  // hides the outer one until it closes
    EXPECT_TRUE(Tracking::CaptureEvicted("c"));
    EXPECT_EQ(inner.Take(), (std::vector<std::string>{"c"}));
    EXPECT_TRUE(Tracking::CaptureEvicted("d"));  // the outer one again
  }
  EXPECT_EQ(outer.Take(), (std::vector<std::string>{"a", "d"}));
  EXPECT_FALSE(Tracking::CaptureEvicted("e"));
}

TEST_F(TrackingTest, InvalidateEvictedIsTheEvictingClientsChangeForReadsOnly) {
  t_.Remember("k", 1);
  t_.Remember("k", 2);
  t_.AddPrefix("k", 3);
  std::vector<std::string> keys{"k", "never"};
  t_.InvalidateEvicted(keys, 1);
  ASSERT_EQ(GotFor(1).size(), 1u);
  EXPECT_EQ(GotFor(1)[0].modifier, 1u);  // NOLOOP drops it for client 1
  ASSERT_EQ(GotFor(2).size(), 1u);
  EXPECT_EQ(GotFor(2)[0].modifier, 1u);
  ASSERT_EQ(GotFor(3).size(), 1u);
  EXPECT_TRUE(GotFor(3)[0].bcast);
  EXPECT_EQ(GotFor(3)[0].keys, (std::vector<std::string>{"k"}));
  EXPECT_EQ(GotFor(3)[0].modifier, 0u);  // Redis's BCAST: whoever evicted
  EXPECT_EQ(t_.total_keys(), 0u);
  t_.RemovePrefix("k", 3);
}

TEST(LiveClientsTest, AddRemoveContains) {
  LiveClients lc;
  EXPECT_FALSE(lc.Contains(1));
  lc.Add(1);
  lc.Add(17);  // the same stripe as 1
  lc.Add(2);
  EXPECT_TRUE(lc.Contains(1));
  EXPECT_TRUE(lc.Contains(17));
  EXPECT_TRUE(lc.Contains(2));
  EXPECT_FALSE(lc.Contains(33));
  lc.Remove(1);
  EXPECT_FALSE(lc.Contains(1));
  EXPECT_TRUE(lc.Contains(17));
  lc.Remove(1);  // twice: no-op
  lc.Remove(17);
  lc.Remove(2);
  EXPECT_FALSE(lc.Contains(17));
  EXPECT_FALSE(lc.Contains(2));
}

}  // namespace
}  // namespace trove::resp
