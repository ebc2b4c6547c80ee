// Backend sockets: connect, validate, pipeline, fail and retry, as
// memcached's proxy_network.c behaves (see backend.h).
#include "proxy/backend.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cmath>
#include <algorithm>
#include <cstring>

#include "protocol/memcache/watch_log.h"

namespace trove::proxy {
namespace {

constexpr size_t kReadChunk = 16 * 1024;
constexpr size_t kMaxRbufLog = 100;  // memcached's MAX_RBUF_READ

std::atomic<bool> g_shutdown{false};

int64_t Ms(double seconds) { return static_cast<int64_t>(std::llround(seconds * 1000.0)); }

// The bytes of a text get reply's VALUE blocks that have fully arrived:
// memcached's parser has consumed them when a reply times out waiting for
// its END, so its log shows only what follows.
size_t ConsumedValues(std::string_view rbuf) {
  size_t off = 0;
  while (off < rbuf.size()) {
    memcache::ReplyElement e;
    size_t used = 0;
    if (memcache::ParseReplyElement(rbuf.data() + off, rbuf.size() - off, &e, &used) !=
            memcache::ReplyStatus::kOk ||
        e.kind != memcache::ReplyKind::kValue) {
      break;
    }
    off += used;
  }
  return off;
}

}  // namespace

void RunOn(net::EventLoop* loop, net::Task fn) {
  if (loop->OnOwnerThread()) {
    fn();
  } else {
    loop->Post(std::move(fn));
  }
}

void SetProxyShutdown() { g_shutdown.store(true); }

namespace {
// Released backends of one loop thread, deleted by a timer: a task runs
// inside the loop's dispatch of one epoll batch, which may still hold an
// event for the backend's socket, while timers run after the batch.
struct Graveyard {
  std::vector<Backend*> dead;
  net::Timer timer{[this] {
    std::vector<Backend*> d;
    d.swap(dead);
    for (Backend* b : d) delete b;
  }};
};
thread_local Graveyard tl_graveyard;
}  // namespace

std::shared_ptr<Backend> MakeBackend(std::shared_ptr<const BackendSpec> spec, net::EventLoop* loop,
                                     ProxyShared* shared) {
  return std::shared_ptr<Backend>(new Backend(std::move(spec), loop, shared), [loop](Backend* b) {
    if (g_shutdown.load()) {
      delete b;
      return;
    }
    loop->Post([b, loop] {
      b->CloseSockets();  // later events of this batch find fd < 0
      tl_graveyard.dead.push_back(b);
      if (!tl_graveyard.timer.armed()) loop->ArmAfter(&tl_graveyard.timer, 0);
    });
  });
}

void Backend::CloseSockets() {
  for (auto& c : conns_) {
    loop_->Cancel(&c->timer);
    Close(c.get());
  }
}

void CompleteOp(OpPtr op) {
  if (g_shutdown.load(std::memory_order_relaxed)) return;
  net::EventLoop* origin = op->origin;
  if (origin == nullptr || origin->OnOwnerThread()) {
    BackendOp* raw = op.get();
    if (raw->done) raw->done(raw);
    return;
  }
  origin->Post([op = std::move(op)] {
    if (op->done) op->done(op.get());
  });
}

Backend::Backend(std::shared_ptr<const BackendSpec> spec, net::EventLoop* loop, ProxyShared* shared)
    : spec_(std::move(spec)), loop_(loop), shared_(shared) {
  const int n = spec_->opts.connections < 1 ? 1 : spec_->opts.connections;
  for (int i = 0; i < n; ++i) conns_.push_back(std::make_unique<Conn>(this));
  shared_->counters().backend_total.fetch_add(1, std::memory_order_relaxed);
}

Backend::~Backend() {
  for (auto& c : conns_) {
    loop_->Cancel(&c->timer);
    if (c->bad && !spec_->opts.down) shared_->BadDelta(spec_->label, -1);
    Close(c.get());
    FailAll(&c->waiting);
    FailAll(&c->inflight);
  }
  for (OpPtr& op : batch_) {
    op->failed = true;
    CompleteOp(std::move(op));
  }
  shared_->counters().backend_total.fetch_sub(1, std::memory_order_relaxed);
}

void Backend::Start() {
  if (started_) return;
  started_ = true;
  for (auto& c : conns_) {
    if (spec_->opts.down) {
      c->bad = true;  // never connects, every request fails at once
      continue;
    }
    Connect(c.get());
  }
}

void Backend::Connect(Conn* c) {
  Close(c);
  c->rbuf.clear();
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  int fd = -1;
  bool started = false;
  if (::getaddrinfo(spec_->host.c_str(), spec_->port.c_str(), &hints, &res) == 0) {
    for (addrinfo* a = res; a != nullptr && !started; a = a->ai_next) {
      fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
      if (fd < 0) continue;
      int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      if (spec_->opts.tcp_keepalive) ::setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
      if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0 || errno == EINPROGRESS) {
        started = true;
      } else {
        ::close(fd);
        fd = -1;
      }
    }
    ::freeaddrinfo(res);
  }
  if (!started) {
    c->state = State::kConnecting;
    Reset(c, "connecting");
    return;
  }
  c->fd = fd;
  c->state = State::kConnecting;
  c->want_write = true;
  (void)loop_->AddFd(fd, EPOLLIN | EPOLLOUT, c);
  loop_->ArmAfter(&c->timer, Ms(spec_->opts.connect_timeout));
}

