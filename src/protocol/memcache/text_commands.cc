// memcached's classic text commands: get/gets/gat/gats, the storage family,
// incr/decr, delete, touch, flush_all. Run on the connection's worker thread.
#include <climits>
#include <cstring>

#include "common/limits.h"
#include "common/str_append.h"
#include "protocol/memcache/dispatch.h"
#include "protocol/memcache/watch_log.h"

namespace trove::memcache {

size_t MemcacheHandler::Retrieve(const Request& r, ReplyWriter& w) {
  const bool with_cas = (r.cmd->flags & kWithCas) != 0;
  const bool touch = (r.cmd->flags & kTouch) != 0;
  WordIterator it(r.args);
  {
    // memcached 1.6.45: get needs a key, gat an exptime and a key. A line
    // without them is not timed as a get.
    std::string_view first, second;
    WordIterator probe = it;
    if (!probe.Next(&first) || (touch && !probe.Next(&second))) {
      last_cmd_ = protocol::kMcOther;
      w.ClientError(kBadFormat);
      return r.line_len;
    }
  }
  int64_t exptime = 0;
  if (touch) {
    std::string_view t;
    if (!it.Next(&t) || !ParseInt(t, &exptime)) {
      w.ClientError("invalid exptime argument");
      return r.line_len;
    }
  }
  // memcached rejects the whole request for one over-long key; check them all
  // first so that no partial reply is written (needless for short lines).
  std::string_view key;
  if (r.args.size() > limits::kMemcacheMaxKey) {
    WordIterator check = it;
    while (check.Next(&key)) {
      if (key.size() > limits::kMemcacheMaxKey) {
        w.ClientError(kBadFormat);
        return r.line_len;
      }
    }
  }
  if (!acl_open_) {  // every key is checked before any value is written
    WordIterator check = it;
    while (check.Next(&key)) {
      if (!Permit(*r.cmd, key, w)) return r.line_len;
    }
  }
  // -o read_buf_mem_limit: one reply per key, reserved up front (memcached
  // fails at the key that finds no response object and answers only this).
  if (ctx_->opts.responses != nullptr) {
    WordIterator count = it;
    int64_t nkeys = 0;
    while (count.Next(&key)) ++nkeys;
    if (nkeys > 1 && !TakeResponses(nkeys - 1)) {
      w.ServerError("out of memory writing get response");
      return r.line_len;
    }
  }
  // A multiget prefetches its keys a batch at a time (the buckets and
  // stripe locks, then the items), so their cache misses overlap; a single
  // get skips it (the pipelined look-ahead in OnData covers that case).
  constexpr int kBatch = 16;
  WordIterator ahead = it;
  int in_batch = 0;
  {
    WordIterator probe = it;
    std::string_view k;
    if (!(probe.Next(&k) && probe.Next(&k))) in_batch = -1;  // one key at most
  }
  while (true) {
    if (in_batch == 0) {
      uint64_t hv[kBatch];
      std::string_view k;
      while (in_batch < kBatch && ahead.Next(&k)) {
        hv[in_batch] = engine::Engine::KeyHash(k);
        engine_->PrefetchKey(hv[in_batch++]);
      }
      for (int i = 0; i < in_batch; ++i) engine_->PrefetchItem(hv[i]);
    }
    if (!it.Next(&key)) break;
    if (in_batch > 0) --in_batch;
    engine::ItemRef ref = touch ? engine_->GetAndTouch(key, exptime, ts_) : engine_->Get(key, ts_);
    if (Watching(net::kLogFetchers)) {
      LogItemGet(ctx_->log, key, ref, fd_);
    }
    if (!ref) continue;
    if (touch) {
      Invalidate(key);
      NotifyTouch(key, exptime);
    }
    if (ref.type() != engine::ValueType::kString) {
      // Like memcached's other mid-multiget errors: the error ends the reply.
      w.ClientError(kWrongTypeError);
      return r.line_len;
    }
    // "VALUE <key> <flags> <bytes>[ <cas>]\r\n"
    char* start = w.Reserve(6 + key.size() + 3 * 21 + 2);
    char* p = start;
    std::memcpy(p, "VALUE ", 6);
    p += 6;
    std::memcpy(p, key.data(), key.size());
    p += key.size();
    *p++ = ' ';
    p = FormatU64(p, ref.client_flags());
    *p++ = ' ';
    p = FormatU64(p, ref.value_length());
    if (with_cas) {
      *p++ = ' ';
      p = FormatU64(p, ref.cas());
    }
    *p++ = '\r';
    *p++ = '\n';
    w.Commit(static_cast<size_t>(p - start));
    w.ItemValue(std::move(ref));
  }
  w.Word("END");
  return r.line_len;
}

size_t MemcacheHandler::Storage(const Request& r, ReplyWriter& w) {
  const ParsedLine& pl = *r.pl;
  const engine::StoreMode mode = r.cmd->mode;
  const size_t line_len = r.line_len;
  const char* after = r.after;
  const size_t after_len = r.after_len;
  // memcached 1.6.45's order. Until <bytes> parses, the block cannot be
  // sized: the error is the whole reply and the next line is a command.
  // Once it parses, every rejection swallows <bytes> + 2, so no byte of a
  // value is ever read as a command (issue 9).
  size_t n = 0;
  if (!ParseDataLength(pl, 4, &n, w)) return line_len;
  const size_t total = n + 2;
  // The last of at most 23 words, as memcached's tokenizer sees the line.
  w.set_quiet(pl.tokens[pl.count - 1] == "noreply");
  std::string_view key = pl.tokens[1];
  uint32_t flags = 0;
  int64_t exptime = 0;
  uint64_t cas = 0;
  if (key.size() > limits::kMemcacheMaxKey || !ParseFlags(pl.tokens[2], &flags) ||
      !ParseInt(pl.tokens[3], &exptime) ||
      (mode == engine::StoreMode::kCas &&
       (pl.count < 6 || !ParseCasUnique(pl.tokens[5], &cas)))) {
    w.ClientError(kBadFormat);
    return line_len + Swallow(total, after_len);
  }
  if (TooLarge(key.size(), flags, n)) {
    w.ServerError("object too large for cache");
    // memcached drops the old value of a failed set rather than keep stale data.
    if (mode == engine::StoreMode::kSet) (void)engine_->Delete(key, engine::DeleteArgs{}, ts_);
    return line_len + Swallow(total, after_len);
  }
  if (!acl_open_) req_bytes_ += total;  // the value counts toward bytes per second
  if (!Permit(*r.cmd, key, w)) return line_len + Swallow(total, after_len);
  engine::StoreArgs args;
  args.mode = mode;
  if (mode == engine::StoreMode::kCas) args.compare_cas = cas;
  if (after_len < total) {
    if (n < kDirectValueMin) {
      wanted_ = line_len + total;
      return 0;
    }
    return line_len + StartDirectValue(key, flags, exptime, n, args, /*meta=*/false, w.quiet(), {},
                                       after, after_len, w);
  }
  if (after[n] != '\r' || after[n + 1] != '\n') {
    w.ClientError("bad data chunk");
    return line_len + total;
  }
  if (Watching(net::kLogFetchers)) LogStoreLookup(key);
  const bool was_new = KeyIsNew(key);
  const engine::StoreResult res = engine_->Store(key, flags, exptime, std::string_view(after, n), args, ts_);
  if (Watching(net::kLogMutations)) LogStore(key, res, mode, exptime, n);
  if (res == engine::StoreResult::kStored && ke_mask_ != 0) NotifyStore(key, mode, exptime != 0, was_new);
  StoreReply(res, w);
  return line_len + total;
}

// incr, decr, delete and touch come with noreply applied and their key
// checked for length (kNoreply | kTextKey in the command table).
size_t MemcacheHandler::Arith(const Request& r, ReplyWriter& w) {
  const ParsedLine& pl = *r.pl;
  std::string_view key = pl.tokens[1];
  if (!Permit(*r.cmd, key, w)) return r.line_len;
  engine::ArithArgs args;
  args.incr = r.cmd->id == protocol::kMcIncr;
  if (!ParseUint(pl.tokens[2], &args.delta)) {
    w.ClientError("invalid numeric delta argument");
    return r.line_len;
  }
  engine::ArithOutput o = engine_->Arith(key, args, ts_);
  switch (o.result) {
    case engine::ArithResult::kOk:
      w.Number(o.value);
      Invalidate(key);
      Notify(protocol::kKeClassString, "incrby", key);  // Redis's event for INCR and DECR
      break;
    case engine::ArithResult::kNotFound:
      w.Word("NOT_FOUND");
      break;
    case engine::ArithResult::kNonNumeric:
      w.ClientError("cannot increment or decrement non-numeric value");
      break;
    case engine::ArithResult::kNoMemory:
      w.ServerError("out of memory");
      break;
    case engine::ArithResult::kExists:
      w.Word("EXISTS");
      break;
  }
  return r.line_len;
}

size_t MemcacheHandler::Delete(const Request& r, ReplyWriter& w) {
  // memcached 1.6.45 dropped the legacy "delete <key> <time>" check: words
  // after the key are ignored, and noreply is the last word.
  std::string_view key = r.pl->tokens[1];
  if (!Permit(*r.cmd, key, w)) return r.line_len;
  // `watch deletions` shows the deleted item's class and size.
  const bool log = Watching(net::kLogDeletions);
  const ItemShape old = log ? ShapeOf(engine_->Peek(key, ts_)) : ItemShape{};
  switch (engine_->Delete(key, engine::DeleteArgs{}, ts_)) {
    case engine::DeleteResult::kDeleted:
      if (log) LogDeleted(ctx_->log, key, "delete", old);
      w.Word("DELETED");
      Invalidate(key);
      Notify(protocol::kKeClassGeneric, "del", key);
      break;
    case engine::DeleteResult::kNotFound:
      w.Word("NOT_FOUND");
      break;
    case engine::DeleteResult::kExists:
      w.Word("EXISTS");
      break;
  }
  return r.line_len;
}

size_t MemcacheHandler::Touch(const Request& r, ReplyWriter& w) {
  std::string_view key = r.pl->tokens[1];
  int64_t exptime = 0;
  if (!ParseInt(r.pl->tokens[2], &exptime)) {
    w.ClientError("invalid exptime argument");
    return r.line_len;
  }
  if (!Permit(*r.cmd, key, w)) return r.line_len;
  const bool touched = engine_->Touch(key, exptime, ts_);
  w.Word(touched ? "TOUCHED" : "NOT_FOUND");
  if (touched) {
    Invalidate(key);
    NotifyTouch(key, exptime);
  }
  return r.line_len;
}

// Comes with noreply applied and the permission checked (kNoreplyFirst).
size_t MemcacheHandler::FlushAll(const Request& r, ReplyWriter& w) {
  const ParsedLine& pl = *r.pl;
  if (!ctx_->opts.flush_enabled) {  // -F, memcached's reply
    w.ClientError("flush_all not allowed");
    return r.line_len;
  }
  int64_t exptime = 0;
  if (pl.ntokens() != (pl.noreply() ? 3u : 2u) && !ParseInt(pl.tokens[1], &exptime)) {
    w.ClientError("invalid exptime argument");
    return r.line_len;
  }
  // The delay is an exptime: relative seconds, or an absolute unix time past 30 days.
  int64_t delay = 0;
  if (exptime > limits::kRealtimeMaxDelta) {
    delay = exptime - engine_->clock()->UnixSeconds();
    if (delay < 0) delay = 0;
  } else if (exptime > 0) {
    delay = exptime;
  }
  engine_->FlushAll(delay);
  // Tracking clients drop their whole cache now, even for a delayed flush
  // (docs/resp.md: what is read before the delay ends is not told again).
  if ((ke_mask_ & protocol::kKeTracking) != 0) ctx_->key_events->InvalidateAll();
  w.Word("OK");
  return r.line_len;
}

}  // namespace trove::memcache
