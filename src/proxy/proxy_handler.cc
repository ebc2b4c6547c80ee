// ProxyHandler (proxy_handler.h).
//
// Invariants:
//  1. Replies leave in request order: a hooked request takes a place in
//     the queue (st_) when it starts; a local request runs only when the
//     queue is empty (the connection is suspended until the routes before it
//     have answered).
//  2. At most kMaxPending hooked requests of one connection are in flight;
//     past that the connection is suspended until one answers.
//  3. A route that finishes after its client left writes nothing (st_->h is
//     null). The State lives while the handler or any started request
//     refers to it (a plain count: everything runs on the worker thread).
#include "proxy/proxy_handler.h"

#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "protocol/memcache/text_parser.h"
#include "proxy/request.h"
#include "proxy/worker.h"

namespace trove::proxy {
namespace {

constexpr size_t kMaxPending = 1024;
constexpr size_t kMaxLine = 8192;

class ProxyHandler final : public net::ProtocolHandler {
 public:
  ProxyHandler(ProxyWorker* w, const std::string* tag, std::unique_ptr<net::ProtocolHandler> inner,
               net::ConnControl* control, int fd, std::shared_ptr<const std::string> peer_cn)
      : w_(w), tag_(tag), inner_(std::move(inner)), control_(control), fd_(fd),
        peer_cn_(std::move(peer_cn)), st_(new State) {
    st_->h = this;
  }
  ~ProxyHandler() override {
    st_->h = nullptr;
    State::Unref(st_);
  }

  void DescribeClient(net::ClientInfo* info) const override { inner_->DescribeClient(info); }
  void OnHousekeeping() override { inner_->OnHousekeeping(); }
  void OnOutputDrained() override { inner_->OnOutputDrained(); }
  bool WantsClose() const override { return close_ || inner_->WantsClose(); }
  bool CloseIsError() const override { return inner_->CloseIsError(); }
  size_t BytesWanted() const override { return wanted_ != 0 ? wanted_ : inner_->BytesWanted(); }
  bool IsWatcher() const override { return inner_->IsWatcher(); }
  bool IdleExempt() const override { return inner_->IdleExempt(); }

