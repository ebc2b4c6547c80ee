// EventLoop: the timer heap (with a ManualClock), the inbox across threads
// (order, blocking senders, loops posting to each other) and epoll watchers.
#include "net/event_loop.h"

#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <gtest/gtest.h>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/clock.h"

namespace trove::net {
namespace {

constexpr int64_t kNsPerMs = 1000000;

using SteadyClock = std::chrono::steady_clock;

int64_t MsSince(SteadyClock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(SteadyClock::now() - t0).count();
}

// Records every event it is given; reads the eventfd it watches if asked to.
class Recorder final : public IoWatcher {
 public:
  explicit Recorder(int fd_to_read = -1) : fd_(fd_to_read) {}
  void OnIoEvent(uint32_t events) override {
    events_.push_back(events);
    if (fd_ >= 0) {
      uint64_t v;
      ssize_t r = ::read(fd_, &v, sizeof(v));
      (void)r;
    }
  }
  const std::vector<uint32_t>& events() const { return events_; }
  void clear() { events_.clear(); }

 private:
  int fd_;
  std::vector<uint32_t> events_;
};

// Makes a loop's RunOnce(-1) return after `ms` even if what the test waits
// for never wakes it (an eventfd of its own, independent of the inbox), so a
// lost wakeup fails the test instead of hanging it.
class Watchdog {
 public:
  Watchdog(EventLoop* loop, int ms)
      : loop_(loop), efd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)), watcher_(efd_) {
    EXPECT_TRUE(loop_->AddFd(efd_, EPOLLIN, &watcher_).ok());
    thread_ = std::thread([this, ms] {
      std::unique_lock<std::mutex> l(mu_);
      if (!cv_.wait_for(l, std::chrono::milliseconds(ms), [this] { return done_; })) {
        fired_.store(true);
        uint64_t one = 1;
        ssize_t r = ::write(efd_, &one, sizeof(one));
        (void)r;
      }
    });
  }
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> l(mu_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
    loop_->DelFd(efd_);
    ::close(efd_);
  }
  bool fired() const { return fired_.load(); }

 private:
  EventLoop* loop_;
  int efd_;
  Recorder watcher_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::atomic<bool> fired_{false};
  std::thread thread_;
};

// A loop driven by hand on the test thread, with a clock that moves only when
// told.
class EventLoopTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(loop_.Init().ok());
    loop_.BindToThisThread();
  }
  void AdvanceMs(int64_t ms) { clock_.AdvanceMicros(ms * 1000); }
  // A timer that appends `id` to fired_.
  std::unique_ptr<Timer> MakeTimer(int id) {
    return std::make_unique<Timer>([this, id] { fired_.push_back(id); });
  }

  ManualClock clock_;  // declared first: outlives the loop
  EventLoop loop_{&clock_, 64};
  std::vector<int> fired_;
};

// --- timers ---

TEST_F(EventLoopTest, TimersFireInDeadlineOrderAndNeverEarly) {
  auto a = MakeTimer(1), b = MakeTimer(2), c = MakeTimer(3);
  loop_.ArmAfter(a.get(), 30);
  loop_.ArmAfter(b.get(), 10);
  loop_.ArmAfter(c.get(), 20);
  EXPECT_EQ(loop_.armed_timers(), 3u);
  clock_.AdvanceMicros(10 * 1000 - 1);  // 1 us before b's deadline
  loop_.RunOnce(0);
  EXPECT_TRUE(fired_.empty());
  clock_.AdvanceMicros(1);  // exactly b's deadline
  loop_.RunOnce(0);
  EXPECT_EQ(fired_, (std::vector<int>{2}));
  EXPECT_FALSE(b->armed());
  AdvanceMs(100);  // a and c are both due: deadline order within one turn
  loop_.RunOnce(0);
  EXPECT_EQ(fired_, (std::vector<int>{2, 3, 1}));
  EXPECT_EQ(loop_.armed_timers(), 0u);
  loop_.RunOnce(0);  // at most once per arming
  EXPECT_EQ(fired_.size(), 3u);
}

