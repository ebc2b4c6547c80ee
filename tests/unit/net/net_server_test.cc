// Worker and connection loop over real loopback sockets, with a line handler.
#include "net/net_server.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "net/socket.h"
#include "tests/unit/net/test_support.h"

namespace trove::net {
namespace {

using testing::Client;
using testing::LineFactory;

class NetServerTest : public ::testing::Test {
 protected:
  void StartServer(NetServerOptions opts, int max_reqs = 20, bool stamps = false) {
    factory_ = std::make_unique<LineFactory>(&server_ptr_, max_reqs);
    factory_->stamps = stamps;
    server_ = std::make_unique<NetServer>(opts);
    server_ptr_ = server_.get();
    auto ls = ListenTcp("127.0.0.1", 0, 128);
    ASSERT_TRUE(ls.ok()) << ls.status().ToString();
    port_ = ls.value()[0].port;
    server_->AddListeners(std::move(ls.value()), factory_.get(),
                          "ERROR Too many open connections\r\n");
    ASSERT_TRUE(server_->Start().ok());
  }
  void TearDown() override {
    if (server_) server_->Stop();
  }
  // Waits up to 5 s for cond.
  template <typename F>
  static bool Eventually(F cond) {
    for (int i = 0; i < 500; ++i) {
      if (cond()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return cond();
  }
  uint64_t IdOf(Client& c) {
    c.Send("id\r\n");
    std::string line = c.ReadLine();
    uint64_t id = 0;
    ParseU64(line.substr(0, line.size() - 2), &id);
    return id;
  }

  ManualClock clock_;  // declared first: outlives the server's threads
  std::unique_ptr<LineFactory> factory_;
  std::unique_ptr<NetServer> server_;
  NetServer* server_ptr_ = nullptr;
  int port_ = 0;
};

TEST_F(NetServerTest, EveryWorkerIsInitialisedForTheFactory) {
  NetServerOptions o;
  o.num_workers = 3;
  StartServer(o);
  Client c = Client::Tcp(port_);
  c.Send("echo hi\r\n");
  EXPECT_EQ(c.ReadLine(), "hi\r\n");
  EXPECT_EQ(factory_->inited.load(), 3);
  EXPECT_EQ(server_->BytesRead(), 9u);  // "echo hi\r\n"
  // Counted just after the write the client has already seen.
  EXPECT_TRUE(Eventually([&] { return server_->BytesWritten() == 4u; }));  // "hi\r\n"
}

TEST_F(NetServerTest, PipelinedRequestsAreAnsweredInOrderAcrossYields) {
  NetServerOptions o;
  o.num_workers = 1;
  StartServer(o, /*max_reqs=*/4);
  Client c = Client::Tcp(port_);
  std::string req, want;
  for (int i = 0; i < 2000; ++i) {
    req += "echo " + std::to_string(i) + "\r\n";
    want += std::to_string(i) + "\r\n";
  }
  ASSERT_TRUE(c.Send(req));
  EXPECT_EQ(c.ReadN(want.size()), want);
  // 2000 requests at 4 per call cannot have been served without re-queueing.
  EXPECT_GT(server_->counters().conn_yields.load(), 0u);
}

TEST_F(NetServerTest, RequestSplitAtEveryByteIsReassembled) {
  NetServerOptions o;
  o.num_workers = 1;
  StartServer(o);
  Client c = Client::Tcp(port_);
  std::string req = "echo split-me\r\necho two\r\n";
  for (char ch : req) {
    ASSERT_TRUE(c.Send(std::string_view(&ch, 1)));
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  EXPECT_EQ(c.ReadLine(), "split-me\r\n");
  EXPECT_EQ(c.ReadLine(), "two\r\n");
}

TEST_F(NetServerTest, LargeValueGrowsTheInputBuffer) {
  NetServerOptions o;
  o.num_workers = 1;
  StartServer(o);
  Client c = Client::Tcp(port_);
  std::string value(3 * 1024 * 1024 + 7, 'v');
  ASSERT_TRUE(c.Send("data " + std::to_string(value.size()) + "\r\n" + value + "\r\necho after\r\n"));
  EXPECT_EQ(c.ReadLine(), "got " + std::to_string(value.size()) + "\r\n");
  EXPECT_EQ(c.ReadLine(), "after\r\n");
}

TEST_F(NetServerTest, PartialWritesKeepTheirPlace) {
  NetServerOptions o;
  o.num_workers = 1;
  StartServer(o);
  Client c = Client::Tcp(port_, /*rcvbuf=*/4096);
  // Far more than the socket buffers hold: the worker must write in pieces.
  ASSERT_TRUE(c.Send("big 3000000\r\necho tail\r\n"));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  std::string got;
  while (got.size() < 3000002) {
    std::string part = c.ReadN(std::min<size_t>(65536, 3000002 - got.size()));
    ASSERT_FALSE(part.empty());
    got += part;
  }
  for (size_t i = 0; i < 3000000; ++i) {
    ASSERT_EQ(got[i], static_cast<char>('a' + i % 26)) << "at " << i;
  }
  EXPECT_EQ(got.substr(3000000), "\r\n");
  EXPECT_EQ(c.ReadLine(), "tail\r\n");
}

TEST_F(NetServerTest, SlowReaderDoesNotStallOtherClientsOfItsWorker) {
  NetServerOptions o;
  o.num_workers = 1;  // everyone shares the one worker
  StartServer(o);
  Client slow = Client::Tcp(port_, /*rcvbuf=*/4096);
  std::string reqs;
  for (int i = 0; i < 200; ++i) reqs += "big 100000\r\n";  // 20 MB of replies
  // Send from a thread: once the server stops reading, our send blocks too.
  std::thread sender([&] { slow.Send(reqs); });
  ASSERT_TRUE(Eventually([&] { return server_->counters().read_paused.load() > 0; }));
  Client fast = Client::Tcp(port_);
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 200; ++i) {
    std::string s = "echo " + std::to_string(i) + "\r\n";
    ASSERT_TRUE(fast.Send(s));
    ASSERT_EQ(fast.ReadLine(), std::to_string(i) + "\r\n");
  }
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                std::chrono::steady_clock::now() - t0)
                .count();
  EXPECT_LT(ms, 2000);
  ::shutdown(slow.fd(), SHUT_RDWR);  // unblock the sender
  sender.join();
}

TEST_F(NetServerTest, ConnectionLimitRejectsWithErrorLine) {
  NetServerOptions o;
  o.num_workers = 2;
  o.max_connections = 2;
  StartServer(o);
  Client a = Client::Tcp(port_);
  Client b = Client::Tcp(port_);
  a.Send("echo a\r\n");
  b.Send("echo b\r\n");
  EXPECT_EQ(a.ReadLine(), "a\r\n");
  EXPECT_EQ(b.ReadLine(), "b\r\n");
  Client c = Client::Tcp(port_);
  EXPECT_EQ(c.ReadLine(), "ERROR Too many open connections\r\n");
  EXPECT_TRUE(c.SeesEof());
  EXPECT_EQ(server_->counters().rejected_connections.load(), 1u);
  EXPECT_EQ(server_->counters().curr_connections.load(), 2u);
  { Client gone = std::move(a); }
  ASSERT_TRUE(Eventually([&] { return server_->counters().curr_connections.load() == 1; }));
  Client d = Client::Tcp(port_);
  d.Send("echo d\r\n");
  EXPECT_EQ(d.ReadLine(), "d\r\n");
  EXPECT_EQ(server_->counters().total_connections.load(), 3u);
}

TEST_F(NetServerTest, WithoutMaxconnsFastNewClientsWaitForARelease) {
  NetServerOptions o;
  o.num_workers = 1;
  o.max_connections = 1;
  o.maxconns_fast = false;
  StartServer(o);
  Client a = Client::Tcp(port_);
  a.Send("echo a\r\n");
  EXPECT_EQ(a.ReadLine(), "a\r\n");
  Client b = Client::Tcp(port_);  // connects (the kernel's backlog), not served yet
  ASSERT_TRUE(b.ok());
  b.Send("echo b\r\n");
  b.SetTimeoutMs(300);
  EXPECT_EQ(b.ReadLine(), "");  // nothing while a holds the only slot
  EXPECT_EQ(server_->counters().rejected_connections.load(), 0u);
  EXPECT_GT(server_->counters().listen_disabled.load(), 0u);
  { Client gone = std::move(a); }
  b.SetTimeoutMs(5000);
  EXPECT_EQ(b.ReadLine(), "b\r\n");
}

TEST_F(NetServerTest, IdleTimeoutClosesOnlyIdleConnections) {
  ManualClock& clock = clock_;
  NetServerOptions o;
  o.num_workers = 1;
  o.idle_timeout_s = 5;
  o.clock = &clock;
  StartServer(o);
  Client idle = Client::Tcp(port_);
  Client busy = Client::Tcp(port_);
  idle.Send("echo x\r\n");
  EXPECT_EQ(idle.ReadLine(), "x\r\n");
  busy.Send("echo y\r\n");
  EXPECT_EQ(busy.ReadLine(), "y\r\n");
  clock.AdvanceSeconds(3);
  server_->WakeAll();
  busy.Send("echo z\r\n");  // busy is active at t+3
  EXPECT_EQ(busy.ReadLine(), "z\r\n");
  clock.AdvanceSeconds(3);  // idle: 6 s quiet; busy: 3 s
  server_->WakeAll();
  idle.SetTimeoutMs(2000);
  EXPECT_TRUE(idle.SeesEof());
  EXPECT_EQ(server_->counters().idle_kicks.load(), 1u);
  busy.Send("echo still\r\n");
  EXPECT_EQ(busy.ReadLine(), "still\r\n");
}

TEST_F(NetServerTest, CloseConnectionById) {
  NetServerOptions o;
  o.num_workers = 2;
  StartServer(o);
  Client a = Client::Tcp(port_);
  uint64_t id = IdOf(a);
  ASSERT_GT(id, 0u);
  EXPECT_TRUE(server_->CloseConnection(id));
  EXPECT_TRUE(a.SeesEof());
  EXPECT_FALSE(server_->CloseConnection(id));
  EXPECT_FALSE(server_->CloseConnection(987654));
}

TEST_F(NetServerTest, WorkerClosesAConnectionOnAnotherWorker) {
  NetServerOptions o;
  o.num_workers = 2;
  StartServer(o);
  Client a = Client::Tcp(port_);
  Client b = Client::Tcp(port_);  // round-robin: the other worker
  uint64_t ida = IdOf(a);
  uint64_t idb = IdOf(b);
  ASSERT_NE(ida % 2, idb % 2);
  b.Send("close " + std::to_string(ida) + "\r\n");
  EXPECT_EQ(b.ReadLine(), "closed 1\r\n");
  EXPECT_TRUE(a.SeesEof());
  b.Send("close " + std::to_string(idb) + "\r\necho never\r\n");  // itself
  EXPECT_EQ(b.ReadLine(), "closed 1\r\n");
  EXPECT_TRUE(b.SeesEof());
}

TEST_F(NetServerTest, ConnectionsListsEveryConnectionFromAnyThread) {
  NetServerOptions o;
  o.num_workers = 3;
  StartServer(o);
  std::vector<Client> cs;
  for (int i = 0; i < 6; ++i) {
    cs.push_back(Client::Tcp(port_));
    IdOf(cs.back());
  }
  auto conns = server_->Connections();
  ASSERT_EQ(conns.size(), 6u);
  for (size_t i = 1; i < conns.size(); ++i) EXPECT_LT(conns[i - 1].id, conns[i].id);
  EXPECT_EQ(conns[0].addr.substr(0, 14), "tcp:127.0.0.1:");
  EXPECT_EQ(conns[0].listen_addr, "tcp:127.0.0.1:" + std::to_string(port_));
  // Workers asking each other at the same time must not deadlock.
  std::vector<std::thread> ts;
  for (int i = 0; i < 6; ++i) {
    ts.emplace_back([&cs, i] {
      for (int k = 0; k < 20; ++k) {
        cs[i].Send("conns\r\n");
        EXPECT_EQ(cs[i].ReadLine(), "6\r\n");
      }
    });
  }
  for (auto& t : ts) t.join();
}

TEST_F(NetServerTest, QuitFlushesEarlierRepliesThenCloses) {
  NetServerOptions o;
  o.num_workers = 1;
  StartServer(o);
  Client c = Client::Tcp(port_);
  c.Send("echo first\r\nquit\r\necho never\r\n");
  EXPECT_EQ(c.ReadLine(), "first\r\n");
  EXPECT_TRUE(c.SeesEof());
  EXPECT_TRUE(Eventually([&] { return server_->counters().curr_connections.load() == 0; }));
}

TEST_F(NetServerTest, ServesUnixSockets) {
  factory_ = std::make_unique<LineFactory>(&server_ptr_, 20);
  NetServerOptions o;
  o.num_workers = 1;
  server_ = std::make_unique<NetServer>(o);
  server_ptr_ = server_.get();
  std::string path = "/tmp/trove_net_test_" + std::to_string(::getpid()) + ".sock";
  auto l = ListenUnix(path, 0700, 16);
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  std::vector<Listener> ls;
  ls.push_back(std::move(l.value()));
  server_->AddListeners(std::move(ls), factory_.get(), "");
  ASSERT_TRUE(server_->Start().ok());
  Client c = Client::Unix(path);
  ASSERT_TRUE(c.ok());
  c.Send("echo unix\r\n");
  EXPECT_EQ(c.ReadLine(), "unix\r\n");
  auto conns = server_->Connections();
  ASSERT_EQ(conns.size(), 1u);
  EXPECT_EQ(conns[0].addr, "unix:" + path);
  server_->Stop();
  ::unlink(path.c_str());
}

TEST_F(NetServerTest, StopClosesClientsAndListeners) {
  NetServerOptions o;
  o.num_workers = 2;
  StartServer(o);
  Client a = Client::Tcp(port_);
  a.Send("echo a\r\n");
  EXPECT_EQ(a.ReadLine(), "a\r\n");
  server_->Stop();
  EXPECT_TRUE(a.SeesEof());
  Client b = Client::Tcp(port_);
  EXPECT_FALSE(b.ok());
  EXPECT_EQ(server_->counters().curr_connections.load(), 0u);
}

TEST_F(NetServerTest, ManyClientsAcrossWorkers) {
  NetServerOptions o;
  o.num_workers = 4;
  StartServer(o);
  std::vector<std::thread> ts;
  for (int t = 0; t < 8; ++t) {
    ts.emplace_back([this, t] {
      for (int round = 0; round < 5; ++round) {
        Client c = Client::Tcp(port_);
        std::string req, want;
        for (int i = 0; i < 100; ++i) {
          req += "echo " + std::to_string(t) + "-" + std::to_string(i) + "\r\n";
          want += std::to_string(t) + "-" + std::to_string(i) + "\r\n";
        }
        c.Send(req);
        EXPECT_EQ(c.ReadN(want.size()), want);
      }
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(server_->counters().total_connections.load(), 40u);
  for (int i = 0; i < 4; ++i) {
    // Round-robin: each worker served about a quarter (all closed by now).
    EXPECT_TRUE(Eventually([&] { return server_->WorkerConnections(i) == 0; }));
  }
}

// A "sleep" suspends its connection: the requests pipelined behind it (in the
// same write, and arriving later) are answered after "slept", in order, while
// another client of the same worker is served meanwhile. The clock is manual,
// so the sleep lasts exactly until the test moves it.
TEST_F(NetServerTest, SuspendResumeKeepsPipelinedOrder) {
  ManualClock& clock = clock_;
  NetServerOptions o;
  o.num_workers = 1;  // sleeper and other share the worker
  o.clock = &clock;
  StartServer(o);
  Client sleeper = Client::Tcp(port_);
  Client other = Client::Tcp(port_);
  IdOf(sleeper);
  IdOf(other);
  ASSERT_TRUE(sleeper.Send("sleep 50\r\necho a\r\necho b\r\n"));
  // One worker, loopback: the sleeper's bytes were queued before other's
  // first request, so it was parsed (and suspended) no later than that.
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(other.Send("echo o" + std::to_string(i) + "\r\n"));
    ASSERT_EQ(other.ReadLine(), "o" + std::to_string(i) + "\r\n");
  }
  ASSERT_TRUE(sleeper.Send("echo c\r\n"));  // arrives while suspended
  other.Send("echo sync\r\n");
  ASSERT_EQ(other.ReadLine(), "sync\r\n");  // the worker has read "echo c" too
  sleeper.SetTimeoutMs(100);
  EXPECT_EQ(sleeper.ReadLine(), "");  // nothing yet: not even "a"
  clock.AdvanceMicros(49 * 1000);
  server_->WakeAll();
  other.Send("echo sync\r\n");
  ASSERT_EQ(other.ReadLine(), "sync\r\n");
  EXPECT_EQ(sleeper.ReadLine(), "");  // 1 ms early
  clock.AdvanceMicros(1000);
  server_->WakeAll();
  sleeper.SetTimeoutMs(5000);
  const std::string want = "slept\r\na\r\nb\r\nc\r\n";
  EXPECT_EQ(sleeper.ReadN(want.size()), want);
  sleeper.Send("echo after\r\n");  // parsing is live again
  EXPECT_EQ(sleeper.ReadLine(), "after\r\n");
}

// "push ID X" is posted to ID's worker and written there as out-of-band
// output: one sender's pushes arrive in its order.
TEST_F(NetServerTest, PushFromAnotherWorkerArrivesInOrder) {
  constexpr int kWorkers = 4;
  NetServerOptions o;
  o.num_workers = kWorkers;
  StartServer(o);
  Client a = Client::Tcp(port_);
  Client b = Client::Tcp(port_);
  uint64_t ida = IdOf(a);
  uint64_t idb = IdOf(b);
  ASSERT_NE(ida % kWorkers, idb % kWorkers);  // round-robin: another worker
  std::string req, want_a, want_b;
  for (int i = 0; i < 1000; ++i) {
    req += "push " + std::to_string(idb) + " n" + std::to_string(i) + "\r\n";
    want_a += "pushed\r\n";
    want_b += "push n" + std::to_string(i) + "\r\n";
  }
  ASSERT_TRUE(a.Send(req));
  EXPECT_EQ(a.ReadN(want_a.size()), want_a);
  EXPECT_EQ(b.ReadN(want_b.size()), want_b);

  // Three senders on three other workers push to b at the same time.
  constexpr int kSenders = 3;
  constexpr int kPushes = 300;
  std::vector<Client> senders;
  std::vector<uint64_t> workers_used{idb % kWorkers};
  for (int k = 0; k < kSenders; ++k) {
    senders.push_back(Client::Tcp(port_));
    uint64_t id = IdOf(senders.back());
    for (uint64_t w : workers_used) ASSERT_NE(id % kWorkers, w);
    workers_used.push_back(id % kWorkers);
  }
  std::vector<std::thread> ts;
  for (int k = 0; k < kSenders; ++k) {
    ts.emplace_back([&, k] {
      std::string r, want;
      for (int i = 0; i < kPushes; ++i) {
        r += "push " + std::to_string(idb) + " s" + std::to_string(k) + "-" + std::to_string(i) +
             "\r\n";
        want += "pushed\r\n";
      }
      EXPECT_TRUE(senders[k].Send(r));
      EXPECT_EQ(senders[k].ReadN(want.size()), want);
    });
  }
  std::vector<int> next(kSenders, 0);
  for (int n = 0; n < kSenders * kPushes; ++n) {
    std::string line = b.ReadLine();
    ASSERT_EQ(line.substr(0, 6), "push s") << "line " << n << ": " << line;
    size_t dash = line.find('-');
    ASSERT_NE(dash, std::string::npos);
    int k = std::stoi(line.substr(6, dash - 6));
    int i = std::stoi(line.substr(dash + 1));
    ASSERT_TRUE(k >= 0 && k < kSenders) << line;
    EXPECT_EQ(i, next[k]) << "sender " << k << " out of order";
    next[k] = i + 1;
  }
  for (auto& t : ts) t.join();
  for (int k = 0; k < kSenders; ++k) EXPECT_EQ(next[k], kPushes);
}

// "conns" gathers every worker's count on the asking worker without anyone
// waiting; "close N" asks N's owner, on another worker, to close it.
TEST_F(NetServerTest, GatherCountsEveryWorker) {
  constexpr int kWorkers = 4;
  constexpr int kClients = 8;
  NetServerOptions o;
  o.num_workers = kWorkers;
  StartServer(o);
  std::vector<Client> cs;
  std::vector<uint64_t> ids;
  for (int i = 0; i < kClients; ++i) {
    cs.push_back(Client::Tcp(port_));
    ids.push_back(IdOf(cs.back()));  // adopted by its worker
  }
  std::vector<std::thread> ts;
  for (int i = 0; i < kClients; ++i) {
    ts.emplace_back([&cs, i] {
      for (int k = 0; k < 20; ++k) {
        cs[i].Send("conns\r\n");
        EXPECT_EQ(cs[i].ReadLine(), std::to_string(kClients) + "\r\n");
      }
    });
  }
  for (auto& t : ts) t.join();
  // Close a connection owned by another worker than cs[0]'s.
  size_t victim = 1;
  while (ids[victim] % kWorkers == ids[0] % kWorkers) ++victim;
  cs[0].Send("close " + std::to_string(ids[victim]) + "\r\n");
  EXPECT_EQ(cs[0].ReadLine(), "closed 1\r\n");
  EXPECT_TRUE(cs[victim].SeesEof());
  // The owner closed it in the turn it was asked, before answering.
  cs[0].Send("conns\r\n");
  EXPECT_EQ(cs[0].ReadLine(), std::to_string(kClients - 1) + "\r\n");
  cs[0].Send("close " + std::to_string(ids[victim]) + "\r\n");  // already gone
  EXPECT_EQ(cs[0].ReadLine(), "closed 0\r\n");
  EXPECT_EQ(server_->counters().curr_connections.load(), static_cast<uint64_t>(kClients - 1));
}

// An input fence answers only after every worker has served what reached
// it before: worker 1 is kept busy while "note b" waits in its socket, and
// the fence asked on worker 0 ends after that note.
TEST_F(NetServerTest, FenceWaitsForInputThatReachedEveryWorker) {
  NetServerOptions o;
  o.num_workers = 2;
  StartServer(o);
  auto on_worker = [&](uint64_t w) {
    for (;;) {
      Client c = Client::Tcp(port_);
      if (IdOf(c) % 2 == w) return c;
    }
  };
  Client a = on_worker(0);
  Client busy = on_worker(1);
  Client b = on_worker(1);
  ASSERT_TRUE(busy.Send("busy 300\r\n"));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // worker 1 is asleep in it
  ASSERT_TRUE(b.Send("note b\r\n"));
  ASSERT_TRUE(a.Send("fence\r\n"));
  EXPECT_EQ(a.ReadLine(), "fenced\r\n");
  EXPECT_EQ(factory_->notes.Get(), std::vector<std::string>{"b"});
  EXPECT_EQ(busy.ReadLine(), "done\r\n");
  EXPECT_EQ(b.ReadLine(), "noted\r\n");
  // Nothing pending: a fence on idle workers ends at once.
  ASSERT_TRUE(a.Send("fence\r\nfence\r\n"));
  EXPECT_EQ(a.ReadLine(), "fenced\r\n");
  EXPECT_EQ(a.ReadLine(), "fenced\r\n");
}

// With arrival stamps a worker parses a turn's reads in the order their
// data reached the kernel. Level-triggered epoll lists y first here: y was
// reported in the turn that runs "busy", so it heads the ready list when x's
// data arrives, and its own later data does not move it.
TEST_F(NetServerTest, ArrivalStampsOrderTheReadsOfATurn) {
  NetServerOptions o;
  o.num_workers = 1;
  StartServer(o, 20, /*stamps=*/true);
  Client x = Client::Tcp(port_);
  Client y = Client::Tcp(port_);
  IdOf(x);
  IdOf(y);
  for (int round = 0; round < 3; ++round) {
    ASSERT_TRUE(y.Send("busy 100\r\n"));
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    ASSERT_TRUE(x.Send("note x\r\n"));
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    ASSERT_TRUE(y.Send("note y\r\n"));
    EXPECT_EQ(y.ReadLine(), "done\r\n");
    EXPECT_EQ(x.ReadLine(), "noted\r\n");
    EXPECT_EQ(y.ReadLine(), "noted\r\n");
  }
  std::vector<std::string> want;
  for (int round = 0; round < 3; ++round) {
    want.push_back("x");
    want.push_back("y");
  }
  EXPECT_EQ(factory_->notes.Get(), want);
}

// A suspended connection still watches its socket: a peer that hangs up
// while its request waits is closed, and its pending timer dies with it.
TEST_F(NetServerTest, SuspendedConnectionWhosePeerHangsUpIsClosed) {
  ManualClock& clock = clock_;
  NetServerOptions o;
  o.num_workers = 1;
  o.clock = &clock;  // the sleep never ends on its own
  StartServer(o);
  Client other = Client::Tcp(port_);
  IdOf(other);
  {
    Client sleeper = Client::Tcp(port_);
    IdOf(sleeper);
    ASSERT_TRUE(sleeper.Send("sleep 1000\r\necho never\r\n"));
    other.Send("echo sync\r\n");
    ASSERT_EQ(other.ReadLine(), "sync\r\n");  // the sleeper is suspended now
    EXPECT_EQ(server_->counters().curr_connections.load(), 2u);
  }  // hangs up
  EXPECT_TRUE(Eventually([&] { return server_->counters().curr_connections.load() == 1; }));
  EXPECT_EQ(server_->WorkerConnections(0), 1u);
  clock.AdvanceSeconds(2);  // the dead connection's timer must not fire
  server_->WakeAll();
  other.Send("echo still\r\n");
  EXPECT_EQ(other.ReadLine(), "still\r\n");
}

}  // namespace
}  // namespace trove::net
