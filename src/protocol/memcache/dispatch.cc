// MemcacheHandler's framing loop (OnData), the dispatcher (ProcessOne: the
// command table lookup and the checks it asks for) and the factory. Runs on
// the connection's worker thread.
#include "protocol/memcache/dispatch.h"

#include "protocol/memcache/request_classify.h"
#include "protocol/memcache/text_prefetch.h"
#include "protocol/memcache/watch_log.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "common/limits.h"
#include "common/mutex.h"

namespace trove::memcache {
namespace {

// An unfinished multiget line may grow to this before the connection is
// dropped as junk (memcached lets it grow without bound).
constexpr size_t kMultigetLineCap = 1u << 20;

}  // namespace

MemcacheHandler::MemcacheHandler(const HandlerContext* ctx, engine::ThreadStats* ts,
                                 net::ConnControl* control, int fd,
                                 protocol::CommandLog::Sink* sink, std::string peer)
    : ctx_(ctx),
      control_(control),
      engine_(ctx->engine),
      ts_(ts),
      fd_(fd),
      sink_(sink),
      peer_(std::move(peer)),
      authed_(ctx->opts.auth == nullptr) {}

MemcacheHandler::~MemcacheHandler() {
  if (pause_held_) LeavePause();
  GiveResponses();
  if (watcher_id_ != 0) ctx_->log->RemoveWatcher(watcher_id_);
}

char* MemcacheHandler::KeyBuf() {
  static thread_local char buf[kMaxDecodedKey];
  return buf;
}

size_t MemcacheHandler::OnData(const char* data, size_t len, net::OutputBuffer& out) {
  wanted_ = 0;
  if (watcher_id_ != 0) return len;  // a watcher's input is ignored (memcached stops reading)
  log_mask_ = ctx_->log != nullptr ? ctx_->log->WatchedTypes() : 0;
  ke_mask_ = ctx_->key_events != nullptr ? ctx_->key_events->enabled() : 0;
  if (!authed_) {
    ReplyWriter aw(&out);
    size_t done = 0;
    while (!authed_ && !close_ && done < len) {
      const size_t n = Authenticate(data + done, len - done, aw);
      if (n == 0) break;
      done += n;
    }
    if (!authed_ || close_ || done == len) return done;
    return done + OnData(data + done, len - done, out);
  }
  size_t used = 0;
  if (swallow_ > 0) {
    used = Swallow(swallow_, len);
    if (swallow_ > 0) return used;
  }
  ReplyWriter w(&out);
  const int limit = ctx_->opts.reqs_per_event > 0 ? ctx_->opts.reqs_per_event : 1;
  int handled = 0;
  if (pending_.active) {
    used += FeedPending(data + used, len - used, w);
    if (pending_.active) return used;
    ++handled;
  }
  protocol::PrefetchWindow::ForThread().Reset(this);
  // One clock read per command, as RESP does: a command's start is the
  // previous one's end (or this batch's start).
  protocol::CommandLog::Sink* const sink = sink_ != nullptr && sink_->active() ? sink_ : nullptr;
  int64_t t0 = sink != nullptr ? engine_->clock()->MonoNanos() : 0;
  while (used < len && !close_ && handled < limit && watcher_id_ == 0) {
    // CLIENT PAUSE on the RESP port holds this port's writes (WRITE) or
    // every command (ALL): the request stays unconsumed until it ends.
    if (ctx_->opts.pause != nullptr && control_ != nullptr &&
        (pause_held_ || ctx_->opts.pause->maybe())) {
      if (PauseHolds(data + used, len - used)) {
        HoldForPause();
        break;
      }
      if (pause_held_) LeavePause();
    }
    // memcached: a command that finds no response object closes the
    // connection (a client flooding pipelined requests past the limit),
    // and what was queued for it is dropped unsent.
    if (!TakeResponses(1)) {
      out.Clear();
      GiveResponses();
      close_ = true;
      close_error_ = true;
      return len;
    }
    last_line_ = {};
    size_t n = ProcessOne(data + used, len - used, w);
    w.set_quiet(false);
    if (n == 0) break;
    if (sink != nullptr && !last_line_.empty()) {
      const int64_t t1 = engine_->clock()->MonoNanos();
      sink->Record(last_cmd_, last_line_, peer_, (t1 - t0) / 1000);
      t0 = t1;
    }
    used += n;
    ++handled;
    if (control_ != nullptr && control_->suspended()) break;  // invariant 5
    if (pending_.active) break;  // everything here went into its value
    if (swallow_ > 0) {
      used += Swallow(swallow_, len - used);
      if (swallow_ > 0) break;
    }
    // The requests behind the next one: their keys' cache lines, in advance.
    if (used < len) {
      protocol::PrefetchWindow::ForThread().Before(this, engine_, data, len, used,
                                                   ScanTextRequest);
    }
  }
  return used;
}

size_t MemcacheHandler::ProcessOne(const char* data, size_t len, ReplyWriter& w) {
  LineResult lr = FindLine(data, len, kMultigetLineCap);
  if (lr.status == LineStatus::kNeedMore) return 0;
  if (lr.status == LineStatus::kClose) {
    close_ = true;
    return len;
  }
  // memcached 1.6.45: a request of fewer than 4 bytes with its line end
  // (an empty line, "x\r\n") is malformed, not an unknown command.
  if (lr.consumed < 4) {
    w.ClientError(kBadFormat);
    return lr.consumed;
  }
  std::string_view line = lr.line;
  if (Watching(net::kLogRawcmds)) LogRawCmd(ctx_->log, fd_, line);
  if (sink_ != nullptr) last_line_ = line;
  // The command word, found without tokenizing: multigets skip the tokenizer.
  size_t s = 0;
  while (s < line.size() && line[s] == ' ') ++s;
  size_t e = s;
  while (e < line.size() && line[e] != ' ') ++e;
  std::string_view word = line.substr(s, e - s);
  last_cmd_ = protocol::kMcOther;  // what SLOWLOG / LATENCY HISTOGRAM call it
  if (!acl_open_) {  // a restricted or rate-limited -Y user
    acl_charged_ = false;
    req_bytes_ = lr.consumed;
  }
  if (word.size() < 2) {
    w.Error();
    return lr.consumed;
  }
  const McCommand* c = FindCommand(word);
  if (c == nullptr) {
    // memcached 1.6.45 answers an unknown g... word and an unknown
    // two-letter m... word ERROR without looking at the rest of the line.
    if (word[0] == 'g' || (word.size() == 2 && word[0] == 'm')) {
      w.Error();
      return lr.consumed;
    }
    ParsedLine pl;
    Tokenize(line, &pl);
    Unknown(pl, w);
    return lr.consumed;
  }
  last_cmd_ = c->id;
  Request r;
  r.cmd = c;
  r.args = line.substr(e);
  r.line_len = lr.consumed;
  r.after = data + lr.consumed;
  r.after_len = len - lr.consumed;
  if ((c->flags & kUntokenized) != 0) return (this->*c->run)(r, w);
  ParsedLine pl;
  Tokenize(line, &pl);
  r.pl = &pl;
  // The checks the table asks for, in the order memcached makes them.
  if ((c->flags & kNoreplyFirst) != 0) w.set_quiet(pl.noreply());
  if (c->access == Access::kCommand && !Permit(*c, {}, w)) return lr.consumed;
  if (pl.ntokens() < c->min_tokens) {
    w.ClientError(kBadFormat);
    return lr.consumed;
  }
  if ((c->flags & kNoreply) != 0) w.set_quiet(pl.noreply());
  if ((c->flags & kTextKey) != 0 && pl.tokens[1].size() > limits::kMemcacheMaxKey) {
    w.ClientError(kBadFormat);
    return lr.consumed;
  }
  return (this->*c->run)(r, w);
}

// --- factory ---

namespace {

// Thread safety: Create and InitWorker run on worker threads; the per-worker
// ThreadStats table is guarded by mu_. Handlers read only ctx_ (immutable).
class MemcacheFactory final : public net::ProtocolFactory {
 public:
  MemcacheFactory(engine::Engine* engine, net::ServerServices* services,
                  const ProtocolOptions& opts, net::LogHub* log, protocol::CommandLog* cmd_log,
                  protocol::KeyEventSink* key_events) {
    ctx_.key_events = key_events;
    ctx_.engine = engine;
    ctx_.services = services;
    ctx_.log = log;
    ctx_.cmd_log = cmd_log;
    ctx_.opts = opts;
  }

