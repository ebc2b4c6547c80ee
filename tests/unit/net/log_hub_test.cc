// LogHub: entries from many threads reach a watching connection once each,
// each thread's in order, with memcached's and MONITOR's line formats; a watcher
// that does not read loses lines (bounded) and is told how many.
#include "net/log_hub.h"

#include <gtest/gtest.h>

#include <memory>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "net/net_server.h"
#include "net/socket.h"
#include "tests/unit/net/test_support.h"

namespace trove::net {
namespace {

using testing::Client;
using testing::LineFactory;

class LogHubTest : public ::testing::Test {
 protected:
  void Start(LogHubOptions lo = {}) {
    factory_ = std::make_unique<LineFactory>(&server_ptr_, 20);
    NetServerOptions opts;
    opts.num_workers = 2;
    server_ = std::make_unique<NetServer>(opts);
    server_ptr_ = server_.get();
    hub_ = std::make_unique<LogHub>(&server_->group(), SystemClock::Default(), lo);
    auto ls = ListenTcp("127.0.0.1", 0, 128);
    ASSERT_TRUE(ls.ok());
    port_ = ls.value()[0].port;
    server_->AddListeners(std::move(ls.value()), factory_.get(), "ERROR\r\n");
    ASSERT_TRUE(server_->Start().ok());
    hub_->Start();
  }
  void TearDown() override {
    if (hub_) hub_->Stop();
    if (server_) server_->Stop();
  }
  uint64_t IdOf(Client& c) {
    c.Send("id\r\n");
    std::string line = c.ReadLine();
    return std::stoull(line.substr(0, line.size() - 2));
  }
  // Reads lines ending in "\n" until `n` have arrived or the timeout.
  static std::vector<std::string> ReadLines(Client& c, size_t n) {
    std::vector<std::string> out;
    std::string buf;
    while (out.size() < n) {
      std::string chunk = c.ReadN(1);
      if (chunk.empty()) break;
      buf += chunk;
      if (chunk == "\n") {
        out.push_back(buf);
        buf.clear();
      }
    }
    return out;
  }