void Backend::Close(Conn* c) {
  c->tls.reset();
  if (c->fd >= 0) {
    loop_->DelFd(c->fd);
    ::close(c->fd);
    c->fd = -1;
  }
  c->want_write = false;
  c->wbuf.clear();
  c->woff = 0;
}

void Backend::FailAll(std::deque<OpPtr>* q) {
  std::deque<OpPtr> ops;
  ops.swap(*q);
  for (OpPtr& op : ops) {
    op->failed = true;
    op->elapsed_us = std::max<int64_t>(0, loop_->TurnNs() - op->start_ns) / 1000;
    CompleteOp(std::move(op));
  }
}

void Backend::Reset(Conn* c, const char* err) {
  const size_t depth = c->depth();
  loop_->Cancel(&c->timer);
  if (!c->bad && shared_->Watching(net::kLogProxyevents)) {
    std::string body = "type=proxy_backend error=";
    body += err;
    body += " name=" + spec_->host + " port=" + spec_->port + " label=" + spec_->label +
            " depth=" + std::to_string(depth) + " rbuf=";
    const std::string_view rest = std::string_view(c->rbuf).substr(ConsumedValues(c->rbuf));
    memcache::UriEncode(rest.substr(0, kMaxRbufLog), &body);
    shared_->Log(net::kLogProxyevents, body);
  }
  Close(c);
  c->rbuf.clear();
  c->state = State::kIdle;
  ++c->failed_count;
  // memcached's flap check: a network failure within flaptime of the last
  // one (or of the connect) counts a flap; a slower one resets the count.
  const double flap = spec_->opts.flap_time;
  if (flap > 0 && (std::strcmp(err, "timeout") == 0 || std::strcmp(err, "disconnected") == 0 ||
                   std::strcmp(err, "writing") == 0 || std::strcmp(err, "reading") == 0)) {
    const int64_t now = loop_->NowNs();
    if (static_cast<double>(now - c->last_failed_ns) > flap * 1e9) {
      c->flap_count = 0;
    } else {
      ++c->flap_count;
    }
    c->last_failed_ns = now;
  }
  // The ops fail after the socket's state is settled: a completion may
  // submit again (to this backend) from Lua.
  std::deque<OpPtr> w, f;
  w.swap(c->waiting);
  f.swap(c->inflight);
  const bool flapping = c->flap_count > spec_->opts.failure_limit;
  if (flapping || c->failed_count > spec_->opts.failure_limit) {
    double wait = spec_->opts.retry_waittime;
    const char* bad_text = "markedbad";
    if (flapping) {
      // Retry less often the more it flaps, up to flapbackoffmax seconds.
      double backoff = std::floor(wait);
      for (int i = 0; i < c->flap_count; ++i) backoff *= spec_->opts.flap_backoff_ramp;
      wait = std::min(std::floor(backoff), static_cast<double>(spec_->opts.flap_backoff_max));
      bad_text = "markedbadflap";
    }
    const int64_t retry = static_cast<int64_t>(wait);
    if (!c->bad) {
      shared_->counters().backend_marked_bad.fetch_add(1, std::memory_order_relaxed);
      shared_->BadDelta(spec_->label, 1);
      if (shared_->Watching(net::kLogProxyevents)) {
        shared_->Log(net::kLogProxyevents,
                     std::string("type=proxy_backend error=") + bad_text + " name=" + spec_->host +
                         " port=" + spec_->port + " label=" + spec_->label +
                         " retry=" + std::to_string(retry));
      }
    }
    c->bad = true;
    c->state = State::kRetryWait;
    loop_->ArmAfter(&c->timer, Ms(wait));
  } else {
    shared_->counters().backend_failed.fetch_add(1, std::memory_order_relaxed);
    // Reconnect at once; Connect may Reset again (bounded by the limit).
    loop_->ArmAfter(&c->timer, 0);
  }
  FailAll(&f);
  FailAll(&w);
}

