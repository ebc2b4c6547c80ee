// MemcacheHandler's storage values read straight into item memory: the item
// is allocated when the command line is parsed and filled as the value's
// bytes arrive, across reads (dispatch.h, invariant 4).
#include <algorithm>
#include <cstring>

#include "protocol/memcache/dispatch.h"
#include "protocol/memcache/meta_parser.h"
#include "protocol/memcache/text_parser.h"

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
    (void)ParseMetaFlags(pl, 3, key_buf_, &f);
    MetaSetReply(pl, f, r, cas, w);
  } else {
    StoreReply(r, w);
  }
  w.set_quiet(false);
}

}  // namespace trove::memcache
