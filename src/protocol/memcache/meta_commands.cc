// memcached's meta commands mg, md, ma and me (ms is in meta_set.cc, mn in
// command_table.cc). Run on the connection's worker thread.
#include <climits>
#include <cstring>

#include "common/limits.h"
#include "common/str_append.h"
#include "protocol/memcache/dispatch.h"
#include "protocol/memcache/meta_reply.h"
#include "protocol/memcache/watch_log.h"

namespace trove::memcache {
namespace {

// True when the key could have been sent as plain text (no base64 needed).
bool IsPrintableKey(std::string_view key) {
  for (char ch : key) {
    unsigned char c = static_cast<unsigned char>(ch);
    if (c <= ' ' || c >= 127) return false;
  }
  return true;
}

}  // namespace

char* MemcacheHandler::PutKey(char* p, std::string_view key, bool binary) {
  p = PutChar(p, 'k');
  if (!binary) return PutBytes(p, key);
  p += Base64Encode(key, p);
  return PutChar(p, 'b');
}

bool MemcacheHandler::PutSharedFlag(char** p, std::string_view tok, std::string_view key,
                                    bool key_binary, uint64_t cas) {
  switch (tok[0]) {
    case 'O':
      *p = PutOpaque(*p, tok);
      return true;
    case 'k':
      *p = PutKey(*p, key, key_binary);
      return true;
    case 'c':
      *p = FormatU64(PutChar(*p, 'c'), cas);
      return true;
    default:
      return false;
  }
}

void MemcacheHandler::StatusLine(const char* code, const ParsedLine& pl, const MetaFlags& f,
                                 ReplyWriter& w) {
  char* start = w.Reserve(kMetaLineMax);
  char* p = PutBytes(start, code);
  for (size_t i = 2; i < pl.count; ++i) {
    char c = pl.tokens[i][0];
    if (c == 'O') p = PutOpaque(p, pl.tokens[i]);
    if (c == 'k') p = PutKey(p, f.key, f.key_binary);
  }
  w.Commit(static_cast<size_t>(PutCrlf(p) - start));
}

bool MemcacheHandler::MetaKeyChecks(const Request& r, const char* key_error, ReplyWriter& w) {
  const ParsedLine& pl = *r.pl;
  if (pl.count < 2 || !MetaTokensWellFormed(pl, 2)) {
    w.ClientError(kBadFormat);
    return false;
  }
  if (pl.tokens[1].size() > limits::kMemcacheMaxKey) {
    w.ClientError(key_error);
    return false;
  }
  if (pl.count > kMetaMaxTokens) {
    w.ClientError(kFlagsTooLong);
    return false;
  }
  return Permit(*r.cmd, pl.tokens[1], w);
}

bool MemcacheHandler::ParseMetaRequest(const ParsedLine& pl, MetaFlags* f, ReplyWriter& w) {
  if (const char* err = ParseMetaFlags(pl, 2, KeyBuf(), f)) {
    w.ClientError(err);  // "invalid flag" / "duplicate flag" (1.6.45)
    return false;
  }
  if (OpaqueTooLong(*f)) {
    w.ClientError("opaque token too long");
    return false;
  }
  return true;
}

size_t MemcacheHandler::MetaGet(const Request& r, ReplyWriter& w) {
  const ParsedLine& pl = *r.pl;
  MetaFlags f;
  if (!MetaKeyChecks(r, kBadFormat, w) || !ParseMetaRequest(pl, &f, w)) return r.line_len;
  engine::MetaGetArgs args;
  args.bump = !f.Has('u');
  if (f.has_ttl) args.touch_exptime = f.ttl;
  if (f.has_vivify) args.vivify_exptime = f.vivify_ttl;
  if (f.has_explicit_cas) args.explicit_cas = f.explicit_cas;  // only for what N creates
  if (f.has_recache) {
    args.recache_ttl = f.recache_ttl < 0 ? 0u : static_cast<uint32_t>(f.recache_ttl);
  }
  engine::MetaGetOutput o = engine_->MetaGet(f.key, args, ts_);
  if (Watching(net::kLogFetchers)) {
    LogItemGet(ctx_->log, f.key, o.item, fd_);
  }

  if (o.vivified || (o.item && f.has_ttl)) Invalidate(f.key);
  if (o.vivified) Notify(protocol::kKeClassNew, "new", f.key);
  if (o.item && f.has_ttl) NotifyTouch(f.key, f.ttl);
  if (!o.item) {
    if (f.Has('q')) return r.line_len;  // quiet mode hides a miss
    StatusLine("EN", pl, f, w);
    return r.line_len;
  }
  if (o.item.type() != engine::ValueType::kString) {
    w.ClientError(kWrongTypeError);
    return r.line_len;
  }

  const engine::ItemRef& it = o.item;
  // memcached 1.6.45: a C<cas> that matches the item's CAS masks the value
  // (the client already holds it): HD with the flags instead of VA.
  const bool value = f.Has('v') && !(f.has_cas && it.cas() == f.compare_cas);
  char* start = w.Reserve(kMetaLineMax);
  char* p = start;
  if (value) {
    p = PutBytes(p, "VA ");
    p = FormatU64(p, it.value_length());
  } else {
    p = PutBytes(p, "HD");
  }
  for (size_t i = 2; i < pl.count; ++i) {
    // memcached returns a hit's key in the form it was stored.
    if (PutSharedFlag(&p, pl.tokens[i], f.key, o.item.key_is_binary(), it.cas())) continue;
    switch (pl.tokens[i][0]) {
      case 's':
        p = FormatU64(PutChar(p, 's'), it.value_length());
        break;
      case 't':
        p = FormatI64(PutChar(p, 't'), o.ttl < 0 ? -1 : o.ttl);
        break;
      case 'f':
        p = FormatU64(PutChar(p, 'f'), it.client_flags());
        break;
      case 'l':
        p = FormatU64(PutChar(p, 'l'), o.last_access_ago);
        break;
      case 'h':
        p = PutBytes(PutChar(p, 'h'), o.hit_before ? "1" : "0");
        break;
      default:
        break;
    }
  }
  // memcached appends these after the requested flags, in this order.
  if (o.already_won) p = PutChar(p, 'Z');
  if (o.stale) p = PutChar(p, 'X');
  if (o.win) p = PutChar(p, 'W');
  w.Commit(static_cast<size_t>(PutCrlf(p) - start));
  if (value) w.ItemValue(std::move(o.item));
  return r.line_len;
}

size_t MemcacheHandler::MetaDelete(const Request& r, ReplyWriter& w) {
  const ParsedLine& pl = *r.pl;
  MetaFlags f;
  if (!MetaKeyChecks(r, kBadFormat, w) || !ParseMetaRequest(pl, &f, w)) return r.line_len;
  engine::DeleteArgs args;
  if (f.has_cas) args.compare_cas = f.compare_cas;
  args.invalidate = f.Has('I');
  if (args.invalidate && f.has_ttl) args.stale_exptime = f.ttl;
  args.remove_value = f.Has('x');
  if (f.has_explicit_cas) args.explicit_cas = f.explicit_cas;
  const char* code = "NF";
  // `watch deletions`: only an md that removes the item (not I or x).
  const bool log = Watching(net::kLogDeletions) && !args.invalidate && !args.remove_value;
  const ItemShape old = log ? ShapeOf(engine_->Peek(f.key, ts_)) : ItemShape{};
  switch (engine_->Delete(f.key, args, ts_)) {
    case engine::DeleteResult::kDeleted:
      if (log) LogDeleted(ctx_->log, f.key, "md", old);
      Invalidate(f.key);  // also I (stale) and x (value removed): the value changed
      // Only a delete that removes the key is Redis's "del" (I and x keep it).
      if (!args.invalidate && !args.remove_value) Notify(protocol::kKeClassGeneric, "del", f.key);
      if (f.Has('q')) return r.line_len;
      code = "HD";
      break;
    case engine::DeleteResult::kNotFound:
      code = "NF";
      break;
    case engine::DeleteResult::kExists:
      code = "EX";
      break;
  }
  StatusLine(code, pl, f, w);
  return r.line_len;
}

size_t MemcacheHandler::MetaArith(const Request& r, ReplyWriter& w) {
  const ParsedLine& pl = *r.pl;
  // memcached 1.6.45's ma reports an over-long key as a flag error, and
  // any flag error with this one text.
  constexpr const char* kFlagError = "invalid or duplicate flag";
  if (!MetaKeyChecks(r, kFlagError, w)) return r.line_len;
  MetaFlags f;
  if (ParseMetaFlags(pl, 2, KeyBuf(), &f) != nullptr) {
    w.ClientError(kFlagError);
    return r.line_len;
  }
  engine::ArithArgs args;
  switch (f.mode) {
    case 0:
    case 'I':
    case 'i':
    case '+':
      args.incr = true;
      break;
    case 'D':
    case 'd':
    case '-':
      args.incr = false;
      break;
    default:
      w.ClientError("invalid mode for ma M token");
      return r.line_len;
  }
  if (OpaqueTooLong(f)) {
    w.ClientError("opaque token too long");
    return r.line_len;
  }
  args.delta = f.delta;
  if (f.has_cas) args.compare_cas = f.compare_cas;
  if (f.has_explicit_cas) args.explicit_cas = f.explicit_cas;
  if (f.has_vivify) args.vivify_exptime = f.vivify_ttl;
  args.initial = f.initial;
  if (f.has_ttl) args.touch_exptime = f.ttl;
  engine::ArithOutput o = engine_->Arith(f.key, args, ts_);
  const char* code = nullptr;
  switch (o.result) {
    case engine::ArithResult::kOk:
      Invalidate(f.key);
      if (o.vivified) Notify(protocol::kKeClassNew, "new", f.key);
      Notify(protocol::kKeClassString, "incrby", f.key);
      if (f.has_ttl) NotifyTouch(f.key, f.ttl);
      break;
    case engine::ArithResult::kNotFound:
      code = "NF";
      break;
    case engine::ArithResult::kExists:
      code = "EX";
      break;
    case engine::ArithResult::kNonNumeric:
      w.ClientError("cannot increment or decrement non-numeric value");
      return r.line_len;
    case engine::ArithResult::kNoMemory:
      w.ServerError("out of memory");
      return r.line_len;
  }
  if (code != nullptr) {
    StatusLine(code, pl, f, w);
    return r.line_len;
  }
  // Quiet hides the whole success reply, value too, even for an item N just
  // created (memcached 1.6.45; 1.6.18 answered that one).
  if (f.Has('q')) return r.line_len;
  char num[20];
  size_t num_len = static_cast<size_t>(FormatU64(num, o.value) - num);
  char* start = w.Reserve(kMetaLineMax + 24);
  char* p = start;
  if (f.Has('v')) {
    p = FormatU64(PutBytes(p, "VA "), num_len);
  } else {
    p = PutBytes(p, "HD");
  }
  for (size_t i = 2; i < pl.count; ++i) {
    if (PutSharedFlag(&p, pl.tokens[i], f.key, f.key_binary, o.cas)) continue;
    if (pl.tokens[i][0] == 't') p = FormatI64(PutChar(p, 't'), o.ttl < 0 ? -1 : o.ttl);
  }
  p = PutCrlf(p);
  if (f.Has('v')) p = PutCrlf(PutBytes(p, std::string_view(num, num_len)));
  w.Commit(static_cast<size_t>(p - start));
  return r.line_len;
}

size_t MemcacheHandler::MetaDebug(const Request& r, ReplyWriter& w) {
  const ParsedLine& pl = *r.pl;
  const size_t nt = pl.ntokens();
  if (nt < 3 || !MetaTokensWellFormed(pl, 2) || pl.tokens[1].size() > limits::kMemcacheMaxKey) {
    w.ClientError(kBadFormat);
    return r.line_len;
  }
  std::string_view key = pl.tokens[1];
  bool binary = nt >= 4 && pl.tokens[2] == "b";
  if (binary) {
    size_t n = Base64Decode(key, KeyBuf(), kMaxDecodedKey);
    if (n == 0) {
      w.ClientError(kBadFormat);
      return r.line_len;
    }
    key = std::string_view(KeyBuf(), n);
  }
  engine::MetaGetArgs args;
  args.bump = false;
  engine::MetaGetOutput o = engine_->MetaGet(key, args, ts_);
  if (!o.item) {
    w.Word("EN");
    return r.line_len;
  }
  const engine::ItemRef& it = o.item;
  char* start = w.Reserve(kMetaLineMax);
  char* p = PutBytes(start, "ME ");
  // memcached re-encodes only keys stored as binary (with ms b). The engine
  // keeps no such mark, so a key that could not be sent as text counts as one.
  if (binary && !IsPrintableKey(key)) {
    p += Base64Encode(key, p);
  } else {
    p = PutBytes(p, key);
  }
  // memcached prints exp as (now - exptime): minus the seconds left.
  p = FormatI64(PutBytes(p, " exp="), o.ttl < 0 ? -1 : -o.ttl);
  p = FormatU64(PutBytes(p, " la="), o.last_access_ago);
  p = FormatU64(PutBytes(p, " cas="), it.cas());
  p = PutBytes(p, o.hit_before ? " fetch=yes" : " fetch=no");
  size_t total = ItemTotalSize(key.size(), it.client_flags(), it.value_length());
  p = FormatU64(PutBytes(p, " cls="), SlabClassFor(total));
  p = FormatU64(PutBytes(p, " size="), total);
  w.Commit(static_cast<size_t>(PutCrlf(p) - start));
  return r.line_len;
}

}  // namespace trove::memcache