void Backend::OnTimer(Conn* c) {
  switch (c->state) {
    case State::kConnecting:
    case State::kHandshaking: Reset(c, "conntimeout"); break;
    case State::kValidating: Reset(c, "readvalidate"); break;
    case State::kReady: Reset(c, "timeout"); break;
    case State::kIdle:
    case State::kRetryWait: Connect(c); break;
  }
}

void Backend::SetWriteInterest(Conn* c, bool on) {
  if (c->fd < 0 || c->want_write == on) return;
  c->want_write = on;
  (void)loop_->ModFd(c->fd, EPOLLIN | (on ? EPOLLOUT : 0u), c);
}

void Backend::OnIo(Conn* c, uint32_t events) {
  if (c->fd < 0) return;
  if (c->state == State::kConnecting) {
    if ((events & (EPOLLOUT | EPOLLERR | EPOLLHUP)) == 0) return;
    int err = 0;
    socklen_t len = sizeof(err);
    if (::getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0) {
      Reset(c, "connecting");
      return;
    }
    Connected(c);
    return;
  }
  if (c->state == State::kHandshaking) {
    Handshake(c);
    return;
  }
  if (events & (EPOLLIN | EPOLLERR | EPOLLHUP)) {
    OnReadable(c);
    if (c->fd < 0) return;
  }
  if (events & EPOLLOUT) OnWritable(c);
}

void Backend::Connected(Conn* c) {
  if (!spec_->opts.tls) {
    SendVersion(c);
    return;
  }
  // The context exists: mcp.backend refuses tls=true before mcp.init_tls().
  std::shared_ptr<const net::TlsContext> ctx = shared_->client_tls();
  if (ctx != nullptr) c->tls = net::TlsConn::Connect(std::move(ctx), c->fd);
  if (c->tls == nullptr) {
    Reset(c, "badvalidate");
    return;
  }
  c->state = State::kHandshaking;  // still under the connect timeout
  Handshake(c);
}

void Backend::Handshake(Conn* c) {
  switch (c->tls->Handshake()) {
    case net::TlsConn::Step::kDone:
      SendVersion(c);
      return;
    case net::TlsConn::Step::kWantRead:
      SetWriteInterest(c, false);
      return;
    case net::TlsConn::Step::kWantWrite:
      SetWriteInterest(c, true);
      return;
    case net::TlsConn::Step::kFailed:
      Reset(c, "badvalidate");  // memcached's word for a failed backend handshake
      return;
  }
}

