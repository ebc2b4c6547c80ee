// Load threads: each runs an epoll loop over its own connections (closed loop
// or fixed-rate open loop); the main thread starts them together, prints
// per-second progress and merges their stats at the end.
#include "load.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "common/check.h"
#include "common/clock.h"
#include "open_loop.h"

namespace trove::bench {

namespace {

int64_t Now() { return SystemClock::Default()->MonoNanos(); }

// --tls: one client context for the run (made by the first connection;
// SSL_new from several threads is safe once it is built), no server
// verification: the generator measures, it does not authenticate.
SSL_CTX* ClientContext(const Options& o, std::string* err) {
  static std::once_flag once;
  static SSL_CTX* ctx = nullptr;
  static std::string build_err;
  std::call_once(once, [&o] {
    ctx = SSL_CTX_new(TLS_client_method());
    if (ctx == nullptr) {
      build_err = "SSL_CTX_new failed";
      return;
    }
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    if (!o.tls_cert.empty() &&
        (SSL_CTX_use_certificate_chain_file(ctx, o.tls_cert.c_str()) != 1 ||
         SSL_CTX_use_PrivateKey_file(ctx, (o.tls_key.empty() ? o.tls_cert : o.tls_key).c_str(),
                                     SSL_FILETYPE_PEM) != 1)) {
      build_err = "cannot load the client certificate " + o.tls_cert;
      SSL_CTX_free(ctx);
      ctx = nullptr;
    }
  });
  if (ctx == nullptr) *err = build_err;
  return ctx;
}

// As read/write on a non-blocking socket: -1 with errno EAGAIN when the
// record layer waits for the socket.
ssize_t IoRead(int fd, SSL* ssl, char* p, size_t n) {
  if (ssl == nullptr) return read(fd, p, n);
  size_t got = 0;
  if (SSL_read_ex(ssl, p, n, &got) == 1) return static_cast<ssize_t>(got);
  const int e = SSL_get_error(ssl, 0);
  ERR_clear_error();
  if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
    errno = EAGAIN;
    return -1;
  }
  if (e == SSL_ERROR_ZERO_RETURN) return 0;
  if (errno == 0) errno = EPROTO;
  return -1;
}

ssize_t IoWrite(int fd, SSL* ssl, const char* p, size_t n) {
  if (ssl == nullptr) return write(fd, p, n);
  size_t put = 0;
  if (SSL_write_ex(ssl, p, n, &put) == 1) return static_cast<ssize_t>(put);
  const int e = SSL_get_error(ssl, 0);
  ERR_clear_error();
  if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
    errno = EAGAIN;
    return -1;
  }
  if (errno == 0) errno = EPROTO;
  return -1;
}

// State shared by the main thread and one load thread.
struct ThreadShared {
  // Written by the load thread, read by the main thread for progress only.
  std::atomic<uint64_t> completed{0};
  std::atomic<uint64_t> errors{0};
  std::atomic<bool> ready{false};     // connections opened (release: connected)
  std::atomic<bool> finished{false};  // release: stats and connected are final
  int connected = 0;                  // valid once ready
  Stats stats;                        // valid once finished
};

// The run's clock, published once by the main thread: start_ns (release)
// makes the timeline below visible to the load threads.
struct Timeline {
  std::atomic<int64_t> start_ns{0};
  int64_t measure_from = 0;
  int64_t measure_until = 0;  // INT64_MAX in --requests mode
};

// One connection: socket plus protocol session. Owner: its load thread.
struct Conn {
  int fd = -1;
  SSL* ssl = nullptr;  // --tls
  bool dead = false;
  bool want_out = false;  // EPOLLOUT is armed
  std::unique_ptr<ClientSession> session;
  std::vector<char> in;
  size_t in_start = 0;
  size_t in_end = 0;
  Rng rng{0};
  std::unique_ptr<KeyChooser> chooser;
  uint64_t remaining = 0;  // --requests mode: requests this connection still issues
  uint32_t version = 0;
  OpenLoopSchedule schedule;  // open loop only
};

