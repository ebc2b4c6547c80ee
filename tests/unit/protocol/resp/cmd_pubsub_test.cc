// Pub/sub commands through a Session: confirmations under CLIENT REPLY
// OFF|SKIP and the RESP2 subscribed-mode restriction. Test thread only.
#include <gtest/gtest.h>
#include <string>

#include "session_test_util.h"

namespace trove::resp {
namespace {

class CmdPubSubTest : public ::testing::Test {
 protected:
  SessionHarness h_;
};

std::string Restricted(const std::string& name) {
  return "-ERR Can't execute '" + name +
         "': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this "
         "context\r\n";
}

TEST_F(CmdPubSubTest, ConfirmationsArriveUnderClientReplyOff) {
  EXPECT_EQ(h_.Cmd({"CLIENT", "REPLY", "OFF"}), "");
  EXPECT_EQ(h_.Cmd({"SUBSCRIBE", "a", "b"}),
            "*3\r\n$9\r\nsubscribe\r\n$1\r\na\r\n:1\r\n*3\r\n$9\r\nsubscribe\r\n$1\r\nb\r\n:2\r\n");
  EXPECT_EQ(h_.Cmd({"PSUBSCRIBE", "p*"}), "*3\r\n$10\r\npsubscribe\r\n$2\r\np*\r\n:3\r\n");
  EXPECT_EQ(h_.Cmd({"PING"}), "");  // an ordinary reply: still dropped
  EXPECT_EQ(h_.Cmd({"UNSUBSCRIBE", "a"}), "*3\r\n$11\r\nunsubscribe\r\n$1\r\na\r\n:2\r\n");
  EXPECT_EQ(h_.Cmd({"PUNSUBSCRIBE"}), "*3\r\n$12\r\npunsubscribe\r\n$2\r\np*\r\n:1\r\n");
  EXPECT_EQ(h_.Cmd({"SUNSUBSCRIBE"}), "*3\r\n$12\r\nsunsubscribe\r\n$-1\r\n:0\r\n");
  EXPECT_EQ(h_.Cmd({"UNSUBSCRIBE"}), "*3\r\n$11\r\nunsubscribe\r\n$1\r\nb\r\n:0\r\n");
  EXPECT_EQ(h_.Cmd({"CLIENT", "REPLY", "ON"}), "+OK\r\n");  // out of pub/sub mode again
}

TEST_F(CmdPubSubTest, ConfirmationsArriveUnderClientReplySkipInResp3) {
  EXPECT_EQ(h_.Cmd({"HELLO", "3"}).substr(0, 1), "%");
  EXPECT_EQ(h_.Send("CLIENT REPLY SKIP\r\nSSUBSCRIBE s\r\nPING\r\n"),
            ">3\r\n$10\r\nssubscribe\r\n$1\r\ns\r\n:1\r\n+PONG\r\n");
}

TEST_F(CmdPubSubTest, Resp2RestrictionNamesTheFullCommandName) {
  EXPECT_EQ(h_.Cmd({"SUBSCRIBE", "a"}), "*3\r\n$9\r\nsubscribe\r\n$1\r\na\r\n:1\r\n");
  EXPECT_EQ(h_.Cmd({"PUBSUB", "NUMSUB", "a"}), Restricted("pubsub|numsub"));
  EXPECT_EQ(h_.Cmd({"client", "list"}), Restricted("client|list"));
  EXPECT_EQ(h_.Cmd({"GET", "a"}), Restricted("get"));
  // Rejected before the restriction, as by Redis's command lookup.
  EXPECT_EQ(h_.Cmd({"PUBSUB", "NOPE"}), "-ERR unknown subcommand 'NOPE'. Try PUBSUB HELP.\r\n");
  EXPECT_EQ(h_.Cmd({"PUBSUB"}), "-ERR wrong number of arguments for 'pubsub' command\r\n");
  EXPECT_EQ(h_.Cmd({"PING"}), "*2\r\n$4\r\npong\r\n$0\r\n\r\n");
}

}  // namespace
}  // namespace trove::resp