TEST_F(EventLoopTest, EqualDeadlinesFireInArmingOrder) {
  std::vector<std::unique_ptr<Timer>> ts;
  for (int i = 0; i < 6; ++i) ts.push_back(MakeTimer(i));
  const int64_t at = clock_.MonoNanos() + 10 * kNsPerMs;
  for (int i : {3, 1, 4, 0, 5, 2}) loop_.ArmAt(ts[i].get(), at);
  loop_.ArmAt(ts[3].get(), at);  // re-arming makes it the last of its deadline
  AdvanceMs(10);
  loop_.RunOnce(0);
  EXPECT_EQ(fired_, (std::vector<int>{1, 4, 0, 5, 2, 3}));
}

TEST_F(EventLoopTest, CancelledTimerNeverFires) {
  auto a = MakeTimer(1), b = MakeTimer(2);
  loop_.ArmAfter(a.get(), 5);
  loop_.ArmAfter(b.get(), 5);
  loop_.Cancel(a.get());
  EXPECT_FALSE(a->armed());
  EXPECT_TRUE(b->armed());
  loop_.Cancel(a.get());  // cancelling a disarmed timer does nothing
  EXPECT_EQ(loop_.armed_timers(), 1u);
  AdvanceMs(50);
  loop_.RunOnce(0);
  loop_.RunOnce(0);
  EXPECT_EQ(fired_, (std::vector<int>{2}));
}

TEST_F(EventLoopTest, RearmingMovesTheTimer) {
  auto a = MakeTimer(1), b = MakeTimer(2);
  loop_.ArmAfter(a.get(), 10);
  loop_.ArmAfter(a.get(), 30);  // later
  loop_.ArmAfter(b.get(), 50);
  loop_.ArmAfter(b.get(), 5);  // earlier
  EXPECT_EQ(loop_.armed_timers(), 2u);
  AdvanceMs(5);
  loop_.RunOnce(0);
  EXPECT_EQ(fired_, (std::vector<int>{2}));
  AdvanceMs(10);  // t = 15: a's first deadline has passed, its second has not
  loop_.RunOnce(0);
  EXPECT_EQ(fired_, (std::vector<int>{2}));
  AdvanceMs(15);  // t = 30
  loop_.RunOnce(0);
  EXPECT_EQ(fired_, (std::vector<int>{2, 1}));
  AdvanceMs(100);  // b's abandoned deadline (50) never fires it again
  loop_.RunOnce(0);
  EXPECT_EQ(fired_, (std::vector<int>{2, 1}));
  EXPECT_EQ(loop_.armed_timers(), 0u);
}

TEST_F(EventLoopTest, TimerRearmedForNowFromItsCallbackFiresNextTurn) {
  int runs = 0;
  Timer* self = nullptr;
  Timer t([&] {
    ++runs;
    loop_.ArmAfter(self, 0);  // due at once (the clock does not move)
  });
  self = &t;
  auto other = MakeTimer(7);
  loop_.ArmAfter(&t, 0);
  loop_.ArmAfter(other.get(), 0);
  loop_.RunOnce(0);
  // Once per turn, not a loop inside one turn, and the other timer still ran.
  EXPECT_EQ(runs, 1);
  EXPECT_EQ(fired_, (std::vector<int>{7}));
  EXPECT_TRUE(t.armed());
  loop_.RunOnce(0);
  EXPECT_EQ(runs, 2);
  loop_.RunOnce(0);
  EXPECT_EQ(runs, 3);
  loop_.Cancel(&t);
  loop_.RunOnce(0);
  EXPECT_EQ(runs, 3);
}

