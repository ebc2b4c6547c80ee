// Session tests: commands end to end through the parser, dispatch and the
// fake engine. Test thread only.
#include <gtest/gtest.h>

#include "session_test_util.h"

namespace trove::resp {
namespace {

class SessionTest : public ::testing::Test {
 protected:
  SessionHarness h_;
};

TEST_F(SessionTest, PingEchoAndInline) {
  EXPECT_EQ(h_.Cmd({"PING"}), "+PONG\r\n");
  EXPECT_EQ(h_.Cmd({"ping", "hi"}), "$2\r\nhi\r\n");
  EXPECT_EQ(h_.Send("PING\r\n"), "+PONG\r\n");
  EXPECT_EQ(h_.Cmd({"echo", "x"}), "$1\r\nx\r\n");
}

TEST_F(SessionTest, UnknownCommandAndArity) {
  EXPECT_EQ(h_.Send("foo a b\r\n"),
            "-ERR unknown command 'foo', with args beginning with: 'a' 'b' \r\n");
  EXPECT_EQ(h_.Send("get\r\n"), "-ERR wrong number of arguments for 'get' command\r\n");
  EXPECT_EQ(h_.Send("ping a b\r\n"), "-ERR wrong number of arguments for 'ping' command\r\n");
}

TEST_F(SessionTest, SetGetAndOptions) {
  EXPECT_EQ(h_.Cmd({"SET", "k", "v"}), "+OK\r\n");
  EXPECT_EQ(h_.Cmd({"GET", "k"}), "$1\r\nv\r\n");
  EXPECT_EQ(h_.Cmd({"SET", "k", "w", "NX"}), "$-1\r\n");
  EXPECT_EQ(h_.Cmd({"SET", "k", "w", "XX", "GET"}), "$1\r\nv\r\n");
  EXPECT_EQ(h_.Cmd({"GET", "k"}), "$1\r\nw\r\n");
  EXPECT_EQ(h_.Cmd({"SET", "k", "w", "NX", "XX"}), "-ERR syntax error\r\n");
  EXPECT_EQ(h_.Cmd({"SET", "k", "w", "EX", "0"}), "-ERR invalid expire time in 'set' command\r\n");
  EXPECT_EQ(h_.Cmd({"SET", "k", "w", "EX", "x"}),
            "-ERR value is not an integer or out of range\r\n");
  EXPECT_EQ(h_.Cmd({"GET", "missing"}), "$-1\r\n");
}

TEST_F(SessionTest, ExpiryFollowsTheClock) {
  EXPECT_EQ(h_.Cmd({"SET", "k", "v", "EX", "100"}), "+OK\r\n");
  EXPECT_EQ(h_.Cmd({"TTL", "k"}), ":100\r\n");
  h_.clock().AdvanceSeconds(50);
  EXPECT_EQ(h_.Cmd({"TTL", "k"}), ":50\r\n");
  h_.clock().AdvanceSeconds(51);
  EXPECT_EQ(h_.Cmd({"GET", "k"}), "$-1\r\n");
  EXPECT_EQ(h_.Cmd({"TTL", "k"}), ":-2\r\n");
  EXPECT_EQ(h_.Cmd({"SET", "p", "v"}), "+OK\r\n");
  EXPECT_EQ(h_.Cmd({"TTL", "p"}), ":-1\r\n");
  EXPECT_EQ(h_.Cmd({"EXPIRE", "p", "10", "XX"}), ":0\r\n");
  EXPECT_EQ(h_.Cmd({"EXPIRE", "p", "10", "NX"}), ":1\r\n");
  EXPECT_EQ(h_.Cmd({"EXPIRE", "p", "5", "GT"}), ":0\r\n");
  EXPECT_EQ(h_.Cmd({"EXPIRE", "p", "5", "LT"}), ":1\r\n");
  EXPECT_EQ(h_.Cmd({"PERSIST", "p"}), ":1\r\n");
  EXPECT_EQ(h_.Cmd({"EXPIRE", "p", "-1"}), ":1\r\n");
  EXPECT_EQ(h_.Cmd({"EXISTS", "p"}), ":0\r\n");
}

TEST_F(SessionTest, IncrFamily) {
  EXPECT_EQ(h_.Cmd({"INCR", "n"}), ":1\r\n");
  EXPECT_EQ(h_.Cmd({"INCRBY", "n", "10"}), ":11\r\n");
  EXPECT_EQ(h_.Cmd({"DECRBY", "n", "20"}), ":-9\r\n");
  EXPECT_EQ(h_.Cmd({"SET", "s", "abc"}), "+OK\r\n");
  EXPECT_EQ(h_.Cmd({"INCR", "s"}), "-ERR value is not an integer or out of range\r\n");
  EXPECT_EQ(h_.Cmd({"SET", "m", "9223372036854775807"}), "+OK\r\n");
  EXPECT_EQ(h_.Cmd({"INCR", "m"}), "-ERR increment or decrement would overflow\r\n");
  EXPECT_EQ(h_.Cmd({"INCRBYFLOAT", "f", "10.5"}), "$4\r\n10.5\r\n");
  EXPECT_EQ(h_.Cmd({"INCRBYFLOAT", "f", "0.1"}), "$4\r\n10.6\r\n");
}

TEST_F(SessionTest, MultiExecQueuesAndAborts) {
  EXPECT_EQ(h_.Cmd({"MULTI"}), "+OK\r\n");
  EXPECT_EQ(h_.Cmd({"SET", "a", "1"}), "+QUEUED\r\n");
  EXPECT_EQ(h_.Cmd({"INCR", "a"}), "+QUEUED\r\n");
  EXPECT_EQ(h_.Cmd({"EXEC"}), "*2\r\n+OK\r\n:2\r\n");
  EXPECT_EQ(h_.Cmd({"MULTI"}), "+OK\r\n");
  EXPECT_EQ(h_.Cmd({"GET"}), "-ERR wrong number of arguments for 'get' command\r\n");
  EXPECT_EQ(h_.Cmd({"EXEC"}), "-EXECABORT Transaction discarded because of previous errors.\r\n");
  EXPECT_EQ(h_.Cmd({"EXEC"}), "-ERR EXEC without MULTI\r\n");
}

TEST_F(SessionTest, WatchAbortsWhenAnotherConnectionWrites) {
  auto other = h_.NewConn();
  EXPECT_EQ(h_.Cmd({"SET", "w", "1"}), "+OK\r\n");
  EXPECT_EQ(h_.Cmd({"WATCH", "w"}), "+OK\r\n");
  EXPECT_EQ(h_.SendOn(other.get(), "SET w 2\r\n"), "+OK\r\n");
  EXPECT_EQ(h_.Cmd({"MULTI"}), "+OK\r\n");
  EXPECT_EQ(h_.Cmd({"SET", "w", "3"}), "+QUEUED\r\n");
  EXPECT_EQ(h_.Cmd({"EXEC"}), "*-1\r\n");
  EXPECT_EQ(h_.Cmd({"GET", "w"}), "$1\r\n2\r\n");
  // Unchanged watch: EXEC runs.
  EXPECT_EQ(h_.Cmd({"WATCH", "w"}), "+OK\r\n");
  EXPECT_EQ(h_.Cmd({"MULTI"}), "+OK\r\n");
  EXPECT_EQ(h_.Cmd({"SET", "w", "3"}), "+QUEUED\r\n");
  EXPECT_EQ(h_.Cmd({"EXEC"}), "*1\r\n+OK\r\n");
}

TEST_F(SessionTest, WatchAbortsOnExpiry) {
  EXPECT_EQ(h_.Cmd({"SET", "w", "1", "EX", "1"}), "+OK\r\n");
  EXPECT_EQ(h_.Cmd({"WATCH", "w"}), "+OK\r\n");
  h_.clock().AdvanceSeconds(2);
  EXPECT_EQ(h_.Cmd({"MULTI"}), "+OK\r\n");
  EXPECT_EQ(h_.Cmd({"PING"}), "+QUEUED\r\n");
  EXPECT_EQ(h_.Cmd({"EXEC"}), "*-1\r\n");
}

TEST_F(SessionTest, DatabasesAreSeparate) {
  EXPECT_EQ(h_.Cmd({"SET", "k", "zero"}), "+OK\r\n");
  EXPECT_EQ(h_.Cmd({"SELECT", "1"}), "+OK\r\n");
  EXPECT_EQ(h_.Cmd({"GET", "k"}), "$-1\r\n");
  EXPECT_EQ(h_.Cmd({"SET", "k", "one"}), "+OK\r\n");
  EXPECT_EQ(h_.Cmd({"DBSIZE"}), ":1\r\n");
  EXPECT_EQ(h_.Cmd({"SELECT", "0"}), "+OK\r\n");
  EXPECT_EQ(h_.Cmd({"GET", "k"}), "$4\r\nzero\r\n");
  EXPECT_EQ(h_.Cmd({"SELECT", "16"}), "-ERR DB index is out of range\r\n");
  EXPECT_EQ(h_.Cmd({"MOVE", "k", "1"}), ":0\r\n");
  EXPECT_EQ(h_.Cmd({"SWAPDB", "0", "1"}), "+OK\r\n");
  EXPECT_EQ(h_.Cmd({"GET", "k"}), "$3\r\none\r\n");
  EXPECT_EQ(h_.Cmd({"FLUSHDB"}), "+OK\r\n");
  EXPECT_EQ(h_.Cmd({"DBSIZE"}), ":0\r\n");
  EXPECT_EQ(h_.Cmd({"SELECT", "1"}), "+OK\r\n");
  EXPECT_EQ(h_.Cmd({"GET", "k"}), "$4\r\nzero\r\n");
}

TEST_F(SessionTest, HelloSwitchesToResp3) {
  std::string r = h_.Cmd({"HELLO", "3"});
  EXPECT_EQ(r.substr(0, 3), "%7\r");
  EXPECT_EQ(h_.Cmd({"GET", "nope"}), "_\r\n");
  EXPECT_EQ(h_.Cmd({"HELLO", "4"}), "-NOPROTO unsupported protocol version\r\n");
  EXPECT_EQ(h_.Cmd({"RESET"}), "+RESET\r\n");
  EXPECT_EQ(h_.Cmd({"GET", "nope"}), "$-1\r\n");
}

TEST_F(SessionTest, ProtocolErrorCloses) {
  EXPECT_EQ(h_.Send("*1\r\nx\r\n"), "-ERR Protocol error: expected '$', got 'x'\r\n");
  EXPECT_TRUE(h_.handler()->WantsClose());
}

TEST_F(SessionTest, CollectionsRoundTrip) {
  EXPECT_EQ(h_.Cmd({"RPUSH", "l", "a", "b"}), ":2\r\n");
  EXPECT_EQ(h_.Cmd({"LRANGE", "l", "0", "-1"}), "*2\r\n$1\r\na\r\n$1\r\nb\r\n");
  EXPECT_EQ(h_.Cmd({"HSET", "h", "f", "v", "g", "w"}), ":2\r\n");
  EXPECT_EQ(h_.Cmd({"HGETALL", "h"}), "*4\r\n$1\r\nf\r\n$1\r\nv\r\n$1\r\ng\r\n$1\r\nw\r\n");
  EXPECT_EQ(h_.Cmd({"SADD", "s", "3", "1", "2"}), ":3\r\n");
  EXPECT_EQ(h_.Cmd({"SMEMBERS", "s"}), "*3\r\n$1\r\n1\r\n$1\r\n2\r\n$1\r\n3\r\n");
  EXPECT_EQ(h_.Cmd({"OBJECT", "ENCODING", "s"}), "$6\r\nintset\r\n");
  EXPECT_EQ(h_.Cmd({"ZADD", "z", "2", "b", "1.5", "a"}), ":2\r\n");
  EXPECT_EQ(h_.Cmd({"ZRANGE", "z", "0", "-1", "WITHSCORES"}),
            "*4\r\n$1\r\na\r\n$3\r\n1.5\r\n$1\r\nb\r\n$1\r\n2\r\n");
  EXPECT_EQ(h_.Cmd({"GET", "l"}),
            "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n");
  EXPECT_EQ(h_.Cmd({"TYPE", "z"}), "+zset\r\n");
  EXPECT_EQ(h_.Cmd({"LPOP", "l", "5"}), "*2\r\n$1\r\na\r\n$1\r\nb\r\n");
  EXPECT_EQ(h_.Cmd({"EXISTS", "l"}), ":0\r\n");
}

TEST_F(SessionTest, RenameAndCopyCloneCollections) {
  EXPECT_EQ(h_.Cmd({"SADD", "s", "x"}), ":1\r\n");
  EXPECT_EQ(h_.Cmd({"COPY", "s", "c"}), ":1\r\n");
  EXPECT_EQ(h_.Cmd({"SADD", "c", "y"}), ":1\r\n");
  EXPECT_EQ(h_.Cmd({"SCARD", "s"}), ":1\r\n");
  EXPECT_EQ(h_.Cmd({"RENAME", "c", "d"}), "+OK\r\n");
  EXPECT_EQ(h_.Cmd({"SCARD", "d"}), ":2\r\n");
  EXPECT_EQ(h_.Cmd({"EXISTS", "c"}), ":0\r\n");
  EXPECT_EQ(h_.Cmd({"MOVE", "d", "2"}), ":1\r\n");
  EXPECT_EQ(h_.Cmd({"SELECT", "2"}), "+OK\r\n");
  EXPECT_EQ(h_.Cmd({"SCARD", "d"}), ":2\r\n");
}

// The fake engine CHECKs the locking contract, so these would abort if EXEC
// ran a keyspace walk under its lock set or a command outside one.
TEST_F(SessionTest, ExecMixesKeyedAndKeyspaceCommands) {
  EXPECT_EQ(h_.Cmd({"MULTI"}), "+OK\r\n");
  EXPECT_EQ(h_.Cmd({"SET", "a", "1"}), "+QUEUED\r\n");
  EXPECT_EQ(h_.Cmd({"DBSIZE"}), "+QUEUED\r\n");
  EXPECT_EQ(h_.Cmd({"FLUSHDB"}), "+QUEUED\r\n");
  EXPECT_EQ(h_.Cmd({"SET", "b", "2"}), "+QUEUED\r\n");
  EXPECT_EQ(h_.Cmd({"COPY", "b", "c", "DB", "1"}), "+QUEUED\r\n");
  EXPECT_EQ(h_.Cmd({"SELECT", "1"}), "+QUEUED\r\n");
  EXPECT_EQ(h_.Cmd({"GET", "c"}), "+QUEUED\r\n");
  EXPECT_EQ(h_.Cmd({"KEYS", "*"}), "+QUEUED\r\n");
  EXPECT_EQ(h_.Cmd({"EXEC"}),
            "*8\r\n+OK\r\n:1\r\n+OK\r\n+OK\r\n:1\r\n+OK\r\n$1\r\n2\r\n"
            "*1\r\n$1\r\nc\r\n");
}

TEST_F(SessionTest, PipelinedRequestsInOneRead) {
  EXPECT_EQ(h_.Send("SET a 1\r\nINCR a\r\n*2\r\n$3\r\nGET\r\n$1\r\na\r\n"),
            "+OK\r\n:2\r\n$1\r\n2\r\n");
}

TEST_F(SessionTest, LargeValueArrivesInPieces) {
  std::string v(200000, 'v');
  std::string req = "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$200000\r\n" + v + "\r\n";
  EXPECT_EQ(h_.Send(req.substr(0, 100)), "");
  EXPECT_EQ(h_.handler()->BytesWanted(), req.size());
  EXPECT_EQ(h_.Send(req.substr(100, 150000)), "");
  EXPECT_EQ(h_.Send(req.substr(150100)), "+OK\r\n");
  EXPECT_EQ(h_.Cmd({"STRLEN", "k"}), ":200000\r\n");
}

TEST_F(SessionTest, ExecArityAbortsLikeRedis) {
  EXPECT_EQ(h_.Cmd({"EXEC", "x"}),
            "-EXECABORT Transaction discarded because of: wrong number of arguments for 'exec' "
            "command\r\n");
}

TEST_F(SessionTest, Resp3RepliesForCollections) {
  EXPECT_EQ(h_.Cmd({"HELLO", "3"}).substr(0, 2), "%7");
  EXPECT_EQ(h_.Cmd({"HSET", "h", "f", "v"}), ":1\r\n");
  EXPECT_EQ(h_.Cmd({"HGETALL", "h"}), "%1\r\n$1\r\nf\r\n$1\r\nv\r\n");
  EXPECT_EQ(h_.Cmd({"ZADD", "z", "1", "a"}), ":1\r\n");
  EXPECT_EQ(h_.Cmd({"ZSCORE", "z", "a"}), ",1\r\n");
  EXPECT_EQ(h_.Cmd({"ZPOPMIN", "z", "1"}), "*1\r\n*2\r\n$1\r\na\r\n,1\r\n");
  EXPECT_EQ(h_.Cmd({"SISMEMBER", "nope", "x"}), ":0\r\n");
  EXPECT_EQ(h_.Cmd({"SMEMBERS", "nope"}), "~0\r\n");
}

// Small collections live as bytes in item memory and move to a HeapValue
// past the thresholds; contents must survive both forms and the move.
TEST_F(SessionTest, CompactCollectionsMoveToHeapPastThresholds) {
  for (int i = 0; i < 200; ++i) {
    std::string m = std::to_string(i);
    ASSERT_EQ(h_.Cmd({"ZADD", "z", m, "m" + m}), ":1\r\n");
    ASSERT_EQ(h_.Cmd({"SADD", "s", m}), ":1\r\n");
    ASSERT_EQ(h_.Cmd({"RPUSH", "l", m}), ":" + std::to_string(i + 1) + "\r\n");
    if (i == 100) {
      EXPECT_EQ(h_.Cmd({"OBJECT", "ENCODING", "z"}), "$8\r\nlistpack\r\n");
      EXPECT_EQ(h_.Cmd({"OBJECT", "ENCODING", "s"}), "$6\r\nintset\r\n");
    }
  }
  EXPECT_EQ(h_.Cmd({"OBJECT", "ENCODING", "z"}), "$8\r\nskiplist\r\n");
  EXPECT_EQ(h_.Cmd({"ZCARD", "z"}), ":200\r\n");
  EXPECT_EQ(h_.Cmd({"ZSCORE", "z", "m150"}), "$3\r\n150\r\n");
  EXPECT_EQ(h_.Cmd({"LINDEX", "l", "150"}), "$3\r\n150\r\n");
  EXPECT_EQ(h_.Cmd({"SADD", "s", "x"}), ":1\r\n");
  EXPECT_EQ(h_.Cmd({"OBJECT", "ENCODING", "s"}), "$9\r\nhashtable\r\n");
  EXPECT_EQ(h_.Cmd({"SCARD", "s"}), ":201\r\n");
  EXPECT_EQ(h_.Cmd({"HSET", "h", "f", std::string(100, 'x')}), ":1\r\n");
  EXPECT_EQ(h_.Cmd({"OBJECT", "ENCODING", "h"}), "$9\r\nhashtable\r\n");
  EXPECT_EQ(h_.Cmd({"HSTRLEN", "h", "f"}), ":100\r\n");
}

TEST_F(SessionTest, CompactCollectionsKeepTtlAndTypeOnCopy) {
  EXPECT_EQ(h_.Cmd({"HSET", "h", "a", "1"}), ":1\r\n");
  EXPECT_EQ(h_.Cmd({"EXPIRE", "h", "100"}), ":1\r\n");
  EXPECT_EQ(h_.Cmd({"HSET", "h", "b", "2"}), ":1\r\n");
  EXPECT_EQ(h_.Cmd({"TTL", "h"}), ":100\r\n");
  EXPECT_EQ(h_.Cmd({"COPY", "h", "h2"}), ":1\r\n");
  EXPECT_EQ(h_.Cmd({"TYPE", "h2"}), "+hash\r\n");
  EXPECT_EQ(h_.Cmd({"HGET", "h2", "b"}), "$1\r\n2\r\n");
  EXPECT_EQ(h_.Cmd({"SMOVE", "nope", "x", "m"}), ":0\r\n");
  EXPECT_EQ(h_.Cmd({"SADD", "a", "1", "2"}), ":2\r\n");
  EXPECT_EQ(h_.Cmd({"SINTERSTORE", "a", "a", "a"}), ":2\r\n");
  EXPECT_EQ(h_.Cmd({"SMEMBERS", "a"}), "*2\r\n$1\r\n1\r\n$1\r\n2\r\n");
}

TEST_F(SessionTest, WatchSeesCompactCollectionChange) {
  auto other = h_.NewConn();
  EXPECT_EQ(h_.Cmd({"RPUSH", "l", "a"}), ":1\r\n");
  EXPECT_EQ(h_.Cmd({"WATCH", "l"}), "+OK\r\n");
  EXPECT_EQ(h_.SendOn(other.get(), "RPUSH l b\r\n"), ":2\r\n");
  EXPECT_EQ(h_.Cmd({"MULTI"}), "+OK\r\n");
  EXPECT_EQ(h_.Cmd({"LLEN", "l"}), "+QUEUED\r\n");
  EXPECT_EQ(h_.Cmd({"EXEC"}), "*-1\r\n");
}

TEST_F(SessionTest, WatchSeesInPlaceHeapCollectionChange) {
  auto other = h_.NewConn();
  for (int i = 0; i < 300; ++i)
    ASSERT_EQ(h_.Cmd({"SADD", "big", "m" + std::to_string(i)}), ":1\r\n");
  EXPECT_EQ(h_.Cmd({"OBJECT", "ENCODING", "big"}), "$9\r\nhashtable\r\n");
  EXPECT_EQ(h_.Cmd({"WATCH", "big"}), "+OK\r\n");
  EXPECT_EQ(h_.SendOn(other.get(), "SADD big extra\r\n"), ":1\r\n");
  EXPECT_EQ(h_.Cmd({"MULTI"}), "+OK\r\n");
  EXPECT_EQ(h_.Cmd({"SCARD", "big"}), "+QUEUED\r\n");
  EXPECT_EQ(h_.Cmd({"EXEC"}), "*-1\r\n");
  EXPECT_EQ(h_.Cmd({"WATCH", "big"}), "+OK\r\n");
  EXPECT_EQ(h_.Cmd({"MULTI"}), "+OK\r\n");
  EXPECT_EQ(h_.Cmd({"SCARD", "big"}), "+QUEUED\r\n");
  EXPECT_EQ(h_.Cmd({"EXEC"}), "*1\r\n:301\r\n");
}

}  // namespace
}  // namespace trove::resp

