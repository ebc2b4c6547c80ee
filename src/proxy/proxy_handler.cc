// ProxyHandler (proxy_handler.h).
//
// Invariants:
//  1. Replies leave in request order: a hooked request takes a place in
//     st_->q when it starts; a local request runs only when q is empty (the
//     connection is suspended until the routes before it have answered).
//  2. At most kMaxPending hooked requests of one connection are in flight;
//     past that the connection is suspended until one answers.
//  3. A route that finishes after its client left writes nothing (st_->gone).
#include "proxy/proxy_handler.h"

#include <cstring>
#include <deque>

#include "protocol/memcache/text_parser.h"
#include "proxy/worker.h"

namespace trove::proxy {
namespace {

constexpr size_t kMaxPending = 1024;
constexpr size_t kMaxLine = 8192;

class ProxyHandler final : public net::ProtocolHandler {
 public:
  ProxyHandler(ProxyWorker* w, const std::string* tag, std::unique_ptr<net::ProtocolHandler> inner,
               net::ConnControl* control, int fd)
      : w_(w), tag_(tag), inner_(std::move(inner)), control_(control), fd_(fd),
        st_(std::make_shared<State>()) {
    st_->h = this;
  }
  ~ProxyHandler() override { st_->h = nullptr; }

  void DescribeClient(net::ClientInfo* info) const override { inner_->DescribeClient(info); }
  void OnHousekeeping() override { inner_->OnHousekeeping(); }
  void OnOutputDrained() override { inner_->OnOutputDrained(); }
  bool WantsClose() const override { return inner_->WantsClose(); }
  bool CloseIsError() const override { return inner_->CloseIsError(); }
  size_t BytesWanted() const override { return wanted_ != 0 ? wanted_ : inner_->BytesWanted(); }
  bool IsWatcher() const override { return inner_->IsWatcher(); }

  size_t OnData(const char* data, size_t len, net::OutputBuffer& out) override {
    wanted_ = 0;
    if (passthrough_ || w_ == nullptr || control_ == nullptr) return inner_->OnData(data, len, out);
    in_data_ = true;
    size_t off = 0;
    while (off < len && !inner_->WantsClose()) {
      const char* p = data + off;
      const size_t n = len - off;
      const void* nl = std::memchr(p, '\n', n);
      if (nl == nullptr) {
        if (n > kMaxLine && st_->q.empty()) off += inner_->OnData(p, n, out);  // its line-length error
        break;
      }
      const size_t line_end = static_cast<size_t>(static_cast<const char*>(nl) - p);
      size_t line_len = line_end;
      if (line_len > 0 && p[line_len - 1] == '\r') --line_len;
      const std::string_view line(p, line_len);
      const int cmd = CmdOf(memcache::NthWord(line, 0));
      size_t req_len = line_end + 1;
      bool framed = true;
      if (const int t = ValueLengthToken(cmd); t >= 0) {
        size_t vlen = 0;
        if (memcache::ParseValueLength(memcache::NthWord(line, static_cast<size_t>(t)), &vlen)) {
          req_len += vlen + 2;
          if (n < req_len) {
            wanted_ = req_len;
            break;
          }
        } else {
          framed = false;  // the local parser gives the error
        }
      }
      const int hook = cmd != 0 && framed ? w_->HookFor(*tag_, cmd) : LUA_NOREF;
      if (hook != LUA_NOREF) {
        if (st_->q.size() >= kMaxPending) {
          Pause();
          break;
        }
        RequestUd r;
        r.bytes.assign(p, req_len);
        r.cmd = cmd;
        r.cfd = fd_;
        r.line_len = line_len;
        const std::string_view key = memcache::NthWord(line, 1);
        r.key_off = key.empty() ? line_len : static_cast<size_t>(key.data() - line.data());
        r.key_len = key.size();
        st_->q.emplace_back();
        Entry* e = &st_->q.back();
        e->st = st_.get();
        // Aliasing pointer: keeps the State alive, names the entry; 16 bytes,
        // so the std::function holds it without a heap allocation.
        std::shared_ptr<Entry> ep(st_, e);
        off += req_len;
        w_->StartRequest(hook, std::move(r), [ep](std::string&& bytes) {
          ep->bytes = std::move(bytes);
          ep->done = true;
          if (ep->st->h != nullptr) ep->st->h->Drain();
        });
        continue;
      }
      // Served here, after every route before it has answered.
      if (!st_->q.empty()) {
        Pause();
        break;
      }
      const size_t used = inner_->OnData(p, req_len, out);
      off += used;
      if (inner_->IsWatcher()) {
        passthrough_ = true;
        break;
      }
      if (used < req_len || control_->suspended()) break;
    }
    Drain();
    w_->ScheduleFlush();
    in_data_ = false;
    return off;
  }

 private:
  struct State;
  struct Entry {
    bool done = false;
    State* st = nullptr;
    std::string bytes;
  };
  struct State {
    std::deque<Entry> q;  // references stay valid: only push_back / pop_front
    ProxyHandler* h = nullptr;
  };

  void Pause() {
    paused_ = true;
    control_->Suspend();
  }

  // Writes the finished replies at the head of the queue.
  void Drain() {
    bool wrote = false;
    while (!st_->q.empty() && st_->q.front().done) {
      control_->output().Append(st_->q.front().bytes);
      st_->q.pop_front();
      wrote = true;
    }
    if (wrote && !in_data_) control_->OutputAdded();
    if (paused_ && (st_->q.empty() || st_->q.size() < kMaxPending / 2)) {
      paused_ = false;
      control_->Resume();
    }
  }

  ProxyWorker* const w_;
  const std::string* const tag_;
  std::unique_ptr<net::ProtocolHandler> inner_;
  net::ConnControl* const control_;
  const int fd_;
  std::shared_ptr<State> st_;
  size_t wanted_ = 0;
  bool passthrough_ = false;  // a `watch` connection: the inner handler owns it
  bool paused_ = false;
  bool in_data_ = false;
};

class ProxyFactory final : public net::ProtocolFactory {
 public:
  ProxyFactory(ProxyRuntime* rt, net::ProtocolFactory* inner, std::string tag)
      : rt_(rt), inner_(inner), tag_(std::move(tag)) {}
  std::unique_ptr<net::ProtocolHandler> Create(int worker_id, const net::ConnInfoView& conn) override {
    return std::make_unique<ProxyHandler>(rt_->worker(worker_id), &tag_,
                                          inner_->Create(worker_id, conn), conn.control, conn.fd);
  }
  void InitWorker(int worker_id) override {
    inner_->InitWorker(worker_id);
    if (rt_->worker(worker_id) == nullptr) rt_->InitWorker(worker_id, net::EventLoop::Current());
  }

 private:
  ProxyRuntime* const rt_;
  net::ProtocolFactory* const inner_;
  const std::string tag_;
};

}  // namespace

std::unique_ptr<net::ProtocolFactory> NewProxyFactory(ProxyRuntime* rt, net::ProtocolFactory* inner,
                                                      std::string tag) {
  return std::make_unique<ProxyFactory>(rt, inner, std::move(tag));
}

}  // namespace trove::proxy
