// The store path the set family and ms share: values read straight into
// item memory (the item is allocated when the command line is parsed and
// filled as the value's bytes arrive, across reads: dispatch.h, invariant 4),
// item size checks, a rejected value's swallowing, and a store's watch lines,
// keyspace events and text reply. Run on the connection's worker thread.
#include <algorithm>
#include <cstring>

#include "common/limits.h"
#include "protocol/memcache/dispatch.h"
#include "protocol/memcache/meta_parser.h"
#include "protocol/memcache/text_parser.h"
#include "protocol/memcache/watch_log.h"

namespace trove::memcache {

size_t MemcacheHandler::StartDirectValue(std::string_view key, uint32_t flags, int64_t exptime,
                                         size_t n, const engine::StoreArgs& args, bool meta,
                                         bool quiet, std::string_view line, const char* after,
                                         size_t after_len, ReplyWriter& w) {
  engine::AllocOutput a = engine_->Allocate(key, flags, exptime, n, ts_);
  if (a.status != engine::AllocStatus::kOk) {
    w.ServerError(a.status == engine::AllocStatus::kTooLarge ? "object too large for cache"
                                                             : "out of memory storing object");
    // As memcached: a failed set must not leave the old value readable.
    if (args.mode == engine::StoreMode::kSet) {
      (void)engine_->Delete(key, engine::DeleteArgs{}, ts_);
    }
    return Swallow(n + 2, after_len);
  }
  pending_.active = true;
  pending_.meta = meta;
  pending_.quiet = quiet;
  pending_.item = std::move(a.item);
  pending_.args = args;
  pending_.n = n;
  pending_.got = 0;
  pending_.line.assign(line);
  return FeedPending(after, after_len, w);
}

size_t MemcacheHandler::FeedPending(const char* data, size_t len, ReplyWriter& w) {
  PendingValue& pv = pending_;
  size_t used = 0;
  if (pv.got < pv.n && len > 0) {
    const size_t k = std::min(len, pv.n - pv.got);
    pv.item.WriteValue(pv.got, data, k);
    used = k;
    pv.got += k;
  }
  while (pv.got >= pv.n && pv.got < pv.n + 2 && used < len) {
    pv.tail[pv.got - pv.n] = data[used++];
    ++pv.got;
  }
  if (pv.got == pv.n + 2) FinishPending(w);
  return used;
}

void MemcacheHandler::FinishPending(ReplyWriter& w) {
  PendingValue& pv = pending_;
  pv.active = false;
  engine::ItemRef item = std::move(pv.item);
  w.set_quiet(pv.quiet);
  if (pv.tail[0] != '\r' || pv.tail[1] != '\n') {
    w.ClientError("bad data chunk");  // the unstored item is freed with `item`
    w.set_quiet(false);
    return;
  }
  uint64_t cas = 0;
  const bool log_store = Watching(net::kLogMutations);
  const bool notify = ke_mask_ != 0;
  std::string key_copy;
  int64_t exp_unix = 0;
  bool was_new = false;
  if (log_store || notify) {
    key_copy.assign(item.key());
    exp_unix = item.expires_at_unix();
    was_new = KeyIsNew(key_copy);
  }
  if (Watching(net::kLogFetchers)) LogStoreLookup(item.key());
  engine::StoreResult r = engine_->StoreItem(item, pv.args, ts_, &cas);
  if (log_store) LogStore(key_copy, r, pv.args.mode, exp_unix, pv.n);
  if (notify && r == engine::StoreResult::kStored) {
    NotifyStore(key_copy, pv.args.mode, exp_unix != 0, was_new);
  }
  if (pv.meta) {
    // The request's flags, parsed again from the kept line.
    ParsedLine pl;
    Tokenize(pv.line, &pl);
    MetaFlags f;
    (void)ParseMetaFlags(pl, 3, KeyBuf(), &f);
    MetaSetReply(pl, f, r, cas, w);
  } else {
    StoreReply(r, w);
  }
  w.set_quiet(false);
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

uint32_t MemcacheHandler::SlabClassFor(size_t total) const {
  const engine::EngineOptions& o = engine_->options();
  const size_t chunk_max = o.slab_chunk_max ? o.slab_chunk_max : o.item_size_max / 2;
  // memcached's slabs_init: class 1 holds header + -n bytes, each next class
  // is -f times larger (8-byte aligned), and the last class is chunk_max.
  double size = 48.0 + static_cast<double>(o.chunk_size_min);
  uint32_t cls = 1;
  const uint32_t kMaxClasses = 63;
  while (cls < kMaxClasses - 1 && size <= static_cast<double>(chunk_max) / o.factor) {
    size_t s = static_cast<size_t>(size);
    if (s % 8) s += 8 - s % 8;
    if (total <= s) return cls;
    size = static_cast<double>(s) * o.factor;
    ++cls;
  }
  return cls;
}

bool MemcacheHandler::ParseDataLength(const ParsedLine& pl, size_t at, size_t* n, ReplyWriter& w) {
  if (pl.count > at && ParseValueLength(pl.tokens[at], n)) return true;
  w.ClientError(kBadFormat);
  return false;
}

const char* MemcacheHandler::StoreOutcomeWord(engine::StoreResult r, bool meta, ReplyWriter& w) {
  switch (r) {
    case engine::StoreResult::kStored:
      return meta ? "HD" : "STORED";
    case engine::StoreResult::kNotStored:
      return meta ? "NS" : "NOT_STORED";
    case engine::StoreResult::kExists:
      return meta ? "EX" : "EXISTS";
    case engine::StoreResult::kNotFound:
      return meta ? "NF" : "NOT_FOUND";
    case engine::StoreResult::kTooLarge:
      w.ServerError("object too large for cache");
      return nullptr;
    case engine::StoreResult::kNoMemory:
      w.ServerError("out of memory storing object");
      return nullptr;
  }
  return nullptr;
}

void MemcacheHandler::StoreReply(engine::StoreResult r, ReplyWriter& w) {
  if (const char* word = StoreOutcomeWord(r, /*meta=*/false, w)) w.Word(word);
}

}  // namespace trove::memcache