Result<int> Connect(const Options& o, SSL** ssl_out) {
  *ssl_out = nullptr;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  std::string port = std::to_string(o.port);
  int rc = getaddrinfo(o.host.c_str(), port.c_str(), &hints, &res);
  if (rc != 0) return Status::Invalid(std::string("resolve ") + o.host + ": " + gai_strerror(rc));
  Status last = Status::Internal("no address");
  for (addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
      last = Status::FromErrno("socket");
      continue;
    }
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
      last = Status::FromErrno("connect " + o.host + ":" + port);
      close(fd);
      continue;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    SSL* ssl = nullptr;
    if (o.tls) {  // the TLS handshake, still blocking
      std::string err;
      SSL_CTX* ctx = ClientContext(o, &err);
      if (ctx == nullptr) {
        close(fd);
        freeaddrinfo(res);
        return Status::Invalid(err);
      }
      ssl = SSL_new(ctx);
      if (ssl == nullptr || SSL_set_fd(ssl, fd) != 1 || SSL_connect(ssl) != 1) {
        ERR_clear_error();
        if (ssl != nullptr) SSL_free(ssl);
        close(fd);
        last = Status::Invalid("TLS handshake with " + o.host + ":" + port + " failed");
        continue;
      }
    }
    // Still blocking: one command, its one-line reply.
    auto handshake = [fd, ssl](const std::string& cmd, const char* what) -> Status {
      std::string reply;
      char ch;
      bool sent = IoWrite(fd, ssl, cmd.data(), cmd.size()) == static_cast<ssize_t>(cmd.size());
      while (sent && reply.size() < 256 && IoRead(fd, ssl, &ch, 1) == 1) {
        reply.push_back(ch);
        if (ch == '\n') break;
      }
      if (reply != "+OK\r\n") return Status::Invalid(std::string(what) + " was refused: " + reply);
      return Status::Ok();
    };
    Status hs = Status::Ok();
    if (!o.resp_auth.empty()) {
      const size_t colon = o.resp_auth.find(':');
      const std::string user = o.resp_auth.substr(0, colon);
      const std::string pass = colon == std::string::npos ? "" : o.resp_auth.substr(colon + 1);
      std::string cmd = "*3\r\n$4\r\nAUTH\r\n$" + std::to_string(user.size()) + "\r\n" + user +
                        "\r\n$" + std::to_string(pass.size()) + "\r\n" + pass + "\r\n";
      hs = handshake(cmd, "AUTH");
    }
    if (hs.ok() && o.resp_tracking) {
      hs = handshake("*3\r\n$6\r\nCLIENT\r\n$8\r\nTRACKING\r\n$2\r\non\r\n", "CLIENT TRACKING on");
    }
    if (!hs.ok()) {
      if (ssl != nullptr) SSL_free(ssl);
      close(fd);
      freeaddrinfo(res);
      return hs;
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    freeaddrinfo(res);
    *ssl_out = ssl;
    return fd;
  }
  freeaddrinfo(res);
  return last;
}

// One load thread: opens its share of the connections, waits for the common
// start, then runs one epoll loop that keeps each connection's pipeline
// window full (closed loop) or follows its OpenLoopSchedule (open loop),
// until the measured window ends and the outstanding replies drain.
//
// Thread safety: every member is owned by the thread running Run(); it talks
// to the main thread only through ThreadShared and the published Timeline.
//
// Invariants:
//  1. A dead connection has fd == -1 and is never read, written or filled.
//  2. stats_ is moved into shared_->stats exactly once, before `finished`.
class LoadThread {
 public:
  LoadThread(const Options& o, const ValueGen& values, const ZipfTable* zipf, int index,
             ThreadShared* shared, const Timeline* timeline)
      : o_(o), values_(values), zipf_(zipf), index_(index), shared_(shared), tl_(timeline) {}

  void Run();

 private:
  void Open();
  void IssueOne(Conn& c, int64_t start_ns);
  void FillClosedLoop(Conn& c, int64_t now);
  void FillOpenLoop(Conn& c, int64_t now);
  void Flush(Conn& c);
  void Read(Conn& c);
  void Kill(Conn& c, const char* why, int err);
  bool Issuing(const Conn& c) const {
    return !c.dead && !stopping_ && (o_.requests == 0 || c.remaining > 0);
  }

