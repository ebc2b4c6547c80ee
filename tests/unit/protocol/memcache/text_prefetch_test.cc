// ScanTextRequest: the pipelined look-ahead must find each request's end
// (past its data block) and key, and give up on what it cannot scan.
#include "protocol/memcache/text_prefetch.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "engine/engine.h"

namespace trove::memcache {
namespace {

using engine::Engine;

TEST(TextPrefetchTest, WalksTextAndMetaRequestsWithTheirDataBlocks) {
  const std::string in =
      "get a b c\r\n"
      "set k 0 0 5\r\nhe\r\nl\r\n"  // a value holding CRLF
      "mg m v\r\n"
      "ms n 2 T10\r\nxy\r\n"
      "delete d\n";
  struct Want {
    std::string key;
    size_t end;
  };
  const Want want[] = {{"a", 11}, {"k", 11 + 13 + 7}, {"m", 31 + 8}, {"n", 39 + 16},
                       {"d", in.size()}};
  size_t at = 0;
  for (const Want& w : want) {
    size_t end = 0;
    uint64_t hv = 0;
    ASSERT_TRUE(ScanTextRequest(in.data(), in.size(), at, &end, &hv)) << w.key;
    EXPECT_EQ(end, w.end) << w.key;
    EXPECT_EQ(hv, Engine::KeyHash(w.key));
    at = end;
  }
  size_t end = 0;
  uint64_t hv = 0;
  EXPECT_FALSE(ScanTextRequest(in.data(), in.size(), at, &end, &hv));  // the end
}

TEST(TextPrefetchTest, GivesUpOnWhatItCannotScan) {
  size_t end = 0;
  uint64_t hv = 0;
  for (const std::string& in : {
           std::string("get a"),                      // no end of line yet
           std::string("set k 0 0 5\r\nhel"),         // data block incomplete
           std::string("set k 0 0 x\r\nhello\r\n"),   // bad length
           std::string("stats\r\n"),                  // no key
           std::string("version\r\n"),
           std::string("mg a2V5 b v\r\n"),            // base64 key
           std::string("get\r\n"),
           std::string(3000, 'g'),                    // over-long line
       }) {
    EXPECT_FALSE(ScanTextRequest(in.data(), in.size(), 0, &end, &hv)) << in.substr(0, 40);
  }
}

// Mutated pipelines (run under ASan in CI): never past the buffer, and any
// end reported lies inside it, after the start.
TEST(TextPrefetchTest, MutatedInputStaysInBounds) {
  const std::string base = "get a b\r\nset k 0 0 5\r\nhello\r\nms n 2 T1\r\nxy\r\nmg q v\r\n";
  std::mt19937 rng(11);
  for (int round = 0; round < 20000; ++round) {
    std::string in = base;
    for (int m = 0; m < 1 + static_cast<int>(rng() % 4); ++m) {
      in[rng() % in.size()] = static_cast<char>(rng() % 256);
    }
    in.resize(rng() % (in.size() + 1));
    std::vector<char> buf(in.begin(), in.end());  // exact size: ASan sees any overread
    size_t at = 0, end = 0;
    uint64_t hv = 0;
    while (ScanTextRequest(buf.data(), buf.size(), at, &end, &hv)) {
      ASSERT_GT(end, at);
      ASSERT_LE(end, buf.size());
      at = end;
    }
  }
}

}  // namespace
}  // namespace trove::memcache
