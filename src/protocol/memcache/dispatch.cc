// MemcacheHandler framing loop and command dispatch, and the factory.
// Runs on the connection's worker thread.
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

// memcached's try_read_command_asciiauth: the first request must be
// "set <any> <any> <any> <n>\r\n<user> <pass>\r\n"; anything else is
// refused. Returns the bytes consumed (0: need more).
size_t MemcacheHandler::Authenticate(const char* data, size_t len, ReplyWriter& w) {
  size_t used = 0;
  if (auth_need_ == 0) {
    if (len < 3) return 0;
    const char* el = static_cast<const char*>(std::memchr(data, '\n', len));
    if (el == nullptr) {
      if (len > 2048) close_ = true;  // junk without a newline
      return close_ ? len : 0;
    }
    const size_t line_len = static_cast<size_t>(el - data);
    used = line_len + 1;
    if (line_len < 6) {  // memcached's MIN_AUTH_REQ_LEN: closed without a reply
      close_ = true;
      return len;
    }
    std::string_view line(data, line_len);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    std::string_view tok[6];
    size_t n = 0;
    for (size_t i = 0; i < line.size() && n < 6;) {
      while (i < line.size() && line[i] == ' ') ++i;
      size_t j = i;
      while (j < line.size() && line[j] != ' ') ++j;
      if (j > i) tok[n++] = line.substr(i, j - i);
      i = j;
    }
    uint32_t size = 0;
    if (n < 5 || line.substr(0, 3) != "set" || !ParseFlags(tok[4], &size)) {
      w.ClientError("unauthenticated");
      return used;
    }
    if (size > 16384) {  // MAX_AUTH_REQ_LEN
      w.ClientError("auth token too long");
      return used;
    }
    auth_need_ = size + 2;
  }
  if (len - used < auth_need_) return used;
  std::string_view token(data + used, auth_need_);
  used += auth_need_;
  auth_need_ = 0;
  if (token.substr(token.size() - 2) != "\r\n") {
    w.ClientError("bad command line termination");
    return used;
  }
  token.remove_suffix(2);
  const size_t sp = token.find(' ');
  if (sp == std::string_view::npos) {
    w.ClientError("bad authentication token format");
    return used;
  }
  AuthTable& auth = *ctx_->opts.auth;
  auth.auth_cmds.fetch_add(1, std::memory_order_relaxed);
  if (auth.Check(token.substr(0, sp), token.substr(sp + 1))) {
    authed_ = true;
    SetAclUser(token.substr(0, sp));
    w.Word("STORED");
  } else {
    auth.auth_errors.fetch_add(1, std::memory_order_relaxed);
    w.ClientError("authentication failure");
  }
  return used;
}

MemcacheHandler::~MemcacheHandler() {
  if (pause_held_) LeavePause();
  GiveResponses();
  if (watcher_id_ != 0) ctx_->log->RemoveWatcher(watcher_id_);
}

size_t MemcacheHandler::Watch(const Request& r, ReplyWriter& w) {
  const ParsedLine& pl = *r.pl;
  if (!ctx_->opts.watch_enabled || ctx_->log == nullptr || control_ == nullptr) {
    w.ClientError("watch commands not allowed");
    return r.line_len;
  }
  // memcached refuses when replies of earlier pipelined commands are queued.
  if (w.buffer()->pending_bytes() > 0) {
    w.Status("ERROR cannot pipeline other commands before watch");
    return r.line_len;
  }
  struct Name {
    const char* word;
    uint32_t bit;
  };
  static constexpr Name kTypes[] = {
      {"rawcmds", net::kLogRawcmds},         {"evictions", net::kLogEvictions},
      {"fetchers", net::kLogFetchers},       {"mutations", net::kLogMutations},
      {"sysevents", net::kLogSysevents},     {"connevents", net::kLogConnevents},
      {"proxyreqs", net::kLogProxyreqs},     {"proxyevents", net::kLogProxyevents},
      {"proxyuser", net::kLogProxyuser},     {"deletions", net::kLogDeletions},
  };
  uint32_t mask = 0;
  for (size_t i = 1; i < pl.count; ++i) {
    uint32_t bit = 0;
    for (const Name& n : kTypes) {
      if (pl.tokens[i] == n.word) bit = n.bit;
    }
    if (bit == 0) {
      w.Error();
      return r.line_len;
    }
    mask |= bit;
  }
  if (mask == 0) mask = net::kLogFetchers;
  uint64_t id = 0;
  if (ctx_->log->AddWatcher(control_->id(), mask, &id) != net::LogHub::AddResult::kOk) {
    w.Status("WATCHER_TOO_MANY log watcher limit reached");
    return r.line_len;
  }
  watcher_id_ = id;
  w.Word("OK");
  return r.line_len;
}