void Backend::SendVersion(Conn* c) {
  // Validate: "version" must come back as VERSION before any request.
  static constexpr char kVersion[] = "version\r\n";
  if (Send(c, kVersion, sizeof(kVersion) - 1) != static_cast<ssize_t>(sizeof(kVersion) - 1)) {
    Reset(c, "badvalidate");
    return;
  }
  c->state = State::kValidating;
  c->last_failed_ns = loop_->NowNs();  // seeds the flap check
  SetWriteInterest(c, false);
  loop_->ArmAfter(&c->timer, Ms(spec_->opts.read_timeout));
}

ssize_t Backend::Send(Conn* c, const char* p, size_t n) {
  if (c->tls == nullptr) return ::send(c->fd, p, n, MSG_NOSIGNAL);
  bool want_read = false;  // TLS 1.3 only (init_tls): no renegotiation asks for it
  return c->tls->Write(p, n, &want_read);
}

ssize_t Backend::Recv(Conn* c, char* p, size_t n) {
  if (c->tls == nullptr) return ::recv(c->fd, p, n, 0);
  bool want_write = false;
  return c->tls->Read(p, n, &want_write);
}

void Backend::OnWritable(Conn* c) {
  if (c->state != State::kReady) return;
  (void)WriteOut(c);
}

bool Backend::WriteOut(Conn* c) {
  while (c->woff < c->wbuf.size()) {
    ssize_t n = Send(c, c->wbuf.data() + c->woff, c->wbuf.size() - c->woff);
    if (n > 0) {
      c->woff += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      SetWriteInterest(c, true);
      return true;
    }
    Reset(c, "writing");
    return false;
  }
  c->wbuf.clear();
  c->woff = 0;
  SetWriteInterest(c, false);
  return true;
}

void Backend::OnReadable(Conn* c) {
  static thread_local char chunk[kReadChunk];  // read here, append what came
  for (;;) {
    ssize_t n = Recv(c, chunk, kReadChunk);
    if (n <= 0) {
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      Reset(c, n == 0 ? "disconnected" : "reading");
      return;
    }
    c->rbuf.append(chunk, static_cast<size_t>(n));
    // A short plain read emptied the socket; TLS reads one record at a
    // time, so it goes on until OpenSSL wants more from the socket.
    if (c->tls == nullptr && static_cast<size_t>(n) < kReadChunk) break;
  }
  if (c->state == State::kValidating) {
    memcache::ParsedReply pr;
    memcache::ReplyStatus st = memcache::ParseReply(c->rbuf.data(), c->rbuf.size(), &pr);
    if (st == memcache::ReplyStatus::kNeedMore) return;
    if (st != memcache::ReplyStatus::kOk || pr.code != memcache::kCodeVersion) {
      Reset(c, "badvalidate");
      return;
    }
    c->rbuf.erase(0, pr.len);
    loop_->Cancel(&c->timer);
    c->state = State::kReady;
    if (c->bad) shared_->BadDelta(spec_->label, -1);
    c->bad = false;
    c->failed_count = 0;
    // What queued while connecting goes out now.
    while (!c->waiting.empty()) {
      OpPtr op = std::move(c->waiting.front());
      c->waiting.pop_front();
      c->wbuf += op->request;
      c->inflight.push_back(std::move(op));
    }
    if (!c->inflight.empty()) {
      if (!WriteOut(c)) return;
      ArmReadTimer(c);
    }
  }
  if (c->state == State::kReady) (void)ParseReplies(c);
}

