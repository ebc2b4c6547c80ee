// Tests for trove-bench's ClientSession (tools/bench/session.h): the requests
// it writes and how it matches and checks scripted server replies.
#include "session.h"

#include <gtest/gtest.h>
#include <string>

namespace trove::bench {
namespace {

class ClientSessionTest : public ::testing::Test {
 protected:
  ValueGen values_{"k:", 12, 12};

  std::string Value(uint64_t k, uint32_t v) {
    std::string s(values_.SizeFor(k, v), '\0');
    values_.Make(k, v, s.data());
    return s;
  }
  std::string TakeOutput(ClientSession& s) {
    std::string out(s.Output());
    s.Consumed(out.size());
    return out;
  }
  // Feeds `in` one byte at a time, as a slow socket would.
  bool FeedBytewise(ClientSession& s, const std::string& in, int64_t now, Stats* st) {
    std::string buf;
    for (char c : in) {
      buf += c;
      size_t used = 0;
      if (!s.OnInput(buf.data(), buf.size(), now, st, &used)) return false;
      buf.erase(0, used);
    }
    return buf.empty();
  }
};

TEST_F(ClientSessionTest, WritesTextRequests) {
  ClientSession s(Protocol::kText, &values_, 4, 2);
  s.IssueSet(7, 3, 0, true);
  uint64_t keys[] = {1, 2};
  s.IssueGet(keys, 0, true);
  EXPECT_EQ(TakeOutput(s), "set k:7 0 0 12\r\n" + Value(7, 3) + "\r\nget k:1 k:2\r\n");
  EXPECT_EQ(s.pending(), 2);
}

TEST_F(ClientSessionTest, WritesMetaAndRespRequests) {
  uint64_t keys[] = {5, 6};
  ClientSession m(Protocol::kMeta, &values_, 4, 2);
  m.IssueSet(9, 1, 0, true);
  m.IssueGet(keys, 0, true);
  EXPECT_EQ(TakeOutput(m), "ms k:9 12\r\n" + Value(9, 1) + "\r\nmg k:5 v\r\nmg k:6 v\r\n");
  ClientSession r(Protocol::kResp, &values_, 4, 2);
  r.IssueSet(9, 1, 0, true);
  r.IssueGet(keys, 0, true);
  EXPECT_EQ(TakeOutput(r), "*3\r\n$3\r\nSET\r\n$3\r\nk:9\r\n$12\r\n" + Value(9, 1) +
                               "\r\n*3\r\n$4\r\nMGET\r\n$3\r\nk:5\r\n$3\r\nk:6\r\n");
  ClientSession g(Protocol::kResp, &values_, 1, 1);
  g.IssueGet(keys, 0, true);
  EXPECT_EQ(TakeOutput(g), "*2\r\n$3\r\nGET\r\n$3\r\nk:5\r\n");
}

TEST_F(ClientSessionTest, PipelineWindowLimitsIssues) {
  ClientSession s(Protocol::kText, &values_, 2, 1);
  uint64_t k = 1;
  s.IssueGet(&k, 0, true);
  EXPECT_TRUE(s.CanIssue());
  s.IssueGet(&k, 0, true);
  EXPECT_FALSE(s.CanIssue());
}

TEST_F(ClientSessionTest, MatchesTextMultigetHitsAndMisses) {
  ClientSession s(Protocol::kText, &values_, 4, 3);
  uint64_t keys[] = {1, 2, 3};
  s.IssueGet(keys, 1000, true);
  s.IssueSet(4, 1, 2000, true);
  std::string reply = "VALUE k:1 0 12\r\n" + Value(1, 8) + "\r\nVALUE k:3 0 12\r\n" + Value(3, 2) +
                      "\r\nEND\r\nSTORED\r\n";
  Stats st;
  ASSERT_TRUE(FeedBytewise(s, reply, 6000, &st));
  EXPECT_EQ(s.pending(), 0);
  EXPECT_EQ(st.hits, 2u);
  EXPECT_EQ(st.misses, 1u);
  EXPECT_EQ(st.gets, 1u);
  EXPECT_EQ(st.sets, 1u);
  EXPECT_EQ(st.errors(), 0u);
  EXPECT_EQ(st.get_lat.max(), 5000u);  // latency counts from start_ns
  EXPECT_EQ(st.set_lat.max(), 4000u);
}

TEST_F(ClientSessionTest, WrongValueCountsAsMismatch) {
  ClientSession s(Protocol::kText, &values_, 4, 1);
  uint64_t k = 1;
  s.IssueGet(&k, 0, true);
  // Key 2's value returned under key 1.
  std::string reply = "VALUE k:1 0 12\r\n" + Value(2, 1) + "\r\nEND\r\n";
  Stats st;
  ASSERT_TRUE(FeedBytewise(s, reply, 10, &st));
  EXPECT_EQ(st.err_mismatch, 1u);
  EXPECT_FALSE(st.first_error.empty());
}

TEST_F(ClientSessionTest, ValueForUnaskedKeyIsOutOfSync) {
  ClientSession s(Protocol::kText, &values_, 4, 1);
  uint64_t k = 1;
  s.IssueGet(&k, 0, true);
  std::string reply = "VALUE k:9 0 12\r\n" + Value(9, 1) + "\r\nEND\r\n";
  Stats st;
  EXPECT_FALSE(FeedBytewise(s, reply, 10, &st));
  EXPECT_EQ(st.err_unexpected, 1u);
}

TEST_F(ClientSessionTest, ServerErrorCompletesRequestAsError) {
  ClientSession s(Protocol::kText, &values_, 4, 1);
  s.IssueSet(1, 1, 0, true);
  s.IssueSet(2, 1, 0, true);
  Stats st;
  ASSERT_TRUE(FeedBytewise(s, "SERVER_ERROR out of memory\r\nSTORED\r\n", 10, &st));
  EXPECT_EQ(st.err_unexpected, 1u);
  EXPECT_EQ(st.sets, 2u);
  EXPECT_EQ(s.pending(), 0);
  EXPECT_EQ(st.first_error, "out of memory");
}

TEST_F(ClientSessionTest, MalformedBytesStopTheStream) {
  ClientSession s(Protocol::kText, &values_, 4, 1);
  s.IssueSet(1, 1, 0, true);
  Stats st;
  EXPECT_FALSE(FeedBytewise(s, "STORXD\r\n", 10, &st));
  EXPECT_EQ(st.err_malformed, 1u);
}

TEST_F(ClientSessionTest, UnsolicitedReplyIsAnError) {
  ClientSession s(Protocol::kResp, &values_, 4, 1);
  Stats st;
  size_t used;
  std::string in = "+OK\r\n";
  EXPECT_FALSE(s.OnInput(in.data(), in.size(), 0, &st, &used));
  EXPECT_EQ(st.err_unexpected, 1u);
}

TEST_F(ClientSessionTest, MatchesMetaReplies) {
  ClientSession s(Protocol::kMeta, &values_, 4, 2);
  uint64_t keys[] = {1, 2};
  s.IssueGet(keys, 0, true);
  s.IssueSet(3, 1, 0, true);
  Stats st;
  ASSERT_TRUE(FeedBytewise(s, "EN\r\nVA 12\r\n" + Value(2, 4) + "\r\nHD\r\n", 10, &st));
  EXPECT_EQ(st.hits, 1u);
  EXPECT_EQ(st.misses, 1u);
  EXPECT_EQ(st.ops, 2u);
  EXPECT_EQ(st.errors(), 0u);
}

TEST_F(ClientSessionTest, MatchesRespGetAndMget) {
  ClientSession s(Protocol::kResp, &values_, 4, 2);
  uint64_t keys[] = {1, 2};
  s.IssueGet(keys, 0, true);
  s.IssueSet(3, 1, 0, true);
  s.IssueGet(keys, 0, true);
  Stats st;
  std::string reply = "*2\r\n$12\r\n" + Value(1, 1) + "\r\n$-1\r\n+OK\r\n-ERR busy\r\n";
  ASSERT_TRUE(FeedBytewise(s, reply, 10, &st));
  EXPECT_EQ(st.hits, 1u);
  EXPECT_EQ(st.misses, 1u);
  EXPECT_EQ(st.err_unexpected, 1u);  // the -ERR answering the second MGET
  EXPECT_EQ(s.pending(), 0);
}

TEST_F(ClientSessionTest, RespMgetOfWrongWidthIsOutOfSync) {
  ClientSession s(Protocol::kResp, &values_, 4, 2);
  uint64_t keys[] = {1, 2};
  s.IssueGet(keys, 0, true);
  Stats st;
  EXPECT_FALSE(FeedBytewise(s, "*3\r\n", 10, &st));
  EXPECT_EQ(st.err_unexpected, 1u);
}

TEST_F(ClientSessionTest, UnmeasuredRequestsSkipStatsButStillCheck) {
  ClientSession s(Protocol::kText, &values_, 4, 1);
  uint64_t k = 1;
  s.IssueGet(&k, 0, false);
  Stats st;
  std::string reply = "VALUE k:1 0 12\r\n" + Value(2, 1) + "\r\nEND\r\n";
  ASSERT_TRUE(FeedBytewise(s, reply, 10, &st));
  EXPECT_EQ(st.ops, 0u);
  EXPECT_EQ(st.hits, 0u);
  EXPECT_EQ(st.all.count(), 0u);
  EXPECT_EQ(st.completed, 1u);
  EXPECT_EQ(st.err_mismatch, 1u);  // warm-up replies are verified too
}

TEST_F(ClientSessionTest, OutputBufferHoldsAFullWindowAfterPartialWrites) {
  ValueGen big("k:", 4096, 4096);
  ClientSession s(Protocol::kText, &big, 3, 1);
  for (int round = 0; round < 50; ++round) {
    while (s.CanIssue()) s.IssueSet(static_cast<uint64_t>(round), 1, 0, true);
    s.Consumed(s.Output().size() / 3);  // a short write
    Stats st;
    std::string stored = "STORED\r\n";
    size_t used;
    ASSERT_TRUE(s.OnInput(stored.data(), stored.size(), 0, &st, &used));
    EXPECT_EQ(used, stored.size());
  }
}

}  // namespace
}  // namespace trove::bench
