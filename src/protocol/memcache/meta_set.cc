// memcached's meta set (ms): its checks, the store and its reply line.
// Run on the connection's worker thread.
#include "common/limits.h"
#include "common/str_append.h"
#include "protocol/memcache/dispatch.h"
#include "protocol/memcache/meta_reply.h"
#include "protocol/memcache/watch_log.h"

namespace trove::memcache {

size_t MemcacheHandler::MetaSet(const Request& r, ReplyWriter& w) {
  const ParsedLine& pl = *r.pl;
  const size_t line_len = r.line_len;
  const char* after = r.after;
  const size_t after_len = r.after_len;
  // As the set family (issue 9): until <bytes> parses nothing is swallowed;
  // after that every rejection swallows the block. Errors ignore q.
  size_t n = 0;
  if (!ParseDataLength(pl, 2, &n, w)) return line_len;
  const size_t total = n + 2;
  // memcached 1.6.45 cannot size the block after a malformed flag token and
  // leaves it to be read as commands; Trove swallows it like any other error.
  if (!MetaTokensWellFormed(pl, 3) || pl.tokens[1].size() > limits::kMemcacheMaxKey) {
    w.ClientError(kBadFormat);
    return line_len + Swallow(total, after_len);
  }
  if (pl.count > kMetaMaxTokens) {
    w.ClientError(kFlagsTooLong);
    return line_len + Swallow(total, after_len);
  }
  if (!acl_open_) req_bytes_ += total;
  if (!Permit(*r.cmd, pl.tokens[1], w)) return line_len + Swallow(total, after_len);
  // From here on an error swallows the value, which memcached can size now.
  MetaFlags f;
  const char* err = ParseMetaFlags(pl, 3, KeyBuf(), &f);
  if (err == nullptr && OpaqueTooLong(f)) err = "opaque token too long";
  engine::StoreArgs args;
  args.key_binary = f.key_binary;
  switch (f.mode) {
    case 0:
    case 'S':
      args.mode = engine::StoreMode::kSet;
      break;
    case 'E':
      args.mode = engine::StoreMode::kAdd;
      break;
    case 'A':
      args.mode = engine::StoreMode::kAppend;
      break;
    case 'P':
      args.mode = engine::StoreMode::kPrepend;
      break;
    case 'R':
      args.mode = engine::StoreMode::kReplace;
      break;
    default:
      if (err == nullptr) err = "invalid mode for ms M token";
      break;
  }
  if (err != nullptr) {
    w.ClientError(err);
    return line_len + Swallow(total, after_len);
  }
  if (TooLarge(f.key.size(), f.client_flags, n)) {
    w.ServerError("object too large for cache");
    (void)engine_->Delete(f.key, engine::DeleteArgs{}, ts_);
    return line_len + Swallow(total, after_len);
  }
  // A compared set or replace is memcached's "cas"; the engine decides that.
  if (f.has_cas) args.compare_cas = f.compare_cas;
  args.invalidate = f.Has('I');
  if (f.has_explicit_cas) args.explicit_cas = f.explicit_cas;
  if (f.has_vivify) args.vivify_exptime = f.vivify_ttl;
  const int64_t exptime = f.has_ttl ? f.ttl : 0;
  if (after_len < total) {
    if (n < kDirectValueMin) {
      wanted_ = line_len + total;
      return 0;
    }
    std::string_view line(pl.tokens[0].data(), static_cast<size_t>(pl.tokens[pl.count - 1].data() +
                                                                   pl.tokens[pl.count - 1].size() -
                                                                   pl.tokens[0].data()));
    return line_len + StartDirectValue(f.key, f.client_flags, exptime, n, args, /*meta=*/true,
                                       /*quiet=*/false, line, after, after_len, w);
  }
  if (after[n] != '\r' || after[n + 1] != '\n') {
    w.ClientError("bad data chunk");  // errors ignore q
    return line_len + total;
  }
  uint64_t cas = 0;
  if (Watching(net::kLogFetchers)) LogStoreLookup(f.key);
  const bool was_new = KeyIsNew(f.key);
  engine::StoreResult res =
      engine_->Store(f.key, f.client_flags, exptime, std::string_view(after, n), args, ts_, &cas);
  if (res == engine::StoreResult::kStored && ke_mask_ != 0) {
    NotifyStore(f.key, args.mode, exptime != 0, was_new);
  }
  if (Watching(net::kLogMutations)) {
    const bool compared = f.has_cas && args.mode == engine::StoreMode::kSet;
    LogStore(f.key, res, compared ? engine::StoreMode::kCas : args.mode, exptime, n);
  }
  MetaSetReply(pl, f, res, cas, w);
  return line_len + total;
}

void MemcacheHandler::MetaSetReply(const ParsedLine& pl, const MetaFlags& f, engine::StoreResult r,
                                   uint64_t cas, ReplyWriter& w) {
  if (r == engine::StoreResult::kStored && f.Has('q')) return;
  const char* code = StoreOutcomeWord(r, /*meta=*/true, w);
  if (code == nullptr) return;
  if (r != engine::StoreResult::kStored) cas = 0;
  char* start = w.Reserve(kMetaLineMax);
  char* p = PutBytes(start, code);
  for (size_t i = 3; i < pl.count; ++i) {
    if (PutSharedFlag(&p, pl.tokens[i], f.key, f.key_binary, cas)) continue;
    if (pl.tokens[i][0] == 's') {
      // The item's final size (after an append or prepend), as memcached;
      // the request's size when nothing was stored.
      uint64_t size = 0;
      (void)ParseU64(pl.tokens[2], &size);
      if (r == engine::StoreResult::kStored) {
        if (engine::ItemRef it = engine_->Peek(f.key, ts_)) size = it.value_length();
      }
      p = FormatU64(PutChar(p, 's'), size);
    }
  }
  w.Commit(static_cast<size_t>(PutCrlf(p) - start));
}

}  // namespace trove::memcache
