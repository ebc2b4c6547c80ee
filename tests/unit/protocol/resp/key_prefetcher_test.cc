// KeyPrefetcher's look-ahead scan: it must find each pipelined request's end
// and argv[1], encode the key for the selected database, and give up on
// anything that is not a complete multibulk request.
#include "protocol/resp/core/key_prefetcher.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
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

}  // namespace
}  // namespace trove::resp

namespace trove::engine {
extern std::vector<uint64_t> g_fake_prefetched_keys;  // fake_engine.cc
extern std::vector<uint64_t> g_fake_prefetched_items;
}  // namespace trove::engine

namespace trove::resp {
namespace {

// The window over a pipeline of 12 GETs, driven as Session::OnData drives
// it: each later request's key is prefetched once and its item once, never
// the running request's, and always before that request runs.
TEST(KeyPrefetcherTest, WindowPrefetchesEachLaterRequestOnceAndInTime) {
  ManualClock clock;
  engine::EngineOptions o;
  o.clock = &clock;
  std::unique_ptr<Engine> e = std::move(Engine::Create(o).value());
  std::string in;
  std::vector<size_t> ends;
  std::vector<uint64_t> hashes;
  for (int i = 0; i < 12; ++i) {
    std::string k = "k" + std::to_string(i);
    in += "*2\r\n$3\r\nGET\r\n$" + std::to_string(k.size()) + "\r\n" + k + "\r\n";
    ends.push_back(in.size());
    hashes.push_back(Engine::KeyHash(k));
  }
  engine::g_fake_prefetched_keys.clear();
  engine::g_fake_prefetched_items.clear();
  const int owner = 0;  // the window is the thread's; calls name their connection
  KeyPrefetcher::Reset(&owner);
  for (size_t i = 0; i < ends.size(); ++i) {
    KeyPrefetcher::Before(&owner, e.get(), 0, in.data(), in.size(), ends[i]);
    // By the time request i+1 runs, its key and item have been asked for.
    if (i + 1 < ends.size()) {
      auto& keys = engine::g_fake_prefetched_keys;
      auto& items = engine::g_fake_prefetched_items;
      EXPECT_NE(std::find(keys.begin(), keys.end(), hashes[i + 1]), keys.end()) << i;
      EXPECT_NE(std::find(items.begin(), items.end(), hashes[i + 1]), items.end()) << i;
    }
  }
  // Requests 1..11 once each, in order; request 0 ran before any look-ahead.
  std::vector<uint64_t> later(hashes.begin() + 1, hashes.end());
  EXPECT_EQ(engine::g_fake_prefetched_keys, later);
  EXPECT_EQ(engine::g_fake_prefetched_items, later);
}

// The window is shared by a worker's connections: a call from another one
// (a connection served nested while a script is busy) restarts it, and the
// first connection's later requests are still each prefetched before they run.
TEST(KeyPrefetcherTest, AnotherConnectionBetweenRequestsRestartsTheWindow) {
  ManualClock clock;
  engine::EngineOptions o;
  o.clock = &clock;
  std::unique_ptr<Engine> e = std::move(Engine::Create(o).value());
  auto pipeline = [](const std::string& prefix, std::vector<size_t>* ends,
                     std::vector<uint64_t>* hashes) {
    std::string in;
    for (int i = 0; i < 12; ++i) {
      std::string k = prefix + std::to_string(i);
      in += "*2\r\n$3\r\nGET\r\n$" + std::to_string(k.size()) + "\r\n" + k + "\r\n";
      ends->push_back(in.size());
      hashes->push_back(Engine::KeyHash(k));
    }
    return in;
  };
  std::vector<size_t> a_ends, b_ends;
  std::vector<uint64_t> a_hashes, b_hashes;
  const std::string a = pipeline("a", &a_ends, &a_hashes);
  const std::string b = pipeline("bb", &b_ends, &b_hashes);
  engine::g_fake_prefetched_keys.clear();
  const int conn_a = 0, conn_b = 0;
  KeyPrefetcher::Reset(&conn_a);
  for (size_t i = 0; i < a_ends.size(); ++i) {
    if (i == 5) {  // b runs two requests of its own in between
      KeyPrefetcher::Reset(&conn_b);
      KeyPrefetcher::Before(&conn_b, e.get(), 0, b.data(), b.size(), b_ends[0]);
      KeyPrefetcher::Before(&conn_b, e.get(), 0, b.data(), b.size(), b_ends[1]);
    }
    KeyPrefetcher::Before(&conn_a, e.get(), 0, a.data(), a.size(), a_ends[i]);
    if (i + 1 < a_ends.size()) {
      auto& keys = engine::g_fake_prefetched_keys;
      EXPECT_NE(std::find(keys.begin(), keys.end(), a_hashes[i + 1]), keys.end()) << i;
    }
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