  std::unique_ptr<net::ProtocolHandler> Create(int worker_id,
                                               const net::ConnInfoView& conn) override {
    protocol::CommandLog::Sink* sink =
        ctx_.cmd_log != nullptr ? ctx_.cmd_log->SinkFor(worker_id) : nullptr;
    auto h = std::make_unique<MemcacheHandler>(&ctx_, StatsFor(worker_id), conn.control, conn.fd,
                                               sink, sink != nullptr ? conn.peer : std::string());
    h->set_worker(worker_id);
    if (ctx_.opts.tls_user_cn && conn.tls_verified && !conn.tls_peer_cn.empty())
      h->AuthenticateByCertificate(conn.tls_peer_cn);
    return h;
  }
  void InitWorker(int worker_id) override { (void)StatsFor(worker_id); }

 private:
  engine::ThreadStats* StatsFor(int worker_id) {
    MutexLock l(&mu_);
    size_t i = worker_id < 0 ? 0 : static_cast<size_t>(worker_id);
    if (stats_.size() <= i) stats_.resize(i + 1, nullptr);
    if (stats_[i] == nullptr) stats_[i] = ctx_.engine->NewThreadStats();
    return stats_[i];
  }

  HandlerContext ctx_;
  Mutex mu_{LockRank::kLeaf};
  std::vector<engine::ThreadStats*> stats_ GUARDED_BY(mu_);
};

}  // namespace

std::unique_ptr<net::ProtocolFactory> NewMemcacheFactory(engine::Engine* engine,
                                                         net::ServerServices* services,
                                                         const ProtocolOptions& opts,
                                                         net::LogHub* log,
                                                         protocol::CommandLog* cmd_log,
                                                         protocol::KeyEventSink* key_events) {
  return std::make_unique<MemcacheFactory>(engine, services, opts, log, cmd_log, key_events);
}

}  // namespace trove::memcache