  std::unique_ptr<LineFactory> factory_;
  std::unique_ptr<NetServer> server_;
  NetServer* server_ptr_ = nullptr;
  std::unique_ptr<LogHub> hub_;
  int port_ = 0;
};

TEST_F(LogHubTest, NothingIsWrittenWhileNobodyWatches) {
  Start();
  EXPECT_FALSE(hub_->Wants(kLogFetchers));
  hub_->Log(kLogFetchers, "type=item_get key=a");
  EXPECT_EQ(hub_->Stats().worker_written, 0u);
}

TEST_F(LogHubTest, EntriesFromManyThreadsArriveOnceInProducerOrder) {
  Start();
  Client c = Client::Tcp(port_);
  const uint64_t id = IdOf(c);
  uint64_t wid = 0;
  ASSERT_EQ(hub_->AddWatcher(id, kLogMutations, &wid), LogHub::AddResult::kOk);
  EXPECT_TRUE(hub_->Wants(kLogMutations));
  EXPECT_FALSE(hub_->Wants(kLogFetchers));
  constexpr int kThreads = 4, kEach = 200;
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t) {
    ts.emplace_back([this, t] {
      for (int i = 0; i < kEach; ++i) {
        hub_->Log(kLogMutations, "t" + std::to_string(t) + " i" + std::to_string(i));
        hub_->Log(kLogFetchers, "not watched");
      }
    });
  }
  for (auto& t : ts) t.join();
  std::vector<std::string> lines = ReadLines(c, kThreads * kEach);
  ASSERT_EQ(lines.size(), static_cast<size_t>(kThreads * kEach));
  const std::regex re(R"(^ts=\d+\.\d+ gid=(\d+) t(\d) i(\d+)\n$)");
  std::set<std::string> seen;
  std::vector<uint64_t> last_gid(kThreads, 0);
  std::vector<int> next(kThreads, 0);
  for (const std::string& l : lines) {
    std::smatch m;
    ASSERT_TRUE(std::regex_match(l, m, re)) << l;
    // Each producer's gids rise; across producers the collector merges by
    // gid within a pass only (a producer preempted between taking its gid
    // and writing may land in the next pass).
    const uint64_t gid = std::stoull(m[1]);
    const int th = std::stoi(m[2]);
    EXPECT_GT(gid, last_gid[th]);
    last_gid[th] = gid;
    const int t = std::stoi(m[2]);
    EXPECT_EQ(std::stoi(m[3]), next[t]++) << "each thread's order kept";
    EXPECT_TRUE(seen.insert(l).second);
  }
  hub_->RemoveWatcher(wid);
  EXPECT_FALSE(hub_->Wants(kLogMutations));
  EXPECT_EQ(hub_->Stats().watchers, 0u);
}

TEST_F(LogHubTest, MonitorLinesUseRedisFormat) {
  Start();
  Client c = Client::Tcp(port_);
  uint64_t wid = 0;
  ASSERT_EQ(hub_->AddWatcher(IdOf(c), kLogMonitor, &wid), LogHub::AddResult::kOk);
  hub_->Log(kLogMonitor, "[0 127.0.0.1:1] \"PING\"");
  std::string line = c.ReadLine();
  EXPECT_TRUE(std::regex_match(line, std::regex(R"(^\+\d+\.\d{6} \[0 127\.0\.0\.1:1\] "PING"\r\n$)")))
      << line;
  EXPECT_EQ(hub_->Stats().monitors, 1u);
}

TEST_F(LogHubTest, WatcherLimitIsMemcachedsTwenty) {
  Start();
  std::vector<uint64_t> ids;
  for (int i = 0; i < 20; ++i) {
    uint64_t w = 0;
    ASSERT_EQ(hub_->AddWatcher(1000 + i, kLogFetchers, &w), LogHub::AddResult::kOk);
    ids.push_back(w);
  }
  uint64_t w = 0;
  EXPECT_EQ(hub_->AddWatcher(2000, kLogFetchers, &w), LogHub::AddResult::kTooMany);
  EXPECT_EQ(hub_->AddWatcher(2001, kLogMonitor, &w), LogHub::AddResult::kOk);  // its own limit
  hub_->RemoveWatcher(ids[0]);
  EXPECT_EQ(hub_->AddWatcher(2002, kLogFetchers, &w), LogHub::AddResult::kOk);
}

TEST_F(LogHubTest, FullRingDropsAndCounts) {
  LogHubOptions lo;
  lo.worker_buf = 4096;
  Start(lo);
  uint64_t w = 0;
  // A watcher on a connection id nobody has: lines are formatted and dropped.
  ASSERT_EQ(hub_->AddWatcher(999999, kLogFetchers, &w), LogHub::AddResult::kOk);
  hub_->Stop();  // no collector: the ring fills
  const std::string body(200, 'x');
  for (int i = 0; i < 100; ++i) hub_->Log(kLogFetchers, body);
  const LogHubStats s = hub_->Stats();
  EXPECT_GT(s.worker_dropped, 0u);
  EXPECT_GT(s.worker_written, 0u);
  EXPECT_EQ(s.worker_dropped + s.worker_written, 100u);
  EXPECT_EQ(hub_->CollectOnce(), s.worker_written);
  EXPECT_EQ(hub_->CollectOnce(), 0u);
}

TEST_F(LogHubTest, SlowWatcherSkipsAndIsTold) {
  LogHubOptions lo;
  lo.watcher_buf = 8192;
  Start(lo);
  Client c = Client::Tcp(port_, /*rcvbuf=*/4096);
  uint64_t wid = 0;
  ASSERT_EQ(hub_->AddWatcher(IdOf(c), kLogFetchers, &wid), LogHub::AddResult::kOk);
  const std::string body(180, 'y');
  for (int i = 0; i < 20000; ++i) hub_->Log(kLogFetchers, body);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_GT(hub_->Stats().watcher_skipped, 0u);
  // Read everything queued, then one more line: "skipped=N" comes first.
  bool told = false;
  std::string buf;
  for (int i = 0; i < 100000 && !told; ++i) {
    if (i % 50 == 0) hub_->Log(kLogFetchers, "after");
    std::vector<std::string> l = ReadLines(c, 1);
    if (l.empty()) break;
    told = l[0].rfind("skipped=", 0) == 0;
  }
  EXPECT_TRUE(told);
}

}  // namespace
}  // namespace trove::net