TEST_F(EventLoopTest, DestroyingAnArmedTimerDisarmsIt) {
  auto a = MakeTimer(1), b = MakeTimer(2), c = MakeTimer(3);
  loop_.ArmAfter(a.get(), 10);
  loop_.ArmAfter(b.get(), 20);
  loop_.ArmAfter(c.get(), 30);
  b.reset();  // from the middle of the heap
  EXPECT_EQ(loop_.armed_timers(), 2u);
  a.reset();  // from the top
  EXPECT_EQ(loop_.armed_timers(), 1u);
  AdvanceMs(100);
  loop_.RunOnce(0);
  EXPECT_EQ(fired_, (std::vector<int>{3}));
}

TEST_F(EventLoopTest, CallbackMayCancelOrDestroyAnotherDueTimer) {
  auto b = MakeTimer(2), c = MakeTimer(3), d = MakeTimer(4);
  Timer a([&] {
    fired_.push_back(1);
    loop_.Cancel(b.get());
    c.reset();
  });
  loop_.ArmAfter(&a, 1);
  loop_.ArmAfter(b.get(), 2);
  loop_.ArmAfter(c.get(), 3);
  loop_.ArmAfter(d.get(), 4);
  AdvanceMs(10);  // all four due in the same turn
  loop_.RunOnce(0);
  EXPECT_EQ(fired_, (std::vector<int>{1, 4}));
  EXPECT_EQ(loop_.armed_timers(), 0u);
}

TEST(EventLoopLifetimeTest, LoopDestroyedBeforeItsArmedTimersDisarmsThem) {
  ManualClock clock;
  int runs = 0;
  Timer t([&] { ++runs; });
  {
    EventLoop loop(&clock, 8);
    ASSERT_TRUE(loop.Init().ok());
    loop.ArmAfter(&t, 10);
    EXPECT_TRUE(t.armed());
  }
  EXPECT_FALSE(t.armed());  // ~Timer must not touch the dead loop
  EXPECT_EQ(runs, 0);
}

// 10k random arms, re-arms and cancels over 200 timers, firing now and then,
// checked against a model: armed timers sorted by (deadline, last arming).
TEST_F(EventLoopTest, RandomArmCancelKeepsHeapOrder) {
  constexpr int kTimers = 200;
  std::mt19937 rng(20261202);
  std::vector<std::unique_ptr<Timer>> ts;
  for (int i = 0; i < kTimers; ++i) ts.push_back(MakeTimer(i));
  struct Armed {
    int64_t deadline;
    uint64_t seq;
  };
  std::map<int, Armed> model;  // timer id -> its arming
  uint64_t seq = 0;
  auto fire_due = [&] {
    const int64_t now = clock_.MonoNanos();
    std::vector<std::pair<Armed, int>> due;
    for (auto it = model.begin(); it != model.end();) {
      if (it->second.deadline <= now) {
        due.push_back({it->second, it->first});
        it = model.erase(it);
      } else {
        ++it;
      }
    }
    std::sort(due.begin(), due.end(), [](const auto& x, const auto& y) {
      if (x.first.deadline != y.first.deadline) return x.first.deadline < y.first.deadline;
      return x.first.seq < y.first.seq;
    });
    std::vector<int> want;
    for (auto& [a, id] : due) want.push_back(id);
    fired_.clear();
    loop_.RunOnce(0);
    ASSERT_EQ(fired_, want);
  };
  for (int op = 0; op < 10000; ++op) {
    int id = static_cast<int>(rng() % kTimers);
    uint32_t kind = rng() % 100;
    if (kind < 60) {
      // Few distinct deadlines, so many are equal and arming order matters.
      int64_t at = clock_.MonoNanos() + static_cast<int64_t>(rng() % 50) * kNsPerMs;
      loop_.ArmAt(ts[id].get(), at);
      model[id] = Armed{at, ++seq};
    } else if (kind < 90) {
      loop_.Cancel(ts[id].get());
      model.erase(id);
    } else if (kind < 95) {
      ts[id].reset();  // destroyed while (maybe) armed, then replaced
      ts[id] = MakeTimer(id);
      model.erase(id);
    } else {
      AdvanceMs(static_cast<int64_t>(rng() % 20));
      fire_due();
      if (::testing::Test::HasFatalFailure()) return;
    }
    ASSERT_EQ(loop_.armed_timers(), model.size()) << "after op " << op;
    ASSERT_EQ(ts[id]->armed(), model.count(id) == 1) << "after op " << op;
  }
  AdvanceMs(1000);
  fire_due();
  EXPECT_EQ(loop_.armed_timers(), 0u);
}

