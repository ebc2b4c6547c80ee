// A worker's input: one read per readiness event (plain, or with the
// kernel's arrival stamp), parsing in arrival order, and the ready list of
// connections whose input is parsed again later in the turn. Worker thread
// only (docs/THREADS.md, "Workers").
#include <sys/socket.h>
#include <sys/uio.h>

#include <cerrno>
#include <cstring>
#include <ctime>

#include "common/check.h"
#include "common/clock.h"
#include "common/limits.h"
#include "net/worker.h"

namespace trove::net {
namespace {

// Unparsed input a connection may hold when its handler has not said it
// needs that much (BytesWanted). Protocols enforce tighter limits of their
// own (line length, bulk length); this only bounds a handler that never
// consumes, as Redis's client-query-buffer-limit (1 GiB) does, but lower.
constexpr size_t kMaxUnparsedInput = 256u << 20;

}  // namespace

void Worker::StartStamps(Connection* c) {
  int on = 1;
  c->rx_stamps = ::setsockopt(c->fd, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof on) == 0;
  c->stamps_flag = nullptr;  // asked once
}

ssize_t Worker::RecvPlain(Connection* c) {
  ssize_t n;
  do {
    n = ::recv(c->fd, c->in.write_ptr(), c->in.writable(), 0);  // recv: no file-position lock
  } while (n < 0 && errno == EINTR);
  return n;
}

// recvmsg with SO_TIMESTAMPNS's control message: the kernel's receive time
// of the newest data read (TCP gives the last segment's). A read without a
// stamp (none came with the data) takes the current time.
ssize_t Worker::RecvStamped(Connection* c) {
  iovec iov{c->in.write_ptr(), c->in.writable()};
  alignas(cmsghdr) char ctl[CMSG_SPACE(sizeof(timespec))];
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  ssize_t n;
  do {
    msg.msg_control = ctl;
    msg.msg_controllen = sizeof ctl;
    n = ::recvmsg(c->fd, &msg, 0);
  } while (n < 0 && errno == EINTR);
  if (n <= 0) return n;
  int64_t at = 0;
  for (cmsghdr* cm = CMSG_FIRSTHDR(&msg); cm != nullptr; cm = CMSG_NXTHDR(&msg, cm)) {
    if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_TIMESTAMPNS) {
      timespec ts;
      std::memcpy(&ts, CMSG_DATA(cm), sizeof ts);
      at = int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
    }
  }
  if (at == 0) at = SystemClock::Default()->UnixMicros() * 1000;
  c->arrival_ns = at;
  return n;
}

bool Worker::ReadOnce(Connection* c) {
  size_t have = c->in.size();
  size_t need = have < limits::kReadChunk ? limits::kReadChunk - have : 0;
  size_t wanted = c->handler->BytesWanted();
  if (wanted > have && wanted - have > need) need = wanted - have;  // a large value
  if (need < 1024) need = 1024;
  c->in.Reserve(need);
  if (c->stamps_flag != nullptr && c->stamps_flag->load(std::memory_order_relaxed))
    StartStamps(c);
  ssize_t n = c->tls != nullptr ? RecvTls(c) : c->rx_stamps ? RecvStamped(c) : RecvPlain(c);
  if (n <= 0) c->in.ReleaseIfEmpty();  // nothing read: an idle connection holds no buffer
  if (n == 0) {
    Close(c);  // EOF: the client is gone; what it did not read is dropped
    return false;
  }
  if (n < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK) return false;
    c->close_reason = Connection::CloseReason::kError;
    Close(c);
    return false;
  }
  if (c->tls == nullptr) c->in.Commit(static_cast<size_t>(n));  // RecvTls commits its own
  c->last_active_ns = TurnNow();
  bytes_read_.store(bytes_read_.load(std::memory_order_relaxed) + static_cast<uint64_t>(n),
                    std::memory_order_relaxed);
  return true;
}