// A client that ran QUIT is gone for tracking redirects at once, not when
// its worker later closes the socket: its +OK may reach the client first.
TEST(SessionQuit, AQuitClientIsNoRedirectTarget) {
  trove::resp::SessionHarness h;  // the main connection is client 1
  auto other = h.NewConn();
  EXPECT_EQ(h.SendOn(other.get(), "*5\r\n$6\r\nCLIENT\r\n$8\r\nTRACKING\r\n$2\r\non\r\n$8\r\n"
                                   "REDIRECT\r\n$1\r\n1\r\n"),
            "+OK\r\n");
  EXPECT_EQ(h.SendOn(other.get(), "*3\r\n$6\r\nCLIENT\r\n$8\r\nTRACKING\r\n$3\r\noff\r\n"),
            "+OK\r\n");
  EXPECT_EQ(h.Cmd({"QUIT"}), "+OK\r\n");
  EXPECT_TRUE(h.handler()->WantsClose());
  EXPECT_EQ(h.SendOn(other.get(), "*5\r\n$6\r\nCLIENT\r\n$8\r\nTRACKING\r\n$2\r\non\r\n$8\r\n"
                                   "REDIRECT\r\n$1\r\n1\r\n"),
            "-ERR The client ID you want redirect to does not exist\r\n");
}
