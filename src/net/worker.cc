// Worker loop: epoll over the worker's connections, its new-connection channel
// and its inbox; connection lifecycle, writes, idle check and housekeeping.
// Reading and parsing: worker_input.cc. Runs on the worker thread
// (Start/Stop on the server thread).
#include "net/worker.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <utility>

#include "common/check.h"
#include "common/limits.h"

namespace trove::net {
namespace {

thread_local Worker* tls_worker = nullptr;

constexpr int64_t kNanosPerSec = 1000000000;

}  // namespace

// --- Connection: the handler's view of its connection ---

void Connection::OnIoEvent(uint32_t events) { worker->OnEvent(this, events); }
int Connection::worker_id() const { return worker->id(); }
void Connection::ServeOthersWhileBusy() { worker->ServeWhileBusy(this); }
EventLoop& Connection::loop() { return worker->loop(); }
WorkerGroup& Connection::group() { return worker->group(); }

void Connection::Resume() {
  if (!suspended_) return;
  suspended_ = false;
  if (!closed && in.size() > 0) worker->QueueReady(this);
}

void Connection::OutputAdded() {
  if (!closed) worker->QueueFlush(this);
}

int64_t Connection::IdleNs() const { return worker->Now() - last_active_ns; }

void Connection::CloseSoon() {
  if (closed || close_requested) return;
  close_requested = true;
  worker->deferred_close_.push_back(conn_id);
}

// --- Worker ---

Worker::Worker(const WorkerOptions& opts)
    : opts_(opts),
      clock_(opts.clock ? opts.clock : SystemClock::Default()),
      counters_(opts.counters),
      loop_(clock_, limits::kWorkerInboxCapacity),
      accept_ch_(limits::kAcceptChannelCapacity),
      idle_timer_([this] { CheckIdle(); }),
      housekeeping_timer_([this] { Housekeeping(); }) {
  CHECK(counters_ != nullptr);
  CHECK(opts_.group != nullptr);
}

Worker::~Worker() { Stop(); }

Worker* Worker::Current() { return tls_worker; }

Status Worker::Start() {
  Status s = loop_.Init();
  if (!s.ok()) return s;
  s = loop_.AddFd(accept_ch_.fd(), EPOLLIN, &accept_watcher_);
  if (!s.ok()) return s;
  thread_ = std::thread([this] { Run(); });
  while (!initialised_.load(std::memory_order_acquire)) {
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  return Status::Ok();
}

void Worker::Stop() {
  if (!thread_.joinable()) return;
  Post([this] { stop_ = true; });
  thread_.join();
  // Sockets still in the handoff channel never became connections.
  std::vector<NewConn> left;
  accept_ch_.Drain(&left);
  for (NewConn& c : left) {
    ::close(c.fd);
    ReleaseSlot(c.own_limit);
  }
}

void Worker::SendNewConn(NewConn c) { accept_ch_.Send(std::move(c)); }

void Worker::Run() {
  tls_worker = this;
  loop_.BindToThisThread();
  loop_.SetAfterIo(&parse_arrived_);
  for (ProtocolFactory* f : opts_.factories) f->InitWorker(opts_.id);
  initialised_.store(true, std::memory_order_release);
  if (opts_.idle_timeout_s > 0) loop_.ArmAfter(&idle_timer_, 1000);
  loop_.ArmAfter(&housekeeping_timer_, limits::kHousekeepingMs);
  while (!stop_) {
    graveyard_.clear();  // invariant 2: nothing refers to these any more
    turn_now_ns_ = 0;
    // An armed fence waits for this turn's epoll_wait, not for new input.
    loop_.RunOnce(ready_.empty() && fences_armed_.empty() ? -1 : 0);  // parses arrived_ too
    ProcessReady();
    // Replies first: a connection closed by request still gets what it was
    // sent before the close (its own "close" reply included).
    FlushQueued();
    RunDeferredCloses();
    if (!fences_armed_.empty() || !fences_new_.empty()) AnswerFences();
  }
  loop_.Cancel(&idle_timer_);
  loop_.Cancel(&housekeeping_timer_);
  std::vector<Connection*> all;
  all.reserve(conns_.size());
  for (auto& [id, c] : conns_) all.push_back(c.get());
  for (Connection* c : all) {
    c->close_reason = Connection::CloseReason::kShutdown;
    Close(c);
  }
  graveyard_.clear();
  ready_.clear();
  arrived_.clear();
  flush_.clear();
  tls_worker = nullptr;
}

Connection* Worker::Find(uint64_t conn_id) {
  auto it = conns_.find(conn_id);
  if (it == conns_.end() || it->second->closed) return nullptr;
  return it->second.get();
}

std::vector<ServerServices::ConnInfo> Worker::DescribeAll() const {
  std::vector<ServerServices::ConnInfo> mine;
  mine.reserve(conns_.size());
  for (auto& [id, c] : conns_) mine.push_back(Describe(*c));
  return mine;
}

ClientInfo Worker::ClientInfoOf(Connection& c) {
  ClientInfo ci;
  ci.id = c.conn_id;
  ci.addr = c.peer;
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  if (!c.is_unix && ::getsockname(c.fd, reinterpret_cast<sockaddr*>(&ss), &len) == 0) {
    char host[INET6_ADDRSTRLEN] = {0};
    int port = 0;
    if (ss.ss_family == AF_INET) {
      auto* a = reinterpret_cast<sockaddr_in*>(&ss);
      ::inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
      port = ntohs(a->sin_port);
      ci.laddr = std::string(host) + ":" + std::to_string(port);
    } else if (ss.ss_family == AF_INET6) {
      auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
      ::inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
      port = ntohs(a->sin6_port);
      ci.laddr = std::string(host) + ":" + std::to_string(port);
    }
  } else {
    ci.laddr = *c.listen_name;
  }
  ci.fd = c.fd;
  const int64_t now = Now();
  ci.age_s = (now - c.created_ns) / kNanosPerSec;
  ci.idle_s = (now - c.last_active_ns) / kNanosPerSec;
  ci.qbuf = c.in.size();
  ci.qbuf_free = c.in.capacity() > c.in.size() ? c.in.capacity() - c.in.size() : 0;
  ci.rbs = c.in.capacity();
  ci.omem = c.out.pending_bytes();
  ci.oll = c.out.empty() ? 0 : 1;
  ci.tot_mem = c.in.capacity() + ci.omem + sizeof(Connection);
  if (c.epoll_mask & EPOLLIN) ci.events += "r";
  if (c.epoll_mask & EPOLLOUT) ci.events += "w";
  if (c.handler) c.handler->DescribeClient(&ci);
  return ci;
}

std::vector<ClientInfo> Worker::ClientInfos() {
  std::vector<ClientInfo> out;
  out.reserve(conns_.size());
  for (auto& [id, c] : conns_) {
    if (!c->closed) out.push_back(ClientInfoOf(*c));
  }
  return out;
}

bool Worker::RequestClose(uint64_t conn_id) {
  Connection* c = Find(conn_id);
  if (c == nullptr) return false;
  // Never close here: this may run inside a handler's OnData.
  c->CloseSoon();
  return true;
}

void Worker::RunIdleCheckNow() {
  if (opts_.idle_timeout_s > 0) loop_.ArmAfter(&idle_timer_, 0);
}

void Worker::AcceptNew() {
  new_batch_.clear();
  accept_ch_.Drain(&new_batch_, 64);
  for (NewConn& nc : new_batch_) {
    auto c = std::make_unique<Connection>(this);
    c->fd = nc.fd;
    c->conn_id = nc.id;
    c->is_unix = nc.is_unix;
    c->peer = std::move(nc.peer);
    DCHECK(nc.listen_name != nullptr);  // the Acceptor's AddListener set it
    c->listen_name = std::move(nc.listen_name);
    c->own_limit = nc.own_limit;
    c->last_active_ns = TurnNow();
    c->created_ns = c->last_active_ns;
    if (nc.tls) {
      // The handshake first (on this thread, non-blocking: ContinueHandshake);
      // the handler is made once it is done.
      c->tls = TlsConn::Accept(std::move(nc.tls), c->fd, nc.tls_verify);
      c->pending_factory = nc.factory;
    }
    if ((c->pending_factory != nullptr && c->tls == nullptr) ||  // SSL_new failed
        !loop_.AddFd(c->fd, EPOLLIN, c.get()).ok()) {
      ::close(c->fd);
      ReleaseSlot(nc.own_limit);
      continue;
    }
    c->epoll_mask = EPOLLIN;
    Connection* conn = c.get();
    if (opts_.log != nullptr && opts_.log->Wants(kLogConnevents)) LogConnEvent(*c, true);
    if (Verbose(2)) {
      std::fprintf(stderr, "<%llu new client connection from %s on %s\n",
                   static_cast<unsigned long long>(c->conn_id), c->peer.c_str(),
                   c->listen_name->c_str());
    }
    counters_->connection_structures.fetch_add(1, std::memory_order_relaxed);
    num_conns_.fetch_add(1, std::memory_order_relaxed);
    conns_.emplace(c->conn_id, std::move(c));
    if (conn->tls == nullptr) Adopt(conn, nc.factory);
  }
  new_batch_.clear();
}

bool Worker::Adopt(Connection* c, ProtocolFactory* f) {
  ConnInfoView view;
  view.id = c->conn_id;
  view.control = c;
  view.worker_id = opts_.id;
  view.fd = c->fd;
  view.is_unix = c->is_unix;
  view.peer = c->peer;
  view.privileged = c->own_limit != nullptr && c->own_limit->privileged;
  if (c->tls != nullptr) {
    view.tls = true;
    view.tls_verified = c->tls->peer_verified();
    if (view.tls_verified) view.tls_peer_cn = c->tls->PeerCommonName();
  } else {
    // Arrival stamps need recvmsg on the socket; TLS reads go through OpenSSL.
    c->stamps_flag = f->ArrivalStampsFlag();
  }
  c->pending_factory = nullptr;
  c->handler = f->Create(opts_.id, view);
  if (!c->handler) {
    c->close_reason = Connection::CloseReason::kError;
    Close(c);
    return false;
  }
  return true;
}

void Worker::OnEvent(Connection* c, uint32_t events) {
  if (c->closed) return;
  if (events & EPOLLERR) {
    c->close_reason = Connection::CloseReason::kError;
    Close(c);
    return;
  }
  if (c->handler == nullptr) {  // a TLS handshake under way
    ContinueHandshake(c);
    return;
  }
  if (events & EPOLLOUT) {
    c->write_blocked = false;
    AfterFlush(c, FlushOut(c), Connection::CloseReason::kError);
    if (c->closed) return;
  }
  if (events & (EPOLLIN | EPOLLHUP)) {
    if (c->read_paused || c->closing) {
      // A peer that hung up while we are not reading it: nobody will read
      // what is queued either.
      if ((events & EPOLLHUP) && !c->closed) Close(c);
      return;
    }
    Serve(c, true);
  }
}

void Worker::QueueFlush(Connection* c) {
  if (c->flush_queued) return;
  c->flush_queued = true;
  flush_.push_back(c);
}

void Worker::FlushQueued() {
  // Close() adds nothing to flush_, and closed connections stay allocated
  // until the next turn (graveyard_), so walking the list is safe.
  for (Connection* c : flush_) {
    c->flush_queued = false;
    if (c->closed) continue;
    // A blocked socket is retried on EPOLLOUT (OnEvent), not every turn.
    // A failed write here keeps the reason c already has.
    const bool flushed = c->out.empty() || c->write_blocked || FlushOut(c);
    AfterFlush(c, flushed, c->close_reason);
  }
  flush_.clear();
}

bool Worker::FlushOut(Connection* c) {
  int64_t w = c->tls != nullptr ? FlushTls(c) : c->out.Flush(c->fd);
  if (w < 0) return false;
  c->write_blocked = !c->out.empty();
  if (!c->write_blocked && c->handler) c->handler->OnOutputDrained();
  bytes_written_.store(bytes_written_.load(std::memory_order_relaxed) + static_cast<uint64_t>(w),
                       std::memory_order_relaxed);
  return true;
}

void Worker::AfterFlush(Connection* c, bool flushed, Connection::CloseReason if_failed) {
  if (!flushed) {
    c->close_reason = if_failed;
    Close(c);
  } else if (c->closing && c->out.empty()) {
    Close(c);
  } else {
    AfterIo(c);
  }
}

void Worker::AfterIo(Connection* c) {
  uint32_t mask = 0;
  if (!c->closing) {
    if (c->out.pending_bytes() > limits::kOutputSoftLimit) {
      if (!c->read_paused) {
        c->read_paused = true;
        counters_->read_paused.fetch_add(1, std::memory_order_relaxed);
      }
    } else if (c->read_paused) {
      c->read_paused = false;
      // Input buffered while paused was never parsed.
      if (c->in.size() > 0) QueueReady(c);
    }
    if (!c->read_paused) mask |= EPOLLIN;
  }
  if (!c->out.empty()) mask |= EPOLLOUT;
  SetMask(c, mask);
}

void Worker::SetMask(Connection* c, uint32_t mask) {
  if (mask == c->epoll_mask) return;
  CHECK(loop_.ModFd(c->fd, mask, c).ok());
  c->epoll_mask = mask;
}

void Worker::Close(Connection* c) {
  if (c->closed) return;
  c->closed = true;
  if (Verbose(2)) {
    std::fprintf(stderr, "<%llu connection closed.\n", static_cast<unsigned long long>(c->conn_id));
  }
  if (opts_.log != nullptr && opts_.log->Wants(kLogConnevents)) LogConnEvent(*c, false);
  loop_.DelFd(c->fd);
  c->out.Clear();  // runs the releasers of values still referenced
  // The handler goes before the socket: a peer that has seen EOF must find
  // the connection gone everywhere (e.g. a tracking client redirecting to
  // it sees tracking-redir-broken, not a message lost in between).
  c->handler.reset();
  c->tls.reset();
  ::close(c->fd);
  c->fd = -1;
  ReleaseSlot(c->own_limit);
  counters_->connection_structures.fetch_sub(1, std::memory_order_relaxed);
  num_conns_.fetch_sub(1, std::memory_order_relaxed);
  auto it = conns_.find(c->conn_id);
  CHECK(it != conns_.end());
  graveyard_.push_back(std::move(it->second));
  conns_.erase(it);
}

void Worker::LogConnEvent(const Connection& c, bool opened) {
  // memcached's conn_new / conn_close lines: rip rport transport [reason] cfd.
  std::string_view ip = "unix";
  unsigned port = 0;
  if (!c.is_unix) {
    std::string_view p = c.peer;
    const size_t colon = p.rfind(':');
    ip = p.substr(0, colon);
    if (colon != std::string_view::npos) port = static_cast<unsigned>(std::atoi(c.peer.c_str() + colon + 1));
    if (ip.size() >= 2 && ip.front() == '[' && ip.back() == ']') ip = ip.substr(1, ip.size() - 2);
  }
  static constexpr const char* kReasons[] = {"error", "normal", "idle_timeout", "shutdown"};
  char buf[160];
  int n;
  if (opened) {
    n = std::snprintf(buf, sizeof(buf), "type=conn_new rip=%.*s rport=%u transport=%s cfd=%d",
                      static_cast<int>(ip.size()), ip.data(), port, c.is_unix ? "local" : "tcp", c.fd);
  } else {
    n = std::snprintf(buf, sizeof(buf),
                      "type=conn_close rip=%.*s rport=%u transport=%s reason=%s cfd=%d",
                      static_cast<int>(ip.size()), ip.data(), port, c.is_unix ? "local" : "tcp",
                      kReasons[static_cast<int>(c.close_reason)], c.fd);
  }
  if (n > 0) opts_.log->Log(kLogConnevents, std::string_view(buf, std::min<size_t>(static_cast<size_t>(n), sizeof(buf) - 1)));
}

void Worker::ReleaseSlot(PortLimit* own) {
  if (own != nullptr) {  // a port with its own limit: never pauses the acceptor
    own->curr.fetch_sub(1, std::memory_order_relaxed);
    return;
  }
  if (opts_.release_slot) {
    opts_.release_slot();
  } else {
    counters_->curr_connections.fetch_sub(1, std::memory_order_relaxed);
  }
}

void Worker::RunDeferredCloses() {
  if (deferred_close_.empty()) return;
  std::vector<uint64_t> ids;
  ids.swap(deferred_close_);
  for (uint64_t id : ids) {
    auto it = conns_.find(id);
    if (it == conns_.end()) continue;
    Connection* c = it->second.get();
    // Best effort, never waiting: replies queued before the close go out.
    if (!c->closed && !c->out.empty()) FlushOut(c);
    Close(c);
  }
}

void Worker::CheckIdle() {
  int64_t now = Now();
  int64_t limit = opts_.idle_timeout_s * kNanosPerSec;
  std::vector<Connection*> idle;
  for (auto& [id, c] : conns_) {
    if (now - c->last_active_ns > limit && !(c->handler && c->handler->IdleExempt())) {
      idle.push_back(c.get());
    }
  }
  for (Connection* c : idle) {
    counters_->idle_kicks.fetch_add(1, std::memory_order_relaxed);
    c->close_reason = Connection::CloseReason::kIdleTimeout;
    Close(c);
  }
  loop_.ArmAfter(&idle_timer_, 1000);
}

void Worker::Housekeeping() {
  const int64_t now = Now();
  const size_t slot = static_cast<size_t>(now / kNanosPerSec) % limits::kBufferPeakSlots;
  // As Redis's clientsCron: zero the next second's slot, so that when the
  // clock reaches it, it holds only what that second saw.
  const size_t next = (slot + 1) % limits::kBufferPeakSlots;
  peak_in_[next].store(0, std::memory_order_relaxed);
  peak_out_[next].store(0, std::memory_order_relaxed);
  uint64_t in_max = peak_in_[slot].load(std::memory_order_relaxed);
  uint64_t out_max = peak_out_[slot].load(std::memory_order_relaxed);
  const int64_t handshake_limit = opts_.tls_handshake_timeout_ms * 1000000;
  for (auto& [id, c] : conns_) {
    if (c->closed) continue;
    if (c->handler == nullptr && c->tls != nullptr && !c->close_requested &&
        now - c->created_ns > handshake_limit) {
      // A stalled handshake (docs/adr/0008-tls.md): closed at the turn's end.
      counters_->ssl_handshake_errors.fetch_add(1, std::memory_order_relaxed);
      c->close_reason = Connection::CloseReason::kError;
      c->CloseSoon();
      continue;
    }
    if (c->in.capacity() > in_max) in_max = c->in.capacity();
    if (c->out.pending_bytes() > out_max) out_max = c->out.pending_bytes();
    // Closes go through CloseSoon (deferred), so conns_ does not change here.
    if (c->handler && !c->close_requested) c->handler->OnHousekeeping();
  }
  peak_in_[slot].store(in_max, std::memory_order_relaxed);
  peak_out_[slot].store(out_max, std::memory_order_relaxed);
  loop_.ArmAfter(&housekeeping_timer_, limits::kHousekeepingMs);
}

void Worker::RecentMaxBuffers(uint64_t* in, uint64_t* out) const {
  uint64_t i = 0, o = 0;
  for (size_t s = 0; s < limits::kBufferPeakSlots; ++s) {
    i = std::max(i, peak_in_[s].load(std::memory_order_relaxed));
    o = std::max(o, peak_out_[s].load(std::memory_order_relaxed));
  }
  *in = i;
  *out = o;
}

ServerServices::ConnInfo Worker::Describe(const Connection& c) const {
  ServerServices::ConnInfo ci;
  ci.id = c.conn_id;
  ci.fd = c.fd;
  ci.addr = (c.is_unix ? "unix:" : "tcp:") + c.peer;
  ci.listen_addr = *c.listen_name;
  if (c.closing || c.close_requested) {
    ci.state = "conn_closing";
  } else if (c.read_paused) {
    ci.state = "conn_mwrite";
  } else if (c.handler != nullptr && c.handler->BytesWanted() > 0) {
    ci.state = "conn_nread";  // a request (a value block) still arriving
  } else if (c.in.size() > 0 || c.suspended()) {
    // Includes the connection asking (suspended while the workers answer).
    ci.state = "conn_parse_cmd";
  } else if (!c.out.empty()) {
    ci.state = "conn_mwrite";
  } else {
    ci.state = "conn_waiting";
  }
  ci.secs_since_last_cmd = (Now() - c.last_active_ns) / kNanosPerSec;
  return ci;
}

}  // namespace trove::net
