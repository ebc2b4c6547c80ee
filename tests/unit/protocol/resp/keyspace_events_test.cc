// notify-keyspace-events parsing and formatting, and KeyEvents publishing
// (commands and the engine's removals) into a PubSubHub whose deliveries a
// test hook records. Test thread plus the KeyEvents reporter thread.
#include "protocol/resp/services/keyspace_events.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "common/mutex.h"
#include "protocol/resp/types/keyspace.h"

namespace trove::resp {
namespace {

using namespace trove::protocol;  // NOLINT: the kKeClass* names

Mutex g_mu{LockRank::kNone};
std::vector<std::string> g_got;  // "channel payload" (pattern deliveries get "p:")

void Record(uint64_t /*conn*/, const std::shared_ptr<const PublishedMessage>& m, int pattern) {
  MutexLock l(&g_mu);
  g_got.push_back((pattern >= 0 ? "p:" : "") + m->channel + " " + m->payload);
}

std::vector<std::string> Got() {
  MutexLock l(&g_mu);
  return g_got;
}

class KeyEventsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    MutexLock l(&g_mu);
    g_got.clear();
  }
  // Waits up to 5 s for n recorded deliveries.
  std::vector<std::string> WaitFor(size_t n) {
    for (int i = 0; i < 500 && Got().size() < n; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return Got();
  }
  PubSubHub hub_{&Record};
};

TEST(KeyEventClassesTest, ParsesEveryLetterAndRejectsOthers) {
  uint32_t f = 0;
  ASSERT_TRUE(ParseKeyEventClasses("KEA", &f));
  EXPECT_EQ(f, kKeClassKeyspace | kKeClassKeyevent | kKeClassAll);
  ASSERT_TRUE(ParseKeyEventClasses("g$lshzxetmdnKE", &f));
  EXPECT_EQ(f, kKeClassAll | kKeClassKeyMiss | kKeClassNew | kKeClassKeyspace | kKeClassKeyevent);
  ASSERT_TRUE(ParseKeyEventClasses("", &f));
  EXPECT_EQ(f, 0u);
  f = 7;
  EXPECT_FALSE(ParseKeyEventClasses("KEy", &f));
  EXPECT_FALSE(ParseKeyEventClasses("a", &f));  // case matters
  EXPECT_EQ(f, 7u);                            // untouched on error
}

TEST(KeyEventClassesTest, FormatsAsRedisDoes) {
  auto fmt = [](const char* s) {
    uint32_t f = 0;
    EXPECT_TRUE(ParseKeyEventClasses(s, &f));
    return FormatKeyEventClasses(f);
  };
  EXPECT_EQ(fmt("KEA"), "AKE");
  EXPECT_EQ(fmt("EA"), "AE");
  EXPECT_EQ(fmt("Kx"), "xK");
  EXPECT_EQ(fmt("$lshzxeKE"), "$lshzxeKE");
  EXPECT_EQ(fmt("mn"), "nm");
  EXPECT_EQ(fmt("g$lshzxetd"), "A");  // every class of A is A
  // Redis 7.0 prints "An" as "A"; Trove keeps the n so it round-trips.
  EXPECT_EQ(fmt("An"), "An");
  EXPECT_EQ(fmt(""), "");
}

TEST(KeyEventClassesTest, NothingIsEnabledWithoutKOrE) {
  EXPECT_EQ(EffectiveKeyEventClasses(kKeClassAll), 0u);
  EXPECT_EQ(EffectiveKeyEventClasses(kKeClassAll | kKeClassKeyevent),
            kKeClassAll | kKeClassKeyevent);
}

TEST_F(KeyEventsTest, NotifyPublishesOnTheConfiguredChannels) {
  KeyEvents ke(&hub_, nullptr);
  hub_.Add(PubSubState::Kind::kPattern, "*", 1);
  ke.Notify(kKeClassString, "set", "k");  // not configured: nothing
  EXPECT_TRUE(Got().empty());
  ke.Configure(kKeClassKeyspace | kKeClassKeyevent | kKeClassString);
  EXPECT_EQ(ke.enabled(), kKeClassKeyspace | kKeClassKeyevent | kKeClassString);
  ke.Notify(kKeClassString, "set", EncodeDbKey(9, "k"));
  ke.Notify(kKeClassList, "lpush", "l");  // class not configured
  EXPECT_EQ(Got(), (std::vector<std::string>{"p:__keyspace@9__:k set", "p:__keyevent@9__:set k"}));
  ke.Configure(kKeClassKeyevent | kKeClassGeneric);
  ke.Notify(kKeClassGeneric, "del", "d");
  EXPECT_EQ(Got().back(), "p:__keyevent@0__:del d");
  EXPECT_EQ(Got().size(), 3u);
}

TEST_F(KeyEventsTest, RemovalsArePublishedByTheReporterThread) {
  KeyEvents ke(&hub_, nullptr);
  hub_.Add(PubSubState::Kind::kChannel, "__keyevent@0__:expired", 1);
  hub_.Add(PubSubState::Kind::kChannel, "__keyevent@0__:evicted", 1);
  EXPECT_FALSE(ke.WantsRemovals());
  engine::ItemRemoval r{};
  r.cause = engine::RemovalCause::kExpired;
  r.key = "gone";
  ke.OnRemoved(r);  // not configured: dropped at once, not queued
  ke.Configure(kKeClassKeyevent | kKeClassExpired);
  EXPECT_TRUE(ke.WantsRemovals());
  r.key = "a";
  ke.OnRemoved(r);
  r.cause = engine::RemovalCause::kEvicted;
  r.key = "b";
  ke.OnRemoved(r);  // evicted is not configured
  r.cause = engine::RemovalCause::kExpired;
  r.key = "c";
  ke.OnRemoved(r);
  EXPECT_EQ(WaitFor(2), (std::vector<std::string>{"__keyevent@0__:expired a",
                                                  "__keyevent@0__:expired c"}));
  ke.Configure(kKeClassKeyevent | kKeClassEvicted);
  r.cause = engine::RemovalCause::kEvicted;
  r.key = "e";
  ke.OnRemoved(r);
  EXPECT_EQ(WaitFor(3).back(), "__keyevent@0__:evicted e");
  EXPECT_EQ(ke.dropped(), 0u);
}

TEST_F(KeyEventsTest, TheExpiryScanRunsWhileExpiredEventsAreOn) {
  KeyEvents ke(&hub_, nullptr);
  std::atomic<int> scans{0};
  std::atomic<bool> active{true};
  ke.set_expiry_scan([&scans] { scans.fetch_add(1); }, &active);
  ke.Configure(kKeClassKeyevent | kKeClassExpired);
  for (int i = 0; i < 300 && scans.load() == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_GE(scans.load(), 1);
  // DEBUG SET-ACTIVE-EXPIRE 0 stops it.
  active.store(false);
  std::this_thread::sleep_for(std::chrono::milliseconds(1200));
  const int after = scans.load();
  std::this_thread::sleep_for(std::chrono::milliseconds(1200));
  EXPECT_EQ(scans.load(), after);
}

}  // namespace
}  // namespace trove::resp