// Nested in self's OnData (worker.h): no timers, tasks or fences run, and
// only handlers that ServesWhileBusy are read; the others stay ready in
// epoll (level-triggered) for the next turn.
void Worker::ServeWhileBusy(Connection* self) {
  // Replies this turn made before the long call began would wait for its
  // end: they go out now (the outer FlushQueued then finds them written).
  for (Connection* c : flush_) {
    if (c != self && !c->closed && !c->out.empty() && !c->write_blocked)
      AfterFlush(c, FlushOut(c), Connection::CloseReason::kError);
  }
  epoll_event events[64];
  const int n = loop_.PollNow(events, 64);
  nested_ = true;  // Serve parses at once (no arrival-order deferral)
  for (int i = 0; i < n; ++i) {
    auto* c = dynamic_cast<Connection*>(static_cast<IoWatcher*>(events[i].data.ptr));
    if (c == nullptr || c == self || c->closed || !c->handler || !c->handler->ServesWhileBusy())
      continue;
    OnEvent(c, events[i].events);
    // The outer turn flushes much later: the replies go out now (c stays
    // on flush_ if queued; FlushQueued then finds nothing to write).
    if (!c->closed && !c->out.empty() && !c->write_blocked)
      AfterFlush(c, FlushOut(c), Connection::CloseReason::kError);
  }
  nested_ = false;
}

void Worker::Serve(Connection* c, bool from_socket) {
  if (c->closed || c->closing || c->read_paused || c->close_requested) return;
  if (from_socket) {
    if (!ReadOnce(c)) return;
    if (c->rx_stamps && !nested_) {  // parsed after this turn's reads, in arrival order
      arrived_.push_back(c);
      return;
    }
  }
  Parse(c, from_socket);
}

void Worker::ParseArrived() {
  if (arrived_.empty()) return;
  // Level-triggered epoll can list a socket before one whose data reached
  // the kernel first (a socket reported last turn stays at the head of the
  // ready list), so the turn's reads are parsed by their kernel stamps.
  // Insertion sort: a turn's reads are few and almost in order, and it
  // allocates nothing (std::stable_sort takes a buffer); equal stamps keep
  // epoll's order.
  for (size_t i = 1; i < arrived_.size(); ++i) {
    Connection* c = arrived_[i];
    size_t j = i;
    for (; j > 0 && arrived_[j - 1]->arrival_ns > c->arrival_ns; --j) arrived_[j] = arrived_[j - 1];
    arrived_[j] = c;
  }
  arrived_swap_.clear();
  arrived_swap_.swap(arrived_);
  for (Connection* c : arrived_swap_) {
    // Closed ones stay in the graveyard until the next turn (invariant 2).
    if (!c->closed && !c->closing && !c->close_requested) Parse(c, true);
  }
  arrived_swap_.clear();
}

void Worker::Parse(Connection* c, bool from_socket) {
  size_t consumed = 0;
  if (c->suspended()) {
    // Invariant 4: keep what arrives, parse nothing. A suspended client that
    // keeps sending is bounded like one whose handler never consumes.
    if (c->in.size() > kMaxUnparsedInput) Close(c);
    return;
  }
  if (c->in.size() > 0) {
    consumed = c->handler->OnData(c->in.data(), c->in.size(), c->out);
    DCHECK(consumed <= c->in.size());
    c->in.Consume(consumed);
  }
  if (!from_socket && consumed > 0) {
    counters_->conn_yields.fetch_add(1, std::memory_order_relaxed);
  }
  if (consumed == 0 && c->in.size() > kMaxUnparsedInput &&
      c->handler->BytesWanted() < c->in.size()) {
    Close(c);
    return;
  }
  if (c->handler->WantsClose()) {
    if (c->handler->CloseIsError()) c->close_reason = Connection::CloseReason::kError;
    c->closing = true;
    c->in.Consume(c->in.size());
  }
  if (c->closing && c->out.empty()) {
    Close(c);
    return;
  }
  c->in.ReleaseIfEmpty();  // everything parsed: the block goes back to the pool
  if (c->out.empty()) {
    AfterIo(c);
  } else {
    QueueFlush(c);  // AfterIo runs once the output is written
  }
  // The handler stopped early (-R) with complete requests possibly left:
  // parse again after the worker's other ready connections.
  if (consumed > 0 && c->in.size() > 0 && !c->read_paused && !c->closing && !c->suspended()) {
    QueueReady(c);
  }
}

void Worker::QueueReady(Connection* c) {
  if (c->in_ready) return;
  c->in_ready = true;
  ready_.push_back(c);
}

void Worker::ProcessReady() {
  if (ready_.empty()) return;
  ready_swap_.clear();
  ready_swap_.swap(ready_);
  for (Connection* c : ready_swap_) {
    // Closed connections stay in the graveyard until the next turn, so the
    // pointer is still valid here.
    c->in_ready = false;
    if (!c->closed) Serve(c, false);
  }
  ready_swap_.clear();
}

}  // namespace trove::net