  const Options& o_;
  const ValueGen& values_;
  const ZipfTable* zipf_;
  int index_;
  ThreadShared* shared_;
  const Timeline* tl_;
  int epfd_ = -1;
  std::vector<Conn> conns_;
  std::vector<uint64_t> key_scratch_;
  Stats stats_;
  bool stopping_ = false;
  int64_t interval_ns_ = 0;  // open loop: per-connection gap between intended sends
};

void LoadThread::Kill(Conn& c, const char* why, int err) {
  if (c.dead) return;
  c.dead = true;
  if (err != 0 || !stopping_ || c.session->pending() > 0) {
    ++stats_.err_connection;
    std::string m = why;
    if (err != 0) {
      m += ": ";
      m += std::strerror(err);
    }
    stats_.NoteError(m);
  }
  epoll_ctl(epfd_, EPOLL_CTL_DEL, c.fd, nullptr);
  if (c.ssl != nullptr) SSL_free(c.ssl);
  c.ssl = nullptr;
  close(c.fd);
  c.fd = -1;
}

void LoadThread::Open() {
  epfd_ = epoll_create1(EPOLL_CLOEXEC);
  CHECK(epfd_ >= 0);
  int total = o_.total_conns();
  conns_.resize(static_cast<size_t>(o_.conns_per_thread));
  key_scratch_.resize(static_cast<size_t>(o_.multiget));
  for (int i = 0; i < o_.conns_per_thread; ++i) {
    Conn& c = conns_[i];
    int global = index_ * o_.conns_per_thread + i;
    c.session = std::make_unique<ClientSession>(o_.protocol, &values_, o_.pipeline, o_.multiget);
    size_t cap = c.session->MaxReplySize() * 4;
    c.in.resize(cap < 65536 ? 65536 : cap);
    c.rng = Rng(o_.seed * 1000003 + static_cast<uint64_t>(global));
    c.chooser =
        std::make_unique<KeyChooser>(o_.pattern, o_.key_count, static_cast<uint64_t>(global),
                                     static_cast<uint64_t>(total), zipf_);
    c.version = static_cast<uint32_t>(global) << 20;
    if (o_.requests > 0) {
      uint64_t per = o_.requests / static_cast<uint64_t>(total);
      c.remaining = per + (static_cast<uint64_t>(global) < o_.requests % total ? 1 : 0);
    }
    Result<int> fd = Connect(o_, &c.ssl);
    if (!fd.ok()) {
      c.dead = true;
      ++stats_.err_connection;
      stats_.NoteError(fd.status().message());
      continue;
    }
    c.fd = fd.value();
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u32 = static_cast<uint32_t>(i);
    CHECK(epoll_ctl(epfd_, EPOLL_CTL_ADD, c.fd, &ev) == 0);
    ++shared_->connected;
  }
}

void LoadThread::IssueOne(Conn& c, int64_t start_ns) {
  bool measured = start_ns >= tl_->measure_from && start_ns < tl_->measure_until;
  uint64_t pick = c.rng.Below(o_.set_weight + o_.get_weight);
  if (pick < o_.set_weight) {
    c.session->IssueSet(c.chooser->Next(c.rng), ++c.version, start_ns, measured);
  } else {
    for (int i = 0; i < o_.multiget; ++i) key_scratch_[i] = c.chooser->Next(c.rng);
    c.session->IssueGet(key_scratch_.data(), start_ns, measured);
  }
  if (c.remaining > 0) --c.remaining;
}

void LoadThread::FillClosedLoop(Conn& c, int64_t now) {
  bool any = false;
  while (Issuing(c) && c.session->CanIssue()) {
    IssueOne(c, now);
    any = true;
  }
  if (any) Flush(c);
}

void LoadThread::FillOpenLoop(Conn& c, int64_t now) {
  bool any = false;
  // A full window delays the send but not the intended time (open_loop.h).
  int64_t intended;
  while (Issuing(c) && c.session->CanIssue() && c.schedule.TakeDue(now, &intended)) {
    IssueOne(c, intended);
    any = true;
  }
  if (any) Flush(c);
}

