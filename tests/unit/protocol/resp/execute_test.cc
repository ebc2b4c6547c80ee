// The command seam (core/execute.h) driven with no connection behind it, as
// scripts will drive it: replies, key locking and the Effects record.
#include "protocol/resp/core/execute.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/clock.h"
#include "engine/engine.h"
#include "net/io_buffer.h"
#include "protocol/key_events.h"
#include "protocol/resp/core/command_table.h"
#include "protocol/resp/core/resp_server.h"
#include "protocol/resp/types/collections.h"
#include "protocol/resp/types/keyspace.h"

namespace trove::resp {
namespace {

class SeamTest : public ::testing::Test {
 protected:
  SeamTest() {
    engine::EngineOptions o;
    o.clock = &clock_;
    engine_ = std::move(engine::Engine::Create(o).value());
    server_ = std::make_unique<RespServer>(engine_.get(), nullptr, RespOptions());
    conn_.identity().Init(1, "script");
  }

  // Runs argv through the seam as a caller without a connection would;
  // returns the reply bytes. Effects accumulate in fx_ until the test takes them.
  std::string Run(std::vector<std::string> words, uint32_t notify = 0) {
    std::vector<std::string_view> argv(words.begin(), words.end());
    net::OutputBuffer out;
    RespWriter w(&out, 2);
    std::vector<ScratchEntry> scratch;
    bool write_failed = false;
    CommandContext ctx;
    ctx.server = server_.get();
    ctx.engine = engine_.get();
    ctx.ts = server_->ThreadStatsFor(0);
    ctx.stats = server_->StatsFor(0);
    ctx.fx = &fx_;
    ctx.conn = &conn_;
    ctx.w = &w;
    ctx.push = &w;
    ctx.argv = argv;
    ctx.spec = CommandTable::Get().Find(argv[0]);
    ctx.scratch = &scratch;
    ctx.write_failed = &write_failed;
    ctx.notify = notify;
    EXPECT_NE(ctx.spec, nullptr);
    ExecuteCommand(ctx, &buf_);
    EXPECT_FALSE(ctx.locked) << "the seam releases the stripes it took";
    return out.ToString();
  }

