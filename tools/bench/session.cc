// ClientSession: request writing and reply matching for one connection (see
// session.h). Runs on the owning load thread; nothing here allocates after
// construction.
#include "session.h"

#include <charconv>
#include <cstring>

#include "common/check.h"

namespace trove::bench {

void Stats::Merge(const Stats& o) {
  completed += o.completed;
  ops += o.ops;
  sets += o.sets;
  gets += o.gets;
  hits += o.hits;
  misses += o.misses;
  err_malformed += o.err_malformed;
  err_unexpected += o.err_unexpected;
  err_mismatch += o.err_mismatch;
  err_connection += o.err_connection;
  all.Merge(o.all);
  set_lat.Merge(o.set_lat);
  get_lat.Merge(o.get_lat);
  if (first_error.empty()) first_error = o.first_error;
}

void Stats::NoteError(std::string_view what) {
  // Only the first error is kept, so the hot path allocates at most once.
  if (!first_error.empty()) return;
  first_error.assign(what.substr(0, 200));
}

namespace {
// Request framing overhead beyond key and value bytes, generously rounded.
constexpr size_t kRequestSlack = 64;
}  // namespace

ClientSession::ClientSession(Protocol proto, const ValueGen* values, int depth, int multiget_width)
    : proto_(proto), values_(values), depth_(depth), width_(multiget_width) {
  CHECK(depth_ >= 1 && width_ >= 1);
  ring_.resize(static_cast<size_t>(depth_));
  keys_.resize(static_cast<size_t>(depth_) * static_cast<size_t>(width_));
  size_t key = values_->KeyMaxLen() + kRequestSlack;
  size_t set_size = key + values_->max_size();
  size_t get_size = key * static_cast<size_t>(width_);
  out_.resize(static_cast<size_t>(depth_) * (set_size > get_size ? set_size : get_size));
  key_buf_.resize(values_->KeyMaxLen());
}

size_t ClientSession::MaxReplySize() const {
  return values_->max_size() + values_->KeyMaxLen() + kRequestSlack;
}

void ClientSession::Append(std::string_view s) {
  DCHECK(out_end_ + s.size() <= out_.size());
  std::memcpy(out_.data() + out_end_, s.data(), s.size());
  out_end_ += s.size();
}

void ClientSession::AppendU64(uint64_t v) {
  char* p = out_.data() + out_end_;
  out_end_ = static_cast<size_t>(std::to_chars(p, p + 20, v).ptr - out_.data());
}

void ClientSession::AppendKey(uint64_t k) {
  out_end_ += values_->FormatKey(k, out_.data() + out_end_);
}

void ClientSession::AppendRespBulkHeader(size_t len) {
  Append("$");
  AppendU64(len);
  Append("\r\n");
}

void ClientSession::Consumed(size_t n) {
  DCHECK(n <= out_end_ - out_start_);
  out_start_ += n;
  if (out_start_ == out_end_) out_start_ = out_end_ = 0;
}

void ClientSession::IssueSet(uint64_t key, uint32_t version, int64_t start_ns, bool measured) {
  DCHECK(CanIssue());
  if (out_start_ > 0) {  // keep the tail room promised by invariant 2
    std::memmove(out_.data(), out_.data() + out_start_, out_end_ - out_start_);
    out_end_ -= out_start_;
    out_start_ = 0;
  }
  size_t vlen = values_->SizeFor(key, version);
  switch (proto_) {
    case Protocol::kText:
      Append("set ");
      AppendKey(key);
      Append(" 0 0 ");
      AppendU64(vlen);
      Append("\r\n");
      break;
    case Protocol::kMeta:
      Append("ms ");
      AppendKey(key);
      Append(" ");
      AppendU64(vlen);
      Append("\r\n");
      break;
    case Protocol::kResp: {
      Append("*3\r\n$3\r\nSET\r\n");
      size_t klen = values_->FormatKey(key, key_buf_.data());
      AppendRespBulkHeader(klen);
      Append(std::string_view(key_buf_.data(), klen));
      Append("\r\n");
      AppendRespBulkHeader(vlen);
      break;
    }
  }
  out_end_ += values_->Make(key, version, out_.data() + out_end_);
  Append("\r\n");
  int slot = (head_ + pending_count_) % depth_;
  ring_[slot] = Pending{Kind::kSet, measured, false, 0, start_ns, version};
  ++pending_count_;
}

void ClientSession::IssueGet(const uint64_t* keys, int64_t start_ns, bool measured) {
  DCHECK(CanIssue());
  if (out_start_ > 0) {
    std::memmove(out_.data(), out_.data() + out_start_, out_end_ - out_start_);
    out_end_ -= out_start_;
    out_start_ = 0;
  }
  switch (proto_) {
    case Protocol::kText:
      Append("get");
      for (int i = 0; i < width_; ++i) {
        Append(" ");
        AppendKey(keys[i]);
      }
      Append("\r\n");
      break;
    case Protocol::kMeta:
      for (int i = 0; i < width_; ++i) {
        Append("mg ");
        AppendKey(keys[i]);
        Append(" v\r\n");
      }
      break;
    case Protocol::kResp:
      if (width_ == 1) {
        Append("*2\r\n$3\r\nGET\r\n");
      } else {
        Append("*");
        AppendU64(static_cast<uint64_t>(width_) + 1);
        Append("\r\n$4\r\nMGET\r\n");
      }
      for (int i = 0; i < width_; ++i) {
        size_t klen = values_->FormatKey(keys[i], key_buf_.data());
        AppendRespBulkHeader(klen);
        Append(std::string_view(key_buf_.data(), klen));
        Append("\r\n");
      }
      break;
  }
  int slot = (head_ + pending_count_) % depth_;
  ring_[slot] = Pending{Kind::kGet, measured, false, 0, start_ns, 0};
  std::memcpy(keys_.data() + static_cast<size_t>(slot) * width_, keys,
              sizeof(uint64_t) * static_cast<size_t>(width_));
  ++pending_count_;
}

void ClientSession::Complete(int64_t done_ns, Stats* stats) {
  Pending& p = Front();
  ++stats->completed;
  if (p.measured) {
    uint64_t lat = done_ns > p.start_ns ? static_cast<uint64_t>(done_ns - p.start_ns) : 0;
    stats->all.Record(lat);
    ++stats->ops;
    if (p.kind == Kind::kSet) {
      ++stats->sets;
      stats->set_lat.Record(lat);
    } else {
      ++stats->gets;
      stats->get_lat.Record(lat);
    }
  }
  head_ = (head_ + 1) % depth_;
  --pending_count_;
}

void ClientSession::CheckValue(uint64_t key, std::string_view data, Stats* stats) {
  if (Front().measured) ++stats->hits;
  VerifyResult v = values_->Verify(key, data);
  if (v != VerifyResult::kOk) {
    ++stats->err_mismatch;
    stats->NoteError(v == VerifyResult::kBadLength ? "value of wrong length for its key"
                                                   : "value bytes differ from any written");
  }
}

bool ClientSession::OnMc(const McReply& r, int64_t done_ns, Stats* stats) {
  Pending& p = Front();
  bool is_error =
      r.kind == McKind::kError || r.kind == McKind::kClientError || r.kind == McKind::kServerError;
  if (is_error) {
    ++stats->err_unexpected;
    stats->NoteError(r.text.empty() ? std::string_view("ERROR") : r.text);
    if (proto_ == Protocol::kMeta && p.kind == Kind::kGet && ++p.done < width_) return true;
    Complete(done_ns, stats);
    return true;
  }
  if (p.kind == Kind::kSet) {
    McKind want = proto_ == Protocol::kText ? McKind::kStored : McKind::kMetaHit;
    if (r.kind == want) {
      Complete(done_ns, stats);
      return true;
    }
    if (r.kind == McKind::kNotStored || r.kind == McKind::kMetaNotStored) {
      ++stats->err_unexpected;
      stats->NoteError("set answered NOT_STORED");
      Complete(done_ns, stats);
      return true;
    }
    stats->NoteError("reply does not answer a set");
    return false;
  }
  const uint64_t* keys = FrontKeys();
  if (proto_ == Protocol::kText) {
    if (r.kind == McKind::kEnd) {
      if (p.measured) stats->misses += static_cast<uint64_t>(width_ - p.done);
      Complete(done_ns, stats);
      return true;
    }
    if (r.kind != McKind::kValue) {
      stats->NoteError("reply does not answer a get");
      return false;
    }
    // Hits come back in request order with the misses left out.
    for (int j = p.done; j < width_; ++j) {
      size_t klen = values_->FormatKey(keys[j], key_buf_.data());
      if (std::string_view(key_buf_.data(), klen) != r.key) continue;
      if (p.measured) stats->misses += static_cast<uint64_t>(j - p.done);
      CheckValue(keys[j], r.data, stats);
      p.done = j + 1;
      return true;
    }
    stats->NoteError("VALUE for a key that was not asked for");
    return false;
  }
  // Meta: one reply per mg.
  if (r.kind == McKind::kMetaValue) {
    CheckValue(keys[p.done], r.data, stats);
  } else if (r.kind == McKind::kMetaMiss) {
    if (p.measured) ++stats->misses;
  } else {
    stats->NoteError("reply does not answer an mg");
    return false;
  }
  if (++p.done == width_) Complete(done_ns, stats);
  return true;
}

bool ClientSession::OnResp(const RespReply& r, int64_t done_ns, Stats* stats) {
  Pending& p = Front();
  if (r.kind == RespKind::kError) {
    ++stats->err_unexpected;
    stats->NoteError(r.str);
    // An error in place of the MGET array answers the whole request.
    Complete(done_ns, stats);
    return true;
  }
  if (p.kind == Kind::kSet) {
    if (r.kind == RespKind::kSimple && r.str == "OK") {
      Complete(done_ns, stats);
      return true;
    }
    stats->NoteError("reply does not answer SET");
    return false;
  }
  if (width_ > 1 && !p.header_seen) {
    if (r.kind != RespKind::kArray || r.integer != width_) {
      stats->NoteError("MGET reply is not an array of the asked width");
      return false;
    }
    p.header_seen = true;
    return true;
  }
  if (r.kind == RespKind::kBulk) {
    CheckValue(FrontKeys()[p.done], r.str, stats);
  } else if (r.kind == RespKind::kNullBulk) {
    if (p.measured) ++stats->misses;
  } else {
    stats->NoteError("reply does not answer GET");
    return false;
  }
  if (++p.done == width_) Complete(done_ns, stats);
  return true;
}

bool ClientSession::OnInput(const char* p, size_t n, int64_t done_ns, Stats* stats, size_t* used) {
  size_t off = 0;
  *used = 0;
  while (off < n) {
    size_t consumed = 0;
    ParseStatus st;
    RespReply resp;
    McReply mc;
    if (proto_ == Protocol::kResp) {
      st = ParseRespReply(p + off, n - off, &resp, &consumed);
    } else {
      st = ParseMcReply(p + off, n - off, &mc, &consumed);
    }
    if (st == ParseStatus::kNeedMore) break;
    if (st == ParseStatus::kError) {
      ++stats->err_malformed;
      stats->NoteError("malformed reply bytes");
      *used = off;
      return false;
    }
    if (pending_count_ == 0) {
      ++stats->err_unexpected;
      stats->NoteError("reply with no request outstanding");
      *used = off;
      return false;
    }
    bool in_sync =
        proto_ == Protocol::kResp ? OnResp(resp, done_ns, stats) : OnMc(mc, done_ns, stats);
    off += consumed;
    if (!in_sync) {
      ++stats->err_unexpected;
      *used = off;
      return false;
    }
  }
  *used = off;
  return true;
}

}  // namespace trove::bench