// --- waiting in epoll ---

TEST_F(EventLoopTest, RunOnceWaitsNoLongerThanAskedWhenTheTimerIsLater) {
  auto a = MakeTimer(1);
  loop_.ArmAfter(a.get(), 60 * 1000);  // a minute of a clock that does not move
  auto t0 = SteadyClock::now();
  loop_.RunOnce(5);
  EXPECT_LT(MsSince(t0), 1000);
  EXPECT_TRUE(fired_.empty());
}

// Regression: a timer more than ~24.8 days away (INT_MAX ms) used to wrap to
// a negative epoll timeout ("wait forever"), so RunOnce(10) blocked.
TEST_F(EventLoopTest, RunOnceHonoursMaxWaitWithATimerDaysAway) {
  auto a = MakeTimer(1);
  loop_.ArmAfter(a.get(), int64_t{30} * 24 * 3600 * 1000);  // 30 days
  Watchdog dog(&loop_, 2000);
  auto t0 = SteadyClock::now();
  loop_.RunOnce(10);
  EXPECT_LT(MsSince(t0), 1000);
  EXPECT_FALSE(dog.fired());
  EXPECT_TRUE(fired_.empty());
}

TEST(EventLoopRealClockTest, RunOnceSleepsUntilTheNextTimer) {
  EventLoop loop;  // the system clock
  ASSERT_TRUE(loop.Init().ok());
  loop.BindToThisThread();
  bool fired = false;
  Timer t([&] { fired = true; });
  auto t0 = SteadyClock::now();
  loop.ArmAfter(&t, 20);
  loop.RunOnce(-1);
  int64_t ms = MsSince(t0);
  EXPECT_GE(ms, 20);
  EXPECT_LT(ms, 1000);  // generous: the machine is shared
  EXPECT_TRUE(fired);
}

TEST_F(EventLoopTest, PostFromAnotherThreadWakesRunOnce) {
  Watchdog dog(&loop_, 5000);
  bool ran = false;  // loop thread only
  auto t0 = SteadyClock::now();
  std::thread poster([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    loop_.Post([&ran] { ran = true; });
  });
  loop_.RunOnce(-1);
  int64_t ms = MsSince(t0);
  poster.join();
  EXPECT_TRUE(ran);
  EXPECT_FALSE(dog.fired());
  EXPECT_LT(ms, 4000);
  EXPECT_EQ(loop_.tasks_run(), 1u);
}

TEST_F(EventLoopTest, TaskPostedBeforeRunOnceIsNotLost) {
  Watchdog dog(&loop_, 5000);
  bool ran = false;
  std::thread poster([&] { loop_.Post([&ran] { ran = true; }); });
  poster.join();
  loop_.RunOnce(-1);
  EXPECT_TRUE(ran);
  EXPECT_FALSE(dog.fired());
}

// --- the inbox ---

