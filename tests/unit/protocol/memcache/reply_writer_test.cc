// Tests for ReplyWriter: exact reply lines, CR/LF stripping of echoed text,
// and noreply (quiet) silencing.
#include "protocol/memcache/reply_writer.h"

#include <gtest/gtest.h>
#include <string>

namespace trove::memcache {
namespace {

TEST(ReplyWriterTest, WritesReplyLines) {
  net::OutputBuffer out;
  ReplyWriter w(&out);
  w.Word("STORED");
  w.Error();
  w.ClientError("bad data chunk");
  w.ServerError("out of memory storing object");
  w.Status("ERROR: shutdown not enabled");
  w.Stat("curr_items", uint64_t{12});
  w.Stat("version", "1.6");
  w.Number(18446744073709551615u);
  EXPECT_EQ(out.ToString(),
            "STORED\r\nERROR\r\nCLIENT_ERROR bad data chunk\r\n"
            "SERVER_ERROR out of memory storing object\r\nERROR: shutdown not enabled\r\n"
            "STAT curr_items 12\r\nSTAT version 1.6\r\n18446744073709551615\r\n");
}

TEST(ReplyWriterTest, ErrorTextNeverCarriesLineBreaks) {
  net::OutputBuffer out;
  ReplyWriter w(&out);
  w.ClientError("evil\r\nSTORED");
  w.ServerError("x\ny");
  w.Status("BUSY\r\n");
  w.Stat("a\nb", "c\rd");
  EXPECT_EQ(out.ToString(),
            "CLIENT_ERROR evil  STORED\r\nSERVER_ERROR x y\r\nBUSY  \r\nSTAT a b c d\r\n");
}

TEST(ReplyWriterTest, QuietDropsEverything) {
  net::OutputBuffer out;
  ReplyWriter w(&out);
  w.set_quiet(true);
  w.Word("STORED");
  w.Error();
  w.ClientError("bad command line format");
  w.Number(5);
  w.Trusted("END\r\n");
  EXPECT_TRUE(out.empty());
  w.set_quiet(false);
  w.Word("OK");
  EXPECT_EQ(out.ToString(), "OK\r\n");
}

TEST(ReplyWriterTest, LongErrorDetailIsCapped) {
  net::OutputBuffer out;
  ReplyWriter w(&out);
  w.ClientError(std::string(5000, 'x'));
  EXPECT_EQ(out.ToString(), "CLIENT_ERROR " + std::string(1024, 'x') + "\r\n");
}

}  // namespace
}  // namespace trove::memcache
