// Test helpers for net/: a line protocol handler and a blocking test client.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

#include "common/str_append.h"
#include "net/net_server.h"
#include "net/protocol_handler.h"

namespace trove::net::testing {

// A line protocol, one request per "\n"-terminated line:
//   echo X    -> "X\r\n"
//   big N     -> N bytes of 'a'..'z' repeating, then "\r\n"
//   data N    -> followed by N bytes and "\r\n"; replies "got N\r\n"
//   id        -> this connection's id
//   close N   -> closes connection N from this worker, asking its owner
//                asynchronously (the connection is suspended meanwhile): "closed 0|1"
//   conns     -> the number of connections on every worker (Gather): "N"
//   sleep MS  -> suspends the connection, answers "slept" from a timer MS ms
//                later, then parses the requests pipelined behind it
//   push ID X -> "push X" appears as out-of-band output on connection ID
//                (any worker); this connection answers "pushed"
//   fence     -> suspends until every worker has served what reached it
//                before (WorkerGroup::Fence): "fenced"
//   note X    -> appends X to the factory's shared notes: "noted"
//   busy MS   -> keeps this worker's thread busy for MS ms: "done"
//   quit      -> close after flushing
// It answers at most `max_reqs` requests per OnData call (memcached's -R).
// What "note X" requests appended, in the order they ran (any worker).
class Notes {
 public:
  void Add(std::string s) {
    std::lock_guard<std::mutex> l(mu_);
    v_.push_back(std::move(s));
  }
  std::vector<std::string> Get() {
    std::lock_guard<std::mutex> l(mu_);
    return v_;
  }

 private:
  std::mutex mu_;
  std::vector<std::string> v_;
};

class LineHandler final : public ProtocolHandler {
 public:
  LineHandler(uint64_t id, NetServer** server, int max_reqs, ConnControl* control, Notes* notes)
      : id_(id), server_(server), max_reqs_(max_reqs), control_(control), notes_(notes), timer_([this] {
          control_->output().Append("slept\r\n");
          control_->OutputAdded();
          control_->Resume();
        }) {}

  size_t OnData(const char* data, size_t len, OutputBuffer& out) override {
    size_t used = 0;
    wanted_ = 0;
    for (int n = 0; n < max_reqs_ && !quit_ && !control_->suspended(); ++n) {
      const char* nl = static_cast<const char*>(std::memchr(data + used, '\n', len - used));
      if (!nl) break;
      std::string_view line(data + used, static_cast<size_t>(nl - (data + used)));
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      size_t line_end = static_cast<size_t>(nl - data) + 1;
      if (line.substr(0, 5) == "data ") {
        uint64_t sz = 0;
        ParseU64(line.substr(5), &sz);
        if (len - line_end < sz + 2) {
          wanted_ = line_end - used + sz + 2;
          break;
        }
        std::string r = "got ";
        AppendU64(r, sz);
        r += "\r\n";
        out.Append(r);
        used = line_end + sz + 2;
        continue;
      }
      used = line_end;
      Execute(line, out);
    }
    return used;
  }
  bool WantsClose() const override { return quit_; }
  size_t BytesWanted() const override { return wanted_; }

