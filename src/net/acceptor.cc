// Acceptor: the listener thread's EventLoop over the listening sockets.
// Runs on the listener thread (Start/Stop on the server thread; ReleaseSlot
// and SetMaxConnections on any).
#include "net/acceptor.h"

#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <string_view>
#include <utility>

#include "common/check.h"
#include "common/limits.h"

namespace trove::net {

class Acceptor::ListenWatcher final : public IoWatcher {
 public:
  ListenWatcher(Acceptor* a, BoundListener l) : acceptor_(a), l_(std::move(l)) {}
  void OnIoEvent(uint32_t) override { acceptor_->OnReadable(l_); }
  BoundListener& listener() { return l_; }
  int fd() const { return l_.listener.fd; }

 private:
  Acceptor* acceptor_;
  BoundListener l_;
};

Acceptor::Acceptor(const AcceptorOptions& opts)
    : opts_(opts),
      loop_(opts.clock, limits::kAcceptorInboxCapacity),
      retry_timer_([this] { TryResume(); }),
      max_connections_(opts.max_connections) {
  CHECK(opts_.counters != nullptr);
  CHECK(!opts_.workers.empty());
}

Acceptor::~Acceptor() { Stop(); }

void Acceptor::AddListener(BoundListener l) {
  CHECK(!thread_.joinable());
  l.shared_name = std::make_shared<const std::string>(l.listener.name);
  listeners_.push_back(std::make_unique<ListenWatcher>(this, std::move(l)));
}

Status Acceptor::Start() {
  Status s = loop_.Init();
  if (!s.ok()) return s;
  for (auto& w : listeners_) {
    s = loop_.AddFd(w->fd(), EPOLLIN, w.get());
    if (!s.ok()) return s;
  }
  thread_ = std::thread([this] { Run(); });
  return Status::Ok();
}

void Acceptor::Stop() {
  if (thread_.joinable()) {
    loop_.Post([this] { stop_ = true; });
    thread_.join();
  }
  // Closing an fd also takes it out of the epoll set.
  for (auto& w : listeners_) {
    BoundListener& l = w->listener();
    if (l.listener.fd >= 0) ::close(l.listener.fd);
    l.listener.fd = -1;
  }
}

void Acceptor::Run() {
  loop_.BindToThisThread();
  while (!stop_) loop_.RunOnce(-1);
  loop_.Cancel(&retry_timer_);
}

void Acceptor::SetMaxConnections(size_t n) {
  max_connections_.store(n, std::memory_order_relaxed);
  Wake();  // a raised limit frees slots like a close does
}

// Why no wake-up is lost. The acceptor pauses by storing paused_ = true and
// then loading curr_connections (PauseAccepting -> TryResume); a worker frees
// a slot by decrementing curr_connections and then loading paused_. All four
// are seq_cst, so in their single total order one side's store comes before
// the other side's load: either the acceptor sees the freed slot and resumes
// at once, or the worker sees paused_ and wakes it. The wake-up task clears
// wake_posted_ before it re-checks, so a slot freed while a task is queued
// (whose Wake found wake_posted_ already set) is seen by that task's check.
void Acceptor::ReleaseSlot() {
  opts_.counters->curr_connections.fetch_sub(1, std::memory_order_seq_cst);
  Wake();
}

void Acceptor::Wake() {
  if (!paused_.load(std::memory_order_seq_cst)) return;
  if (wake_posted_.exchange(true, std::memory_order_seq_cst)) return;  // invariant 4
  // Never blocks: the inbox holds at most this task and Stop's.
  loop_.Post([this] {
    wake_posted_.store(false, std::memory_order_seq_cst);
    TryResume();
  });
}

bool Acceptor::HasRoom() const {
  return opts_.counters->curr_connections.load(std::memory_order_seq_cst) < max_connections();
}

void Acceptor::PauseAccepting(Pause why) {
  if (pause_ == Pause::kNone) {
    for (auto& w : listeners_) loop_.DelFd(w->fd());
    opts_.counters->listen_disabled.fetch_add(1, std::memory_order_relaxed);
    paused_since_ns_ = loop_.NowNs();
    paused_.store(true, std::memory_order_seq_cst);
  }
  pause_ = why;
  if (why == Pause::kNoFds) {
    loop_.ArmAfter(&retry_timer_, limits::kAcceptRetryMs);
  } else {
    TryResume();  // a slot freed before paused_ was set woke nobody
  }
}

void Acceptor::TryResume() {
  if (pause_ == Pause::kNone) return;
  // Out of fds, only an accept can tell whether one is free again: resume
  // and let AcceptFrom pause again if not.
  if (pause_ == Pause::kFull && !HasRoom()) return;
  for (auto& w : listeners_) CHECK(loop_.AddFd(w->fd(), EPOLLIN, w.get()).ok());
  loop_.Cancel(&retry_timer_);
  int64_t ns = loop_.NowNs() - paused_since_ns_;
  if (ns > 0) {
    opts_.counters->listen_disabled_us.fetch_add(static_cast<uint64_t>(ns) / 1000,
                                                 std::memory_order_relaxed);
  }
  pause_ = Pause::kNone;
  paused_.store(false, std::memory_order_seq_cst);
}

void Acceptor::OnReadable(const BoundListener& l) {
  // Paused by another listener's event earlier in the same epoll batch.
  if (pause_ != Pause::kNone) return;
  Pause why = AcceptFrom(l);
  if (why != Pause::kNone) PauseAccepting(why);
}

Acceptor::Pause Acceptor::AcceptFrom(const BoundListener& l) {
  for (;;) {
    if (!opts_.reject_when_full && !HasRoom()) {
      return Pause::kFull;  // the backlog holds them until a connection closes
    }
    sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    int fd = ::accept4(l.listener.fd, reinterpret_cast<sockaddr*>(&ss), &len,
                       SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EMFILE || errno == ENFILE) return Pause::kNoFds;
      if (errno != EAGAIN && errno != EWOULDBLOCK) {
        std::fprintf(stderr, "accept(%s): errno %d\n", l.listener.name.c_str(), errno);
      }
      return Pause::kNone;
    }
    if (!l.listener.is_unix) (void)SetNoDelay(fd);
    // The limit comes first, before any per-connection work (docs/resp_modes.md section 3).
    if (PortLimit* pl = l.own_limit) {
      if (pl->curr.load(std::memory_order_relaxed) >= pl->max.load(std::memory_order_relaxed)) {
        pl->rejected.fetch_add(1, std::memory_order_relaxed);
        if (!l.reject_reply.empty()) {
          ssize_t w = ::send(fd, l.reject_reply.data(), l.reject_reply.size(), MSG_NOSIGNAL);
          (void)w;
        }
        ::close(fd);
        continue;
      }
    }
    // The port's admission rule (protected mode), after the limit as in
    // Redis; a refused peer is never counted as connected.
    if (std::string_view reply; l.gate != nullptr &&
                                l.gate->Refuse(reinterpret_cast<sockaddr*>(&ss), len,
                                               l.listener.is_unix, &reply)) {
      // A TLS client could not read a plaintext reply: it is just closed.
      if (!reply.empty() && l.tls.holder == nullptr) {
        ssize_t w = ::send(fd, reply.data(), reply.size(), MSG_NOSIGNAL);
        (void)w;
      }
      ::close(fd);
      continue;
    }
    if (PortLimit* pl = l.own_limit) pl->curr.fetch_add(1, std::memory_order_relaxed);
    uint64_t cur = opts_.counters->curr_connections.load(std::memory_order_relaxed);
    if (l.own_limit == nullptr && cur >= max_connections()) {
      // Counted first, so a client that sees the refusal also sees the count.
      opts_.counters->rejected_connections.fetch_add(1, std::memory_order_relaxed);
      if (!l.reject_reply.empty()) {
        ssize_t w = ::send(fd, l.reject_reply.data(), l.reject_reply.size(), MSG_NOSIGNAL);
        (void)w;
      }
      ::close(fd);
      continue;
    }
    if (l.own_limit == nullptr) opts_.counters->curr_connections.fetch_add(1, std::memory_order_relaxed);
    opts_.counters->total_connections.fetch_add(1, std::memory_order_relaxed);
    NewConn c;
    c.own_limit = l.own_limit;
    c.fd = fd;
    c.id = ++next_id_;
    c.factory = l.factory;
    c.is_unix = l.listener.is_unix;
    c.peer = l.listener.is_unix ? l.listener.name.substr(5)
                                : FormatSockaddr(reinterpret_cast<sockaddr*>(&ss), len);
    c.listen_name = l.shared_name;
    if (l.tls.holder != nullptr) {  // one lock per accept, none per request
      c.tls = l.tls.holder->current();
      c.tls_verify = l.tls.verify_live != nullptr ? l.tls.verify_live->load(std::memory_order_relaxed)
                                                   : l.tls.verify;
    }
    Worker* w = opts_.workers[WorkerIndexFor(c.id, opts_.workers.size())];
    w->SendNewConn(std::move(c));
  }
}

}  // namespace trove::net