  ManualClock clock_;
  std::unique_ptr<engine::Engine> engine_;
  std::unique_ptr<RespServer> server_;
  ConnState conn_;
  Effects fx_;
  ExecBuffers buf_;
};

TEST_F(SeamTest, RunsACommandWithNoConnectionAndRecordsNothingWhenNotifyIsOff) {
  EXPECT_EQ(Run({"set", "k", "v"}), "+OK\r\n");
  EXPECT_EQ(Run({"get", "k"}), "$1\r\nv\r\n");
  EXPECT_TRUE(fx_.key_events.empty());
  EXPECT_TRUE(fx_.invalidations.empty());
  EXPECT_FALSE(fx_.has_keyspace_effects());
}

TEST_F(SeamTest, RecordsKeyEventsAndInvalidationsInCommandOrder) {
  const uint32_t on = protocol::kKeClassAll | protocol::kKeClassKeyspace | protocol::kKeTracking;
  EXPECT_EQ(Run({"set", "a", "1"}, on), "+OK\r\n");
  EXPECT_EQ(Run({"rpush", "l", "x", "y"}, on), ":2\r\n");
  EXPECT_EQ(Run({"del", "a"}, on), ":1\r\n");
  ASSERT_EQ(fx_.key_events.size(), 3u);
  EXPECT_STREQ(fx_.key_events[0].event, "set");
  EXPECT_EQ(fx_.key_events[0].ekey, EncodeDbKey(0, "a"));
  EXPECT_STREQ(fx_.key_events[1].event, "rpush");
  EXPECT_EQ(fx_.key_events[1].ekey, EncodeDbKey(0, "l"));
  EXPECT_STREQ(fx_.key_events[2].event, "del");
  // Each changed key once, however often it changed.
  ASSERT_EQ(fx_.invalidations.size(), 2u);
  EXPECT_EQ(fx_.invalidations[0], EncodeDbKey(0, "a"));
  EXPECT_EQ(fx_.invalidations[1], EncodeDbKey(0, "l"));
}

TEST_F(SeamTest, AReadRecordsNoChange) {
  Run({"set", "a", "1"});
  const uint32_t on = protocol::kKeClassAll | protocol::kKeClassKeyspace | protocol::kKeTracking;
  EXPECT_EQ(Run({"get", "a"}, on), "$1\r\n1\r\n");
  EXPECT_TRUE(fx_.key_events.empty());
  EXPECT_TRUE(fx_.invalidations.empty());
}

TEST_F(SeamTest, QuitAsksItsCallerToClose) {
  EXPECT_EQ(Run({"quit"}), "+OK\r\n");
  EXPECT_TRUE(fx_.close_caller);
}

TEST_F(SeamTest, SelectedDatabaseComesFromTheCallersIdentity) {
  conn_.identity().SelectDb(3);
  Run({"set", "k", "in3"});
  conn_.identity().SelectDb(0);
  EXPECT_EQ(Run({"get", "k"}), "$-1\r\n");
  conn_.identity().SelectDb(3);
  EXPECT_EQ(Run({"get", "k"}), "$3\r\nin3\r\n");
}

TEST_F(SeamTest, SortReadsThePatternKeysItDoesNotName) {
  Run({"rpush", "l", "1", "2"});
  Run({"set", "w_1", "2"});
  Run({"set", "w_2", "1"});
  Run({"hset", "h_1", "f", "a"});
  EXPECT_EQ(Run({"sort", "l", "by", "w_*", "get", "#", "get", "h_*->f"}),
            "*4\r\n$1\r\n2\r\n$-1\r\n$1\r\n1\r\n$1\r\na\r\n");
  EXPECT_EQ(Run({"sort_ro", "l", "by", "nosort", "desc", "limit", "0", "1"}),
            "*1\r\n$1\r\n2\r\n");
  EXPECT_EQ(Run({"sort", "w_1"}),
            "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n");
}

TEST_F(SeamTest, SortStoreRaisesSortstoreOnItsDestinationOnly) {
  const uint32_t on = protocol::kKeClassAll | protocol::kKeClassKeyspace | protocol::kKeTracking;
  Run({"rpush", "l", "2", "1"});
  EXPECT_EQ(Run({"sort", "l"}, on), "*2\r\n$1\r\n1\r\n$1\r\n2\r\n");
  EXPECT_TRUE(fx_.key_events.empty());
  EXPECT_EQ(Run({"sort", "l", "store", "d"}, on), ":2\r\n");
  EXPECT_EQ(Run({"sort", "none", "store", "d"}, on), ":0\r\n");  // deletes d
  EXPECT_EQ(Run({"sort", "none", "store", "d"}, on), ":0\r\n");  // nothing to delete
  EXPECT_EQ(Run({"sort", "l", "store", "l"}, on), ":2\r\n");
  ASSERT_EQ(fx_.key_events.size(), 3u);
  EXPECT_STREQ(fx_.key_events[0].event, "sortstore");
  EXPECT_EQ(fx_.key_events[0].ekey, EncodeDbKey(0, "d"));
  EXPECT_STREQ(fx_.key_events[1].event, "del");
  EXPECT_EQ(fx_.key_events[1].ekey, EncodeDbKey(0, "d"));
  EXPECT_STREQ(fx_.key_events[2].event, "sortstore");
  EXPECT_EQ(fx_.key_events[2].ekey, EncodeDbKey(0, "l"));
  ASSERT_EQ(fx_.invalidations.size(), 2u);
  EXPECT_EQ(fx_.invalidations[0], EncodeDbKey(0, "d"));
  EXPECT_EQ(fx_.invalidations[1], EncodeDbKey(0, "l"));
}

TEST(EffectsTest, AddsEachInvalidationAndReadyKeyOnce) {
  Effects fx;
  fx.AddInvalidation("a");
  fx.AddInvalidation("b");
  fx.AddInvalidation("a");
  fx.AddReadyKey("l");
  fx.AddReadyKey("l");
  EXPECT_EQ(fx.invalidations, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(fx.ready_keys, (std::vector<std::string>{"l"}));
  EXPECT_TRUE(fx.has_keyspace_effects());
}

}  // namespace
}  // namespace trove::resp
