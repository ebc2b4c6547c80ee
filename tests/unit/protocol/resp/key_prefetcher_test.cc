// KeyPrefetcher's look-ahead scan: it must find each pipelined request's end
// and argv[1], encode the key for the selected database, and give up on
// anything that is not a complete multibulk request.
#include "protocol/resp/key_prefetcher.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace trove::resp {
namespace {

using engine::Engine;

TEST(KeyPrefetcherTest, ScansPipelinedRequestsInOrder) {
  const std::string in =
      "*2\r\n$3\r\nGET\r\n$3\r\nfoo\r\n"
      "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nv\r\nvv\r\n";  // a value holding CRLF
  size_t end = 0;
  uint64_t hv = 0;
  ASSERT_TRUE(KeyPrefetcher::ScanRequest(0, in.data(), in.size(), 0, &end, &hv));
  EXPECT_EQ(end, 22u);
  EXPECT_EQ(hv, Engine::KeyHash("foo"));
  ASSERT_TRUE(KeyPrefetcher::ScanRequest(0, in.data(), in.size(), end, &end, &hv));
  EXPECT_EQ(end, in.size());
  EXPECT_EQ(hv, Engine::KeyHash("k"));
}

TEST(KeyPrefetcherTest, EncodesTheKeyOfTheSelectedDatabase) {
  const std::string in = "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n";
  size_t end = 0;
  uint64_t hv = 0;
  ASSERT_TRUE(KeyPrefetcher::ScanRequest(5, in.data(), in.size(), 0, &end, &hv));
  EXPECT_EQ(hv, Engine::KeyHash(std::string("\0\5k", 3)));  // as EncodeDbKey
  const std::string nul = std::string("*2\r\n$3\r\nGET\r\n$2\r\n\0x\r\n", 21);
  ASSERT_TRUE(KeyPrefetcher::ScanRequest(0, nul.data(), nul.size(), 0, &end, &hv));
  EXPECT_EQ(hv, Engine::KeyHash(std::string("\0\0\0x", 4)));
}

TEST(KeyPrefetcherTest, GivesUpOnWhatItCannotScan) {
  size_t end = 0;
  uint64_t hv = 0;
  for (const std::string& in : {
           std::string("GET foo\r\n"),                   // inline
           std::string("*1\r\n$4\r\nPING\r\n"),          // no key
           std::string("*2\r\n$3\r\nGET\r\n$3\r\nfo"),   // incomplete
           std::string("*2\r\n$3\r\nGET\r\n$99\r\nfoo\r\n"),
           std::string("*2\r\n$3\r\nGET\r\n$x\r\nfoo\r\n"),
           std::string("*99999999999\r\n"),
           std::string(""),
       }) {
    EXPECT_FALSE(KeyPrefetcher::ScanRequest(0, in.data(), in.size(), 0, &end, &hv)) << in;
  }
}

// Mutated pipelines (run under ASan in CI): the scan never reads past the
// buffer and any end it reports lies inside it, after the start.
TEST(KeyPrefetcherTest, MutatedInputStaysInBounds) {
  const std::string base =
      "*2\r\n$3\r\nGET\r\n$3\r\nfoo\r\n*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nvalue\r\n";
  std::mt19937 rng(7);
  for (int round = 0; round < 20000; ++round) {
    std::string in = base;
    for (int m = 0; m < 1 + static_cast<int>(rng() % 4); ++m) {
      in[rng() % in.size()] = static_cast<char>(rng() % 256);
    }
    in.resize(rng() % (in.size() + 1));
    std::vector<char> buf(in.begin(), in.end());  // exact size: ASan sees any overread
    size_t at = 0, end = 0;
    uint64_t hv = 0;
    for (int db : {0, 3}) {
      at = 0;
      while (KeyPrefetcher::ScanRequest(db, buf.data(), buf.size(), at, &end, &hv)) {
        ASSERT_GT(end, at);
        ASSERT_LE(end, buf.size());
        at = end;
      }
    }
  }
}

}  // namespace
}  // namespace trove::resp