 private:
  void Execute(std::string_view line, OutputBuffer& out) {
    if (line.substr(0, 5) == "echo ") {
      out.Append(line.substr(5));
      out.Append("\r\n");
    } else if (line.substr(0, 4) == "big ") {
      uint64_t n = 0;
      ParseU64(line.substr(4), &n);
      std::string s(n, 'a');
      for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>('a' + i % 26);
      s += "\r\n";
      out.Append(s);
    } else if (line == "id") {
      std::string s;
      AppendU64(s, id_);
      s += "\r\n";
      out.Append(s);
    } else if (line.substr(0, 6) == "close ") {
      uint64_t target = 0;
      ParseU64(line.substr(6), &target);
      WorkerGroup& g = control_->group();
      Worker* owner = &g.worker(g.OwnerOf(target));
      Worker* me = Worker::Current();
      uint64_t self = id_;
      if (target == self) {  // the reply first, then the close
        out.Append("closed 1\r\n");
        control_->CloseSoon();
        return;
      }
      control_->Suspend();
      owner->Post([owner, me, self, target] {
        bool ok = owner->RequestClose(target);
        me->Post([me, self, ok] {
          Connection* c = me->Find(self);
          if (c == nullptr) return;
          c->output().Append(ok ? "closed 1\r\n" : "closed 0\r\n");
          c->OutputAdded();
          c->Resume();
        });
      });
    } else if (line == "conns") {
      uint64_t self = id_;
      control_->Suspend();
      control_->group().Gather<size_t>([](Worker& w) { return w.num_connections(); },
                                       [self](std::vector<size_t> n) {
                                         Connection* c = Worker::Current()->Find(self);
                                         if (c == nullptr) return;
                                         size_t total = 0;
                                         for (size_t k : n) total += k;
                                         std::string s;
                                         AppendU64(s, total);
                                         s += "\r\n";
                                         c->output().Append(s);
                                         c->OutputAdded();
                                         c->Resume();
                                       });
    } else if (line.substr(0, 6) == "sleep ") {
      uint64_t ms = 0;
      ParseU64(line.substr(6), &ms);
      control_->Suspend();
      control_->loop().ArmAfter(&timer_, static_cast<int64_t>(ms));
    } else if (line.substr(0, 5) == "push ") {
      std::string_view rest = line.substr(5);
      size_t sp = rest.find(' ');
      uint64_t target = 0;
      ParseU64(rest.substr(0, sp), &target);
      std::string text = "push " + std::string(sp == std::string_view::npos ? "" : rest.substr(sp + 1)) + "\r\n";
      control_->group().PostToConn(target, [text](ConnControl* c, ProtocolHandler*) {
        c->output().Append(text);
        c->OutputAdded();
      });
      out.Append("pushed\r\n");
    } else if (line == "fence") {
      uint64_t self = id_;
      control_->Suspend();
      control_->group().Fence([self] {
        Connection* c = Worker::Current()->Find(self);
        if (c == nullptr) return;
        c->output().Append("fenced\r\n");
        c->OutputAdded();
        c->Resume();
      });
    } else if (line.substr(0, 5) == "note ") {
      notes_->Add(std::string(line.substr(5)));
      out.Append("noted\r\n");
    } else if (line.substr(0, 5) == "busy ") {
      uint64_t ms = 0;
      ParseU64(line.substr(5), &ms);
      std::this_thread::sleep_for(std::chrono::milliseconds(ms));
      out.Append("done\r\n");
    } else if (line == "quit") {
      quit_ = true;
    } else {
      out.Append("ERROR\r\n");
    }
  }

  uint64_t id_;
  NetServer** server_;
  int max_reqs_;
  ConnControl* control_;
  Notes* notes_;
  Timer timer_;
  bool quit_ = false;
  size_t wanted_ = 0;
};

class LineFactory final : public ProtocolFactory {
 public:
  LineFactory(NetServer** server, int max_reqs) : server_(server), max_reqs_(max_reqs) {}
  std::unique_ptr<ProtocolHandler> Create(int, const ConnInfoView& conn) override {
    created.fetch_add(1);
    return std::make_unique<LineHandler>(conn.id, server_, max_reqs_, conn.control, &notes);
  }
  void InitWorker(int) override { inited.fetch_add(1); }
  const std::atomic<bool>* ArrivalStampsFlag() const override { return &stamps; }
  std::atomic<bool> stamps{false};
  Notes notes;
  std::atomic<int> created{0};
  std::atomic<int> inited{0};

 private:
  NetServer** server_;
  int max_reqs_;
};

// A blocking client with a receive timeout.
class Client {
 public:
  static Client Tcp(int port, int rcvbuf = 0) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (rcvbuf > 0) ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) < 0) {
      ::close(fd);
      fd = -1;
    }
    return Client(fd);
  }
  static Client Unix(const std::string& path) {
    int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strncpy(a.sun_path, path.c_str(), sizeof(a.sun_path) - 1);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) < 0) {
      ::close(fd);
      fd = -1;
    }
    return Client(fd);
  }
  explicit Client(int fd) : fd_(fd) { SetTimeoutMs(5000); }
  Client(Client&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  ~Client() {
    if (fd_ >= 0) ::close(fd_);
  }
  bool ok() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  void SetTimeoutMs(int ms) {
    timeval tv{ms / 1000, (ms % 1000) * 1000};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  }
  bool Send(std::string_view s) {
    while (!s.empty()) {
      ssize_t w = ::send(fd_, s.data(), s.size(), MSG_NOSIGNAL);
      if (w <= 0) return false;
      s.remove_prefix(static_cast<size_t>(w));
    }
    return true;
  }
  // Reads exactly n bytes (less on EOF or timeout).
  std::string ReadN(size_t n) {
    std::string s;
    s.resize(n);
    size_t got = 0;
    while (got < n) {
      ssize_t r = ::recv(fd_, &s[got], n - got, 0);
      if (r <= 0) break;
      got += static_cast<size_t>(r);
    }
    s.resize(got);
    return s;
  }
  std::string ReadLine() {
    std::string s;
    char c;
    while (::recv(fd_, &c, 1, 0) == 1) {
      s += c;
      if (c == '\n') break;
    }
    return s;
  }
  // True when the server closed the connection (EOF) within the timeout.
  bool SeesEof() {
    char c;
    for (;;) {
      ssize_t r = ::recv(fd_, &c, 1, 0);
      if (r == 0) return true;
      if (r < 0) return errno == ECONNRESET;
    }
  }

 private:
  int fd_;
};

}  // namespace trove::net::testing