void MemcacheHandler::LogStoreLookup(std::string_view key) {
  LogItemGet(ctx_->log, key, engine_->Peek(key, ts_), fd_);
}

void MemcacheHandler::LogStore(std::string_view key, engine::StoreResult r, engine::StoreMode mode,
                               int64_t exptime, size_t n) {
  static constexpr const char* kCmd[] = {"set", "add", "replace", "append", "prepend", "cas"};
  int mi = 0;
  switch (mode) {
    case engine::StoreMode::kSet: mi = 0; break;
    case engine::StoreMode::kAdd: mi = 1; break;
    case engine::StoreMode::kReplace: mi = 2; break;
    case engine::StoreMode::kAppend: mi = 3; break;
    case engine::StoreMode::kPrepend: mi = 4; break;
    case engine::StoreMode::kCas: mi = 5; break;
    default: break;
  }
  // memcached prints the relative seconds left (0: none).
  int64_t ttl = exptime;
  if (exptime > limits::kRealtimeMaxDelta) ttl = exptime - engine_->clock()->UnixSeconds();
  if (ttl < 0) ttl = 0;
  const size_t total = ItemTotalSize(key.size(), 0, n);
  LogItemStore(ctx_->log, key, r, kCmd[mi], ttl, static_cast<int>(SlabClassFor(total)), fd_,
               static_cast<uint32_t>(n));
}

void MemcacheHandler::NotifyStore(std::string_view key, engine::StoreMode mode, bool has_expiry,
                                  bool was_new) {
  Invalidate(key);
  if (was_new) Notify(protocol::kKeClassNew, "new", key);
  const char* ev = mode == engine::StoreMode::kAppend    ? "append"
                   : mode == engine::StoreMode::kPrepend ? "prepend"
                                                         : "set";
  Notify(protocol::kKeClassString, ev, key);
  // append/prepend keep the item's expiry: only set-like stores give one.
  const bool appends = mode == engine::StoreMode::kAppend || mode == engine::StoreMode::kPrepend;
  if (has_expiry && !appends) Notify(protocol::kKeClassGeneric, "expire", key);
}

size_t MemcacheHandler::Swallow(size_t n, size_t avail) {
  size_t now = n < avail ? n : avail;
  swallow_ = n - now;
  return now;
}

size_t MemcacheHandler::ItemTotalSize(size_t nkey, uint32_t flags, size_t vlen) const {
  // memcached's item header (48 bytes), key + NUL, value + CRLF, CAS, and
  // 4 bytes of client flags when they are non-zero.
  return 48 + nkey + 1 + vlen + 2 + (ctx_->opts.cas_enabled ? 8 : 0) + (flags ? 4 : 0);
}

bool MemcacheHandler::TooLarge(size_t nkey, uint32_t flags, size_t vlen) {
  if (ItemTotalSize(nkey, flags, vlen) <= ctx_->opts.item_size_max) return false;
  engine_->CountTooLarge(ts_);  // stats store_too_large
  return true;
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
  prefetch_.Reset();
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
    if (used < len) prefetch_.Before(engine_, data, len, used, ScanTextRequest);
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