bool Backend::ParseReplies(Conn* c) {
  size_t off = 0;
  bool any = false;
  while (off < c->rbuf.size()) {
    if (c->inflight.empty()) {
      // Bytes nobody asked for: memcached resets the socket.
      c->rbuf.erase(0, off);
      Reset(c, "trailingdata");
      return false;
    }
    memcache::ParsedReply pr;
    memcache::ReplyStatus st =
        memcache::ParseReply(c->rbuf.data() + off, c->rbuf.size() - off, &pr);
    if (st == memcache::ReplyStatus::kBad) {
      c->rbuf.erase(0, off);
      Reset(c, "parsing");
      return false;
    }
    // memcached refuses the reply's buffer once its first line is in
    // (then the value would be buffered too) while the worker is over its
    // limit, failing the request and resetting the socket.
    if (buffer_mem_ != nullptr && buffer_mem_->Over() &&
        (st == memcache::ReplyStatus::kOk ||
         std::memchr(c->rbuf.data() + off, '\n', c->rbuf.size() - off) != nullptr)) {
      c->rbuf.erase(0, off);
      Reset(c, "outofmemory");
      return false;
    }
    if (st == memcache::ReplyStatus::kNeedMore) break;
    OpPtr op = std::move(c->inflight.front());
    c->inflight.pop_front();
    op->reply.assign(c->rbuf.data() + off, pr.len);
    op->parsed = pr;
    op->elapsed_us = std::max<int64_t>(0, loop_->TurnNs() - op->start_ns) / 1000;
    off += pr.len;
    any = true;
    // ERROR and CLIENT_ERROR mean the stream may be out of step: memcached
    // passes the reply on and closes the socket.
    const bool close_after = pr.code == memcache::kCodeError || pr.code == memcache::kCodeClientError;
    CompleteOp(std::move(op));
    if (close_after) {
      c->rbuf.erase(0, off);
      Reset(c, "unhandledres");
      return false;
    }
    if (c->fd < 0) return false;  // a completion reset us
  }
  c->rbuf.erase(0, off);
  if (any) {
    if (c->inflight.empty()) {
      loop_->Cancel(&c->timer);
    } else {
      ArmReadTimer(c);
    }
  }
  return true;
}

void Backend::ArmReadTimer(Conn* c) { loop_->ArmAfter(&c->timer, Ms(spec_->opts.read_timeout)); }

Backend::Conn* Backend::Choose() {
  Conn* best = conns_[0].get();
  if (conns_.size() == 1) return best;
  size_t depth = SIZE_MAX;
  for (auto& c : conns_) {
    if (c->bad) continue;
    if (c->depth() == 0) return c.get();
    if (c->depth() < depth) {
      depth = c->depth();
      best = c.get();
    }
  }
  return best;
}

void Backend::Append(Conn* c, OpPtr op) {
  if (c->state == State::kReady) {
    c->wbuf += op->request;
    c->inflight.push_back(std::move(op));
  } else {
    c->waiting.push_back(std::move(op));
  }
}

void Backend::Flush() {
  if (batch_.empty()) return;
  // Swapped with a kept vector: neither loses its capacity, so a turn's
  // batch costs no allocation.
  std::vector<OpPtr> local;
  std::vector<OpPtr>& batch = in_flush_ ? local : batch_spare_;
  batch.swap(batch_);
  struct Guard {
    std::vector<OpPtr>& v;
    bool& flag;
    bool was;
    ~Guard() {
      v.clear();
      flag = was;
    }
  } guard{batch, in_flush_, in_flush_};
  in_flush_ = true;
  Conn* c = Choose();
  const int limit = spec_->opts.depth_limit;
  const bool over = limit > 0 && c->depth() > static_cast<size_t>(limit);
  if (c->bad || over) {
    if (over) {
      shared_->counters().request_failed_depth.fetch_add(batch.size(), std::memory_order_relaxed);
    }
    for (OpPtr& op : batch) {
      op->failed = true;
      CompleteOp(std::move(op));
    }
    return;
  }
  const bool was_idle = c->inflight.empty();
  for (OpPtr& op : batch) Append(c, std::move(op));
  if (c->state == State::kReady && !c->wbuf.empty()) {
    if (!WriteOut(c)) return;
    if (was_idle && !c->inflight.empty()) ArmReadTimer(c);
  }
}

}  // namespace trove::proxy
