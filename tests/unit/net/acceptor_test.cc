// Acceptor on its EventLoop: the connection limit, pausing with clients left
// in the kernel's backlog and re-arming when a slot frees, ids and round-robin.
#include "net/acceptor.h"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "net/socket.h"
#include "net/worker_group.h"
#include "tests/unit/net/test_support.h"

namespace trove::net {
namespace {

using testing::Client;
using testing::LineFactory;

class AcceptorTest : public ::testing::Test {
 protected:
  void Start(int workers, size_t max_connections, bool reject_when_full) {
    factory_ = std::make_unique<LineFactory>(&no_server_, 20);
    for (int i = 0; i < workers; ++i) {
      WorkerOptions wo;
      wo.id = i;
      wo.counters = &counters_;
      wo.factories = {factory_.get()};
      wo.group = &group_;
      wo.release_slot = [this] { acceptor_->ReleaseSlot(); };
      workers_.push_back(std::make_unique<Worker>(wo));
      group_.Add(workers_.back().get());
      ASSERT_TRUE(workers_.back()->Start().ok());
    }
    AcceptorOptions ao;
    ao.max_connections = max_connections;
    ao.reject_when_full = reject_when_full;
    ao.counters = &counters_;
    for (auto& w : workers_) ao.workers.push_back(w.get());
    acceptor_ = std::make_unique<Acceptor>(ao);
    auto ls = ListenTcp("127.0.0.1", 0, 128);
    ASSERT_TRUE(ls.ok()) << ls.status().ToString();
    port_ = ls.value()[0].port;
    for (Listener& l : ls.value()) {
      BoundListener b;
      b.listener = std::move(l);
      b.factory = factory_.get();
      b.reject_reply = "ERROR Too many open connections\r\n";
      acceptor_->AddListener(std::move(b));
    }
    ASSERT_TRUE(acceptor_->Start().ok());
  }
  void TearDown() override {
    if (acceptor_) acceptor_->Stop();
    for (auto& w : workers_) w->Stop();
  }
  template <typename F>
  static bool Eventually(F cond) {
    for (int i = 0; i < 500; ++i) {
      if (cond()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return cond();
  }
  static std::string Echo(Client& c, const std::string& s) {
    if (!c.Send("echo " + s + "\r\n")) return "";
    return c.ReadLine();
  }

  NetServer* no_server_ = nullptr;
  NetCounters counters_;
  WorkerGroup group_;
  std::unique_ptr<LineFactory> factory_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::unique_ptr<Acceptor> acceptor_;
  int port_ = 0;
};

// Full with reject_when_full off: the acceptor stops watching its listener,
// clients wait in the backlog, and each close lets exactly the next one in.
TEST_F(AcceptorTest, FullWithoutRejectReArmsOnEachClose) {
  Start(1, 1, /*reject_when_full=*/false);
  auto a = std::make_unique<Client>(Client::Tcp(port_));
  ASSERT_EQ(Echo(*a, "a"), "a\r\n");
  Client b = Client::Tcp(port_);
  ASSERT_TRUE(b.ok());  // the kernel completes the handshake into the backlog
  ASSERT_TRUE(b.Send("echo b\r\n"));
  ASSERT_TRUE(Eventually([&] { return acceptor_->paused(); }));
  Client c = Client::Tcp(port_);
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(c.Send("echo c\r\n"));
  b.SetTimeoutMs(200);
  c.SetTimeoutMs(200);
  EXPECT_EQ(b.ReadLine(), "");
  EXPECT_EQ(c.ReadLine(), "");
  EXPECT_EQ(counters_.curr_connections.load(), 1u);
  a.reset();  // frees the slot: b (first in the backlog) gets it, c still waits
  b.SetTimeoutMs(5000);
  EXPECT_EQ(b.ReadLine(), "b\r\n");
  EXPECT_EQ(c.ReadLine(), "");
  EXPECT_TRUE(acceptor_->paused());
  { Client gone = std::move(b); }
  c.SetTimeoutMs(5000);
  EXPECT_EQ(c.ReadLine(), "c\r\n");
  EXPECT_EQ(counters_.rejected_connections.load(), 0u);
  EXPECT_EQ(counters_.total_connections.load(), 3u);
  EXPECT_GE(counters_.listen_disabled.load(), 2u);
  EXPECT_GT(counters_.listen_disabled_us.load(), 0u);
}

TEST_F(AcceptorTest, RaisingTheLimitReArmsAPausedAcceptor) {
  Start(2, 1, /*reject_when_full=*/false);
  Client a = Client::Tcp(port_);
  ASSERT_EQ(Echo(a, "a"), "a\r\n");
  Client b = Client::Tcp(port_);
  ASSERT_TRUE(b.Send("echo b\r\n"));
  ASSERT_TRUE(Eventually([&] { return acceptor_->paused(); }));
  acceptor_->SetMaxConnections(2);  // as CONFIG SET maxclients, from another thread
  EXPECT_EQ(b.ReadLine(), "b\r\n");
  EXPECT_EQ(Echo(a, "still"), "still\r\n");
  // Two of two: full again, so it is paused waiting for the next slot.
  EXPECT_TRUE(Eventually([&] { return acceptor_->paused(); }));
  EXPECT_EQ(counters_.curr_connections.load(), 2u);
}

// Many short clients against a limit of one: every slot a worker frees while
// the acceptor is deciding to pause must still wake it (a lost wake-up hangs
// a client until its 5 s timeout).
TEST_F(AcceptorTest, NoWakeUpIsLostUnderChurn) {
  Start(2, 1, /*reject_when_full=*/false);
  std::vector<std::thread> ts;
  std::atomic<int> ok{0};
  for (int t = 0; t < 4; ++t) {
    ts.emplace_back([this, t, &ok] {
      for (int i = 0; i < 50; ++i) {
        Client c = Client::Tcp(port_);
        std::string s = std::to_string(t) + "-" + std::to_string(i);
        if (Echo(c, s) == s + "\r\n") ok.fetch_add(1);
      }
    });
  }
  for (auto& th : ts) th.join();
  EXPECT_EQ(ok.load(), 200);
  EXPECT_EQ(counters_.rejected_connections.load(), 0u);
}

TEST_F(AcceptorTest, OverTheLimitRejectsWithTheListenersReply) {
  Start(2, 3, /*reject_when_full=*/true);
  Client a = Client::Tcp(port_);
  Client b = Client::Tcp(port_);
  ASSERT_EQ(Echo(a, "a"), "a\r\n");
  ASSERT_EQ(Echo(b, "b"), "b\r\n");
  acceptor_->SetMaxConnections(2);  // lowered: existing connections stay
  Client c = Client::Tcp(port_);
  EXPECT_EQ(c.ReadLine(), "ERROR Too many open connections\r\n");
  EXPECT_TRUE(c.SeesEof());
  EXPECT_EQ(counters_.rejected_connections.load(), 1u);
  EXPECT_FALSE(acceptor_->paused());  // rejecting never pauses
  EXPECT_EQ(Echo(a, "a2"), "a2\r\n");
}

TEST_F(AcceptorTest, IdsIncreaseAndAreDealtRoundRobin) {
  Start(3, 100, true);
  std::vector<Client> cs;
  for (int i = 0; i < 6; ++i) {
    cs.push_back(Client::Tcp(port_));
    ASSERT_TRUE(cs.back().Send("id\r\n"));
    EXPECT_EQ(cs.back().ReadLine(), std::to_string(i + 1) + "\r\n");
  }
  for (size_t w = 0; w < workers_.size(); ++w) {
    EXPECT_EQ(workers_[w]->num_connections(), 2u) << "worker " << w;
  }
  EXPECT_EQ(Acceptor::WorkerIndexFor(4, 3), 1u);
}

// Out of file descriptors: accept4 fails with EMFILE, the connection stays
// in the backlog, the acceptor stops watching and retries from a timer.
TEST_F(AcceptorTest, OutOfFdsPausesAndRetriesFromATimer) {
  Start(1, 100, true);
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  // The lowest free descriptor: every one below it is in use, so with the
  // limit there the next accept4 gets EMFILE.
  int lowest = ::dup(0);
  ASSERT_GE(lowest, 0);
  ::close(lowest);
  rlimit old{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &old), 0);
  rlimit low = old;
  low.rlim_cur = static_cast<rlim_t>(lowest);
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &low), 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port_));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int rc = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  bool paused = Eventually([&] { return counters_.listen_disabled.load() > 0; });
  // Read while the limit is still low: once it is raised, the 10 ms retry
  // may accept the connection at any moment.
  uint64_t while_low = counters_.curr_connections.load();
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &old), 0);
  ASSERT_EQ(rc, 0);
  EXPECT_TRUE(paused);
  EXPECT_EQ(while_low, 0u);
  Client c(fd);                            // owns fd from here
  EXPECT_EQ(Echo(c, "late"), "late\r\n");  // a retry (10 ms) accepted it
  EXPECT_FALSE(acceptor_->paused());
  EXPECT_EQ(counters_.rejected_connections.load(), 0u);
}

TEST_F(AcceptorTest, StopWhilePausedClosesTheListener) {
  Start(1, 1, /*reject_when_full=*/false);
  Client a = Client::Tcp(port_);
  ASSERT_EQ(Echo(a, "a"), "a\r\n");
  Client b = Client::Tcp(port_);
  ASSERT_TRUE(b.Send("echo b\r\n"));
  ASSERT_TRUE(Eventually([&] { return acceptor_->paused(); }));
  acceptor_->Stop();
  EXPECT_TRUE(b.SeesEof());  // closing the listener resets its backlog
  Client c = Client::Tcp(port_);
  EXPECT_FALSE(c.ok());
  EXPECT_EQ(Echo(a, "a2"), "a2\r\n");  // accepted connections are the workers'
}

}  // namespace
}  // namespace trove::net