void LoadThread::Flush(Conn& c) {
  while (!c.dead) {
    std::string_view out = c.session->Output();
    if (out.empty()) break;
    ssize_t n = IoWrite(c.fd, c.ssl, out.data(), out.size());
    if (n > 0) {
      c.session->Consumed(static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) break;
    Kill(c, "write", n < 0 ? errno : EPIPE);
    return;
  }
  if (c.dead) return;
  bool want = !c.session->Output().empty();
  if (want != c.want_out) {
    epoll_event ev{};
    ev.events = want ? (EPOLLIN | EPOLLOUT) : EPOLLIN;
    ev.data.u32 = static_cast<uint32_t>(&c - conns_.data());
    epoll_ctl(epfd_, EPOLL_CTL_MOD, c.fd, &ev);
    c.want_out = want;
  }
}

void LoadThread::Read(Conn& c) {
  while (!c.dead) {
    if (c.in_start > 0 && c.in.size() - c.in_end < c.session->MaxReplySize()) {
      std::memmove(c.in.data(), c.in.data() + c.in_start, c.in_end - c.in_start);
      c.in_end -= c.in_start;
      c.in_start = 0;
    }
    if (c.in_end == c.in.size()) {
      ++stats_.err_malformed;
      stats_.NoteError("reply larger than the input buffer");
      Kill(c, "oversized reply", 0);
      return;
    }
    ssize_t n = IoRead(c.fd, c.ssl, c.in.data() + c.in_end, c.in.size() - c.in_end);
    if (n == 0) {
      Kill(c, "server closed the connection", 0);
      return;
    }
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) return;
      Kill(c, "read", errno);
      return;
    }
    c.in_end += static_cast<size_t>(n);
    size_t used = 0;
    bool ok =
        c.session->OnInput(c.in.data() + c.in_start, c.in_end - c.in_start, Now(), &stats_, &used);
    c.in_start += used;
    if (c.in_start == c.in_end) c.in_start = c.in_end = 0;
    if (!ok) {
      Kill(c, "reply stream out of sync", 0);
      return;
    }
    if (static_cast<size_t>(n) < c.in.size() / 2) return;  // likely drained; let epoll say
  }
}

void LoadThread::Run() {
  Open();
  shared_->ready.store(true, std::memory_order_release);
  int64_t start;
  while ((start = tl_->start_ns.load(std::memory_order_acquire)) == 0) {
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  bool open_loop = o_.rate > 0;
  if (open_loop) {
    double per_conn = o_.rate / o_.total_conns();
    interval_ns_ = static_cast<int64_t>(1e9 / per_conn);
    if (interval_ns_ < 1) interval_ns_ = 1;
    for (size_t i = 0; i < conns_.size(); ++i) {
      // Spread the connections' schedules over one interval.
      int global = index_ * o_.conns_per_thread + static_cast<int>(i);
      conns_[i].schedule =
          OpenLoopSchedule(start + interval_ns_ * global / o_.total_conns(), interval_ns_);
    }
  }
  std::vector<epoll_event> events(conns_.size() + 1);
  int64_t drain_deadline = std::numeric_limits<int64_t>::max();
  uint64_t completed_before = 0;
  for (;;) {
    int64_t now = Now();
    if (!stopping_ && now >= tl_->measure_until) {
      stopping_ = true;
      drain_deadline = now + static_cast<int64_t>(o_.drain_s * 1e9);
    }
    bool busy = false;
    bool issuing = false;
    int64_t next_due = std::numeric_limits<int64_t>::max();
    for (Conn& c : conns_) {
      if (c.dead) continue;
      if (open_loop) {
        FillOpenLoop(c, now);
      } else {
        FillClosedLoop(c, now);
      }
      if (c.dead) continue;
      if (c.session->pending() > 0) busy = true;
      if (Issuing(c)) {
        issuing = true;
        if (open_loop && c.session->CanIssue() && c.schedule.next_due() < next_due) {
          next_due = c.schedule.next_due();
        }
      }
    }
    if (!busy && !issuing) break;
    if (stopping_ && now >= drain_deadline) {
      for (Conn& c : conns_) Kill(c, "no reply before the drain deadline", 0);
      break;
    }
    int64_t wake = next_due;
    if (tl_->measure_until < wake && !stopping_) wake = tl_->measure_until;
    if (stopping_ && drain_deadline < wake) wake = drain_deadline;
    int64_t wait_ns = wake == std::numeric_limits<int64_t>::max() ? 100'000'000 : wake - now;
    if (wait_ns < 0) wait_ns = 0;
    if (wait_ns > 100'000'000) wait_ns = 100'000'000;
    timespec ts{wait_ns / 1'000'000'000, wait_ns % 1'000'000'000};
    int n = epoll_pwait2(epfd_, events.data(), static_cast<int>(events.size()), &ts, nullptr);
    if (n < 0 && errno == ENOSYS) {
      n = epoll_wait(epfd_, events.data(), static_cast<int>(events.size()),
                     static_cast<int>(wait_ns / 1'000'000));
    }
    for (int i = 0; i < n; ++i) {
      Conn& c = conns_[events[i].data.u32];
      if (c.dead) continue;
      if (events[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP)) Read(c);
      if (!c.dead && (events[i].events & EPOLLOUT)) Flush(c);
    }
    uint64_t completed = stats_.completed + stats_.errors();
    if (completed != completed_before) {
      shared_->completed.store(stats_.completed, std::memory_order_relaxed);
      shared_->errors.store(stats_.errors(), std::memory_order_relaxed);
      completed_before = completed;
    }
  }
  for (Conn& c : conns_) {
    if (!c.dead) {
      if (c.ssl != nullptr) SSL_free(c.ssl);
      c.ssl = nullptr;
      close(c.fd);
      c.dead = true;
    }
  }
  close(epfd_);
  shared_->stats = std::move(stats_);
  shared_->finished.store(true, std::memory_order_release);
}

}  // namespace