TEST(EventLoopInboxTest, TryPostRefusesWhenFullAndKeepsTheTask) {
  EventLoop loop(nullptr, 2);
  ASSERT_TRUE(loop.Init().ok());
  loop.BindToThisThread();
  std::vector<int> ran;
  Task a([&] { ran.push_back(1); }), b([&] { ran.push_back(2); }), c([&] { ran.push_back(3); });
  EXPECT_TRUE(loop.TryPost(a));
  EXPECT_TRUE(loop.TryPost(b));
  EXPECT_FALSE(loop.TryPost(c));
  EXPECT_TRUE(static_cast<bool>(c));  // not moved from
  loop.RunOnce(0);
  EXPECT_EQ(ran, (std::vector<int>{1, 2}));
  EXPECT_TRUE(loop.TryPost(c));
  loop.RunOnce(0);
  EXPECT_EQ(ran, (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(loop.tasks_run(), 3u);
}

TEST(EventLoopInboxTest, PostToItsOwnFullInboxDoesNotDeadlock) {
  EventLoop loop(nullptr, 4);
  ASSERT_TRUE(loop.Init().ok());
  loop.BindToThisThread();
  std::vector<int> ran;
  loop.Post([&] {
    for (int i = 0; i < 100; ++i) loop.Post([&ran, i] { ran.push_back(i); });
  });
  for (int turn = 0; turn < 1000 && ran.size() < 100; ++turn) loop.RunOnce(10);
  ASSERT_EQ(ran.size(), 100u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(ran[i], i);
}

// 8 threads x 10k tasks into an inbox of 16, so the senders block; a thread
// running RunOnce consumes. Each task runs once, each sender's in order.
TEST(EventLoopInboxTest, TasksFromManySendersRunOnceEachInSenderOrder) {
  constexpr int kSenders = 8;
  constexpr int kPerSender = 10000;
  EventLoop loop(nullptr, 16);
  ASSERT_TRUE(loop.Init().ok());
  // Touched only on the loop thread; read here after the join.
  std::vector<int> next(kSenders, 0);
  int out_of_order = 0;
  int total = 0;
  std::atomic<bool> all_ran{false};
  std::thread consumer([&] {
    loop.BindToThisThread();
    while (!all_ran.load(std::memory_order_acquire)) loop.RunOnce(50);
  });
  std::vector<std::thread> senders;
  for (int s = 0; s < kSenders; ++s) {
    senders.emplace_back([&, s] {
      for (int i = 0; i < kPerSender; ++i) {
        loop.Post([&, s, i] {
          if (next[s] != i) ++out_of_order;
          next[s] = i + 1;
          if (++total == kSenders * kPerSender) all_ran.store(true, std::memory_order_release);
        });
      }
    });
  }
  for (auto& t : senders) t.join();
  consumer.join();
  EXPECT_EQ(total, kSenders * kPerSender);
  EXPECT_EQ(out_of_order, 0);
  for (int s = 0; s < kSenders; ++s) EXPECT_EQ(next[s], kPerSender) << "sender " << s;
  EXPECT_EQ(loop.tasks_run(), static_cast<uint64_t>(kSenders * kPerSender));
}

// Two loops with inboxes of 8 on two threads. A task on each posts 1000 tasks
// to the other, and each of those posts a reply back: both loops post to a
// full inbox from inside their tasks at the same time. Both finish; every task
// runs exactly once.
// (Per-sender order in this pattern is checked by
// BacklogTaskThatWaitsKeepsSenderOrder.)
TEST(EventLoopInboxTest, LoopsPostingToEachOtherDoNotDeadlock) {
  constexpr int kTasks = 1000;
  EventLoop a(nullptr, 8), b(nullptr, 8);
  ASSERT_TRUE(a.Init().ok());
  ASSERT_TRUE(b.Init().ok());
  std::atomic<bool> stop{false};
  std::atomic<int> done{0};  // tasks and replies run, on either loop
  // hits[0]: tasks run on b (from a), replies[0]: their replies run on a.
  std::vector<std::atomic<int>> hits[2], replies[2];
  for (int k = 0; k < 2; ++k) {
    hits[k] = std::vector<std::atomic<int>>(kTasks);
    replies[k] = std::vector<std::atomic<int>>(kTasks);
  }
  auto run = [&stop](EventLoop* l) {
    l->BindToThisThread();
    while (!stop.load()) l->RunOnce(10);
  };
  std::thread ta(run, &a), tb(run, &b);
  EventLoop* loops[2] = {&a, &b};
  for (int k = 0; k < 2; ++k) {
    EventLoop* self = loops[k];
    EventLoop* peer = loops[1 - k];
    self->Post([&, k, self, peer] {
      for (int i = 0; i < kTasks; ++i) {
        peer->Post([&, k, i, self] {
          hits[k][i].fetch_add(1);
          done.fetch_add(1);
          self->Post([&, k, i] {
            replies[k][i].fetch_add(1);
            done.fetch_add(1);
          });
        });
      }
    });
  }
  auto t0 = SteadyClock::now();
  while (done.load() < 4 * kTasks && MsSince(t0) < 10000) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (done.load() < 4 * kTasks) {
    // The loop threads are stuck in Post: joining would hang the test.
    std::fprintf(stderr, "FAIL: %d of %d tasks ran in 10 s: deadlock\n", done.load(), 4 * kTasks);
    std::abort();
  }
  stop.store(true);
  ta.join();
  tb.join();
  for (int k = 0; k < 2; ++k) {
    for (int i = 0; i < kTasks; ++i) {
      ASSERT_EQ(hits[k][i].load(), 1) << "loop " << k << " task " << i;
      ASSERT_EQ(replies[k][i].load(), 1) << "loop " << k << " reply " << i;
    }
  }
  EXPECT_EQ(a.tasks_run() + b.tasks_run(), static_cast<uint64_t>(2 + 4 * kTasks));
}

// Regression (invariant 1, "tasks from one sender run in the order it posted
// them"): RunTasks used to run the old backlog and then drain the inbox even
// when a backlog task, waiting in Post, had refilled the backlog with older
// inbox tasks (X): a later task (Y) from the same sender overtook X.
//
// Setup: L is this thread's loop; M has an inbox of one that stays full and
// is drained only by a helper thread every 50 ms, so posting to M waits.
TEST(EventLoopInboxTest, BacklogTaskThatWaitsKeepsSenderOrder) {
  EventLoop l(nullptr, 16), m(nullptr, 1);
  ASSERT_TRUE(l.Init().ok());
  ASSERT_TRUE(m.Init().ok());
  l.BindToThisThread();
  Task fill([] {});
  ASSERT_TRUE(m.TryPost(fill));  // M is full
  std::atomic<bool> stop{false};
  std::thread drainer([&] {
    m.BindToThisThread();
    while (!stop.load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      m.RunOnce(0);
    }
  });
  // The sender S posts X, then (when told) Y.
  std::atomic<int> stage{0};  // 1: post X; 2: X posted; 3: post Y; 4: Y posted
  std::vector<char> order;    // L thread only
  std::thread sender([&] {
    while (stage.load() != 1) std::this_thread::yield();
    l.Post([&] { order.push_back('X'); });
    stage.store(2);
    while (stage.load() != 3) std::this_thread::yield();
    l.Post([&] { order.push_back('Y'); });
    stage.store(4);
  });
  // B1 goes to L's backlog: L's own thread waits on M with B1 in its inbox.
  l.Post([&] {
    stage.store(1);
    while (stage.load() != 2) std::this_thread::yield();
    m.Post([] {});  // waits; meanwhile X moves to L's backlog
    stage.store(3);
    while (stage.load() != 4) std::this_thread::yield();  // Y is in L's inbox
  });
  m.Post([] {});  // waits ~50 ms, moving B1 to the backlog
  for (int turn = 0; turn < 100 && order.size() < 2; ++turn) l.RunOnce(10);
  stop.store(true);
  drainer.join();
  sender.join();
  EXPECT_EQ(order, (std::vector<char>{'X', 'Y'}));
}

// --- I/O watchers ---

TEST_F(EventLoopTest, WatcherSeesAReadableEventfd) {
  int efd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  ASSERT_GE(efd, 0);
  Recorder w(efd);
  ASSERT_TRUE(loop_.AddFd(efd, EPOLLIN, &w).ok());
  EXPECT_FALSE(loop_.AddFd(efd, EPOLLIN, &w).ok());  // already registered
  loop_.RunOnce(0);
  EXPECT_TRUE(w.events().empty());
  uint64_t one = 1;
  ASSERT_EQ(::write(efd, &one, sizeof(one)), 8);
  loop_.RunOnce(0);
  ASSERT_EQ(w.events().size(), 1u);
  EXPECT_TRUE(w.events()[0] & EPOLLIN);
  loop_.RunOnce(0);  // the watcher read it: nothing more
  EXPECT_EQ(w.events().size(), 1u);
  loop_.DelFd(efd);
  ::close(efd);
}

TEST_F(EventLoopTest, WatcherOnAPipeFollowsModFdAndDelFd) {
  int p[2];
  ASSERT_EQ(::pipe2(p, O_NONBLOCK | O_CLOEXEC), 0);
  Recorder r, w, other;
  ASSERT_TRUE(loop_.AddFd(p[0], EPOLLIN, &r).ok());
  ASSERT_TRUE(loop_.AddFd(p[1], EPOLLOUT, &w).ok());
  loop_.RunOnce(0);
  EXPECT_TRUE(r.events().empty());
  ASSERT_EQ(w.events().size(), 1u);  // an empty pipe is writable
  EXPECT_TRUE(w.events()[0] & EPOLLOUT);
  // Stop watching the write end for output.
  ASSERT_TRUE(loop_.ModFd(p[1], 0, &w).ok());
  w.clear();
  ASSERT_EQ(::write(p[1], "x", 1), 1);
  loop_.RunOnce(0);
  EXPECT_TRUE(w.events().empty());
  ASSERT_EQ(r.events().size(), 1u);
  EXPECT_TRUE(r.events()[0] & EPOLLIN);
  loop_.RunOnce(0);  // level-triggered: still unread, reported again
  EXPECT_EQ(r.events().size(), 2u);
  // ModFd can hand the fd to another watcher.
  ASSERT_TRUE(loop_.ModFd(p[0], EPOLLIN, &other).ok());
  loop_.RunOnce(0);
  EXPECT_EQ(r.events().size(), 2u);
  EXPECT_EQ(other.events().size(), 1u);
  // After DelFd nothing is reported, though the pipe is still readable.
  loop_.DelFd(p[0]);
  loop_.RunOnce(0);
  EXPECT_EQ(other.events().size(), 1u);
  EXPECT_FALSE(loop_.ModFd(p[0], EPOLLIN, &r).ok());  // no longer registered
  loop_.DelFd(p[1]);
  ::close(p[0]);
  ::close(p[1]);
}

TEST_F(EventLoopTest, ReadableFdFromAnotherThreadWakesRunOnce) {
  int p[2];
  ASSERT_EQ(::pipe2(p, O_NONBLOCK | O_CLOEXEC), 0);
  Recorder r;
  ASSERT_TRUE(loop_.AddFd(p[0], EPOLLIN, &r).ok());
  Watchdog dog(&loop_, 5000);
  std::thread writer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ssize_t n = ::write(p[1], "x", 1);
    (void)n;
  });
  loop_.RunOnce(-1);
  writer.join();
  EXPECT_FALSE(dog.fired());
  ASSERT_EQ(r.events().size(), 1u);
  EXPECT_TRUE(r.events()[0] & EPOLLIN);
  ::close(p[1]);  // the write end closed: the read end hangs up
  loop_.RunOnce(0);
  ASSERT_EQ(r.events().size(), 2u);
  EXPECT_TRUE(r.events()[1] & EPOLLHUP);
  loop_.DelFd(p[0]);
  ::close(p[0]);
}

}  // namespace
}  // namespace trove::net