  size_t OnData(const char* data, size_t len, net::OutputBuffer& out) override {
    wanted_ = 0;
    if (passthrough_ || w_ == nullptr || control_ == nullptr) return inner_->OnData(data, len, out);
    in_data_ = true;
    size_t off = 0;
    while (off < len && !WantsClose()) {
      if (swallow_ > 0) {
        const size_t k = std::min(swallow_, len - off);
        swallow_ -= k;
        off += k;
        continue;
      }
      const bool admitted = std::exchange(admitted_, false);
      const char* p = data + off;
      const size_t n = len - off;
      const void* nl = std::memchr(p, '\n', n);
      if (nl == nullptr) {
        if (n > kMaxLine && st_->empty()) off += inner_->OnData(p, n, out);  // its line-length error
        break;
      }
      const size_t line_end = static_cast<size_t>(static_cast<const char*>(nl) - p);
      size_t line_len = line_end;
      if (line_len > 0 && p[line_len - 1] == '\r') --line_len;
      const std::string_view line(p, line_len);
      const size_t eol = line_end + 1 - line_len;
      ReqInfo info;
      const int parsed = ParseRequest(line, line_end + 1, &info);
      if (parsed == -1) {
        // memcached's proxy: a known command with bad tokens; the
        // connection stays.
        off += line_end + 1;
        w_->CountConnError();
        Reply("CLIENT_ERROR parsing request\r\n");
        continue;
      }
      size_t req_len = line_end + 1;
      const int hook = parsed == 0 && info.cmd != 0 ? w_->HookFor(*tag_, info.cmd) : LUA_NOREF;
      if (parsed == 0 && info.has_value) {
        if (hook != LUA_NOREF && !admitted && w_->RefuseValue(info.cmd)) {
          // memcached decides at the line: the value is swallowed unread.
          Reply("SERVER_ERROR out of memory\r\n");
          off += line_end + 1;
          swallow_ = info.vlen + 2;
          continue;
        }
        req_len += info.vlen + 2;
        if (n < req_len) {
          wanted_ = req_len;
          admitted_ = hook != LUA_NOREF;  // decided once, as memcached
          break;
        }
      }
      if (hook != LUA_NOREF) {
        if (st_->size() >= kMaxPending) {
          Pause();
          break;
        }
        if (info.get_type && info.ntokens > info.key_token + 1) {
          if (!StartMultiget(hook, line, info)) break;
          off += req_len;
          continue;
        }
        if (line_end + 1 >= kRequestMaxLen) {
          w_->CountConnError();
          Reply("CLIENT_ERROR request too long\r\n");
          close_ = true;
          off += req_len;
          break;
        }
        if (info.has_value && std::string_view(p + req_len - 2, 2) != "\r\n") {
          Reply("CLIENT_ERROR bad data chunk\r\n");
          off += req_len;
          continue;
        }
        RequestView r;
        r.bytes = std::string_view(p, req_len);
        r.line_len = line_len;
        r.eol_len = eol;
        r.info = info;
        r.cfd = fd_;
        r.peer_cn = peer_cn_;
        Start(hook, r);
        off += req_len;
        continue;
      }
      // Served here, after every route before it has answered.
      if (!st_->empty()) {
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
  struct Entry {
    bool done = false;
    std::string bytes;  // keeps its capacity from one request to the next
  };
  // The replies still owed to the client, by sequence number: a ring of
  // entries, head = the oldest. Entries are found by number, so the ring
  // may grow while requests are in flight.
  struct State {
    std::vector<Entry> ring = std::vector<Entry>(16);
    uint64_t head = 0, tail = 0;
    ProxyHandler* h = nullptr;
    int refs = 1;  // the handler's, plus one per started request
    size_t size() const { return static_cast<size_t>(tail - head); }
    bool empty() const { return head == tail; }
    Entry& At(uint64_t seq) { return ring[static_cast<size_t>(seq & (ring.size() - 1))]; }
    uint64_t Push() {
      if (size() == ring.size()) {
        std::vector<Entry> bigger(ring.size() * 2);
        for (uint64_t s = head; s != tail; ++s) {
          bigger[static_cast<size_t>(s & (bigger.size() - 1))] = std::move(At(s));
        }
        ring.swap(bigger);
      }
      Entry& e = At(tail);
      e.done = false;
      e.bytes.clear();
      return tail++;
    }
    void Pop() { ++head; }
    static void Unref(State* s) {
      if (--s->refs == 0) delete s;
    }
  };

  // Starts one routed request; its reply takes the next place in order.
  void Start(int hook, const RequestView& r) {
    State* st = st_;
    const uint64_t seq = st->Push();
    ++st->refs;
    // Two words: the std::function holds them without a heap allocation.
    w_->StartRequest(hook, r, [st, seq](std::string_view bytes) {
      if (ProxyHandler* h = st->h) {
        if (seq == st->head) {
          // The head of the queue: straight to the client, no copy.
          h->control_->output().Append(bytes);
          st->Pop();
          h->wrote_ = true;
        } else {
          Entry& e = st->At(seq);
          e.bytes.assign(bytes);
          e.done = true;
        }
        h->Drain();
      }
      State::Unref(st);
    });
  }

  // A reply of our own, in its place after the routed ones before it.
  void Reply(std::string_view bytes) {
    const uint64_t seq = st_->Push();
    Entry& e = st_->At(seq);
    e.bytes.assign(bytes);
    e.done = true;
  }

  // memcached's ASCII multiget emulation: one request per key ("get k"),
  // each reply without its END, then one END.
  bool StartMultiget(int hook, std::string_view line, const ReqInfo& info) {
    if (info.key_off > kMaxCmdPrefix) {
      Reply("CLIENT_ERROR malformed request\r\n");
      return true;
    }
    std::string& sub = multiget_buf_;
    size_t i = info.key_off;
    while (i < line.size()) {
      while (i < line.size() && line[i] == ' ') ++i;
      if (i >= line.size()) break;
      const size_t s = i;
      while (i < line.size() && line[i] != ' ') ++i;
      const std::string_view key = line.substr(s, i - s);
      if (key.size() > kMaxKeyLength) {
        Reply("CLIENT_ERROR key too long\r\n");
        continue;
      }
      sub.assign(line.substr(0, info.key_off)).append(key).append("\r\n");
      RequestView r;
      r.bytes = sub;
      r.line_len = sub.size() - 2;
      r.eol_len = 2;
      r.info = info;
      r.info.key_off = info.key_off;
      r.info.key_len = key.size();
      r.info.ntokens = static_cast<uint16_t>(info.key_token + 1);
      r.info.noreply = false;
      r.cfd = fd_;
      r.peer_cn = peer_cn_;
      r.multiget = true;
      Start(hook, r);
    }
    Reply("END\r\n");
    return true;
  }

  void Pause() {
    paused_ = true;
    control_->Suspend();
  }

  // Writes the finished replies at the head of the queue.
  void Drain() {
    bool wrote = wrote_;
    wrote_ = false;
    while (!st_->empty() && st_->At(st_->head).done) {
      control_->output().Append(st_->At(st_->head).bytes);
      st_->Pop();
      wrote = true;
    }
    if (wrote && !in_data_) control_->OutputAdded();
    if (paused_ && st_->size() < kMaxPending / 2) {
      paused_ = false;
      control_->Resume();
    }
  }

  ProxyWorker* const w_;
  const std::string* const tag_;
  std::unique_ptr<net::ProtocolHandler> inner_;
  net::ConnControl* const control_;
  const int fd_;
  const std::shared_ptr<const std::string> peer_cn_;  // verified client certificate CN, or null
  State* const st_;
  size_t wanted_ = 0;
  bool passthrough_ = false;  // a `watch` connection: the inner handler owns it
  bool paused_ = false;
  bool in_data_ = false;
  bool wrote_ = false;  // a reply went straight to the output (Drain tells the loop)
  bool close_ = false;  // CLIENT_ERROR request too long: memcached closes
  // mcp.buffer_memory_limit: the refused value's bytes still to discard.
  size_t swallow_ = 0;
  // The request at the head of the input passed the memory check while its
  // value was still arriving (not asked again when the rest comes).
  bool admitted_ = false;
  std::string multiget_buf_;  // one split key's request line
};

class ProxyFactory final : public net::ProtocolFactory {
 public:
  ProxyFactory(ProxyRuntime* rt, net::ProtocolFactory* inner, std::string tag)
      : rt_(rt), inner_(inner), tag_(std::move(tag)) {}
  std::unique_ptr<net::ProtocolHandler> Create(int worker_id, const net::ConnInfoView& conn) override {
    std::shared_ptr<const std::string> cn;
    if (conn.tls_verified && !conn.tls_peer_cn.empty())
      cn = std::make_shared<const std::string>(conn.tls_peer_cn);
    return std::make_unique<ProxyHandler>(rt_->worker(worker_id), &tag_,
                                          inner_->Create(worker_id, conn), conn.control, conn.fd,
                                          std::move(cn));
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