Result<RunResult> RunLoad(const Options& o, const ValueGen& values, const ZipfTable* zipf,
                          bool show_progress) {
  std::vector<std::unique_ptr<ThreadShared>> shared;
  Timeline tl;
  std::vector<std::thread> threads;
  for (int t = 0; t < o.threads; ++t) shared.push_back(std::make_unique<ThreadShared>());
  std::vector<std::unique_ptr<LoadThread>> loaders;
  for (int t = 0; t < o.threads; ++t) {
    loaders.push_back(std::make_unique<LoadThread>(o, values, zipf, t, shared[t].get(), &tl));
    threads.emplace_back([l = loaders.back().get()] { l->Run(); });
  }
  RunResult result;
  for (auto& s : shared) {
    while (!s->ready.load(std::memory_order_acquire)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    result.connected += s->connected;
  }
  int64_t start = Now();
  bool by_count = o.requests > 0;
  tl.measure_from = by_count ? start : start + static_cast<int64_t>(o.warmup_s * 1e9);
  tl.measure_until = by_count ? std::numeric_limits<int64_t>::max()
                              : tl.measure_from + static_cast<int64_t>(o.duration_s * 1e9);
  tl.start_ns.store(start, std::memory_order_release);

  uint64_t last_ops = 0;
  int64_t last_t = start;
  int second = 0;
  for (;;) {
    bool all_done = true;
    for (auto& s : shared) all_done &= s->finished.load(std::memory_order_acquire);
    if (all_done) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    int64_t now = Now();
    if (show_progress && now - last_t >= 1'000'000'000) {
      uint64_t ops = 0, errs = 0;
      for (auto& s : shared) {
        ops += s->completed.load(std::memory_order_relaxed);
        errs += s->errors.load(std::memory_order_relaxed);
      }
      ++second;
      const char* phase = now < tl.measure_from ? "warm-up" : "";
      std::fprintf(stderr, "[%4ds] %10.0f ops/s  %12llu ops  %llu errors %s\n", second,
                   static_cast<double>(ops - last_ops) * 1e9 / static_cast<double>(now - last_t),
                   static_cast<unsigned long long>(ops), static_cast<unsigned long long>(errs),
                   phase);
      last_ops = ops;
      last_t = now;
    }
  }
  int64_t end = Now();
  for (auto& t : threads) t.join();
  for (auto& s : shared) result.stats.Merge(s->stats);
  result.measured_s = by_count ? static_cast<double>(end - start) / 1e9 : o.duration_s;
  if (result.connected == 0) {
    std::string m = "no connection opened";
    if (!result.stats.first_error.empty()) m += ": " + result.stats.first_error;
    return Status(StatusCode::kIoError, m);
  }
  return result;
}

}  // namespace trove::bench
