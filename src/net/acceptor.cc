// Acceptor loop. Runs on the listener thread (Start/Stop on the server thread).
#include "net/acceptor.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <utility>

#include "common/check.h"

namespace trove::net {

Acceptor::Acceptor(const AcceptorOptions& opts)
    : opts_(opts), max_connections_(opts.max_connections) {
  CHECK(opts_.counters != nullptr);
  CHECK(!opts_.workers.empty());
}

Acceptor::~Acceptor() { Stop(); }

void Acceptor::AddListener(BoundListener l) { listeners_.push_back(std::move(l)); }

Status Acceptor::Start() {
  epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd_ < 0) return Status::FromErrno("epoll_create1");
  stop_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (stop_fd_ < 0) return Status::FromErrno("eventfd");
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.ptr = nullptr;
  if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, stop_fd_, &ev) < 0) {
    return Status::FromErrno("epoll_ctl");
  }
  for (BoundListener& l : listeners_) {
    ev.data.ptr = &l;
    if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, l.listener.fd, &ev) < 0) {
      return Status::FromErrno("epoll_ctl(listener)");
    }
  }
  thread_ = std::thread([this] { Run(); });
  return Status::Ok();
}

void Acceptor::Stop() {
  if (thread_.joinable()) {
    stopping_.store(true, std::memory_order_relaxed);
    uint64_t one = 1;
    ssize_t r = ::write(stop_fd_, &one, sizeof(one));
    (void)r;
    thread_.join();
  }
  for (BoundListener& l : listeners_) {
    if (l.listener.fd >= 0) ::close(l.listener.fd);
    l.listener.fd = -1;
  }
  if (epoll_fd_ >= 0) ::close(epoll_fd_);
  if (stop_fd_ >= 0) ::close(stop_fd_);
  epoll_fd_ = stop_fd_ = -1;
}

void Acceptor::Run() {
  epoll_event events[16];
  bool backoff = false;
  while (!stopping_.load(std::memory_order_relaxed)) {
    // Out of fds (or full without maxconns_fast): leave the listeners alone briefly (they stay
    // readable, so a level-triggered wait would spin) and retry, as memcached does.
    if (backoff) {
      epoll_event stop_ev;
      int w = ::epoll_wait(epoll_fd_, &stop_ev, 1, 10);
      (void)w;
      backoff = false;
    }
    int n = ::epoll_wait(epoll_fd_, events, 16, -1);
    for (int i = 0; i < n; ++i) {
      auto* l = static_cast<BoundListener*>(events[i].data.ptr);
      if (l == nullptr) continue;  // stop_fd_
      if (AcceptFrom(*l)) {
        backoff = true;
        opts_.counters->listen_disabled.fetch_add(1, std::memory_order_relaxed);
      }
    }
  }
}

bool Acceptor::AcceptFrom(const BoundListener& l) {
  for (;;) {
    if (!opts_.reject_when_full &&
        opts_.counters->curr_connections.load(std::memory_order_relaxed) >= max_connections()) {
      return true;  // the backlog holds them until a connection closes
    }
    sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    int fd = ::accept4(l.listener.fd, reinterpret_cast<sockaddr*>(&ss), &len,
                       SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EMFILE || errno == ENFILE) return true;
      if (errno != EAGAIN && errno != EWOULDBLOCK) {
        std::fprintf(stderr, "accept(%s): errno %d\n", l.listener.name.c_str(), errno);
      }
      return false;
    }
    if (!l.listener.is_unix) (void)SetNoDelay(fd);
    // The limit comes first, before any per-connection work (seed 002).
    uint64_t cur = opts_.counters->curr_connections.load(std::memory_order_relaxed);
    if (cur >= max_connections()) {
      // Counted first, so a client that sees the refusal also sees the count.
      opts_.counters->rejected_connections.fetch_add(1, std::memory_order_relaxed);
      if (!l.reject_reply.empty()) {
        ssize_t w = ::send(fd, l.reject_reply.data(), l.reject_reply.size(), MSG_NOSIGNAL);
        (void)w;
      }
      ::close(fd);
      continue;
    }
    opts_.counters->curr_connections.fetch_add(1, std::memory_order_relaxed);
    opts_.counters->total_connections.fetch_add(1, std::memory_order_relaxed);
    NewConn c;
    c.fd = fd;
    c.id = ++next_id_;
    c.factory = l.factory;
    c.is_unix = l.listener.is_unix;
    c.peer = l.listener.is_unix ? l.listener.name.substr(5)
                                : FormatSockaddr(reinterpret_cast<sockaddr*>(&ss), len);
    c.listen_name = l.listener.name;
    Worker* w = opts_.workers[WorkerIndexFor(c.id, opts_.workers.size())];
    w->SendNewConn(std::move(c));
  }
}

}  // namespace trove::net
