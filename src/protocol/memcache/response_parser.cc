// memcached reply parsing, shared by the proxy's backend sockets and
// trove-bench (see response_parser.h).
#include "protocol/memcache/response_parser.h"

#include <charconv>
#include <cstring>

namespace trove::memcache {
namespace {

bool ParseU64(std::string_view s, uint64_t* v) {
  if (s.empty()) return false;
  auto r = std::from_chars(s.data(), s.data() + s.size(), *v);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

// Splits off the next space-separated token of *rest.
std::string_view NextToken(std::string_view* rest) {
  const size_t sp = rest->find(' ');
  std::string_view tok = rest->substr(0, sp);
  *rest = sp == std::string_view::npos ? std::string_view() : rest->substr(sp + 1);
  return tok;
}

// Reads `len` bytes of data plus CRLF starting at p + off.
ReplyStatus TakeData(const char* p, size_t n, size_t off, uint64_t len, uint64_t max,
                     std::string_view* data, size_t* consumed) {
  if (len > max) return ReplyStatus::kBad;
  if (n < off + len + 2) return ReplyStatus::kNeedMore;
  if (p[off + len] != '\r' || p[off + len + 1] != '\n') return ReplyStatus::kBad;
  *data = std::string_view(p + off, static_cast<size_t>(len));
  *consumed = off + static_cast<size_t>(len) + 2;
  return ReplyStatus::kOk;
}

struct Word {
  std::string_view word;
  ReplyKind kind;
  bool takes_text;  // words may follow (meta flags, a message)
};

constexpr Word kWords[] = {
    {"END", ReplyKind::kEnd, false},
    {"STORED", ReplyKind::kStored, false},
    {"NOT_STORED", ReplyKind::kNotStored, false},
    {"EXISTS", ReplyKind::kExists, false},
    {"NOT_FOUND", ReplyKind::kNotFound, false},
    {"DELETED", ReplyKind::kDeleted, false},
    {"TOUCHED", ReplyKind::kTouched, false},
    {"OK", ReplyKind::kOk, false},
    {"VERSION", ReplyKind::kVersion, true},
    {"HD", ReplyKind::kMetaHit, true},
    {"EN", ReplyKind::kMetaMiss, true},
    {"NS", ReplyKind::kMetaNotStored, true},
    {"EX", ReplyKind::kMetaExists, true},
    {"NF", ReplyKind::kMetaNotFound, true},
    {"MN", ReplyKind::kMetaNoop, true},
    {"ME", ReplyKind::kMetaDebug, true},
    {"ERROR", ReplyKind::kError, true},
    {"CLIENT_ERROR", ReplyKind::kClientError, true},
    {"SERVER_ERROR", ReplyKind::kServerError, true},
};

}  // namespace

ReplyStatus ParseReplyElement(const char* p, size_t n, ReplyElement* out, size_t* consumed,
                              const ReplyLimits& limits) {
  const size_t window = n < limits.max_line + 2 ? n : limits.max_line + 2;
  const void* lf = std::memchr(p, '\n', window);
  if (lf == nullptr) return n >= limits.max_line + 2 ? ReplyStatus::kBad : ReplyStatus::kNeedMore;
  const size_t pos = static_cast<size_t>(static_cast<const char*>(lf) - p);
  if (pos == 0 || p[pos - 1] != '\r') return ReplyStatus::kBad;  // bare LF
  const std::string_view line(p, pos - 1);
  const size_t line_end = pos + 1;
  *out = ReplyElement();
  out->line_len = line.size();

  std::string_view rest = line;
  const std::string_view word = NextToken(&rest);
  if (word == "VALUE") {
    const std::string_view key = NextToken(&rest);
    uint64_t flags = 0, len = 0;
    if (key.empty() || !ParseU64(NextToken(&rest), &flags) || flags > UINT32_MAX ||
        !ParseU64(NextToken(&rest), &len)) {
      return ReplyStatus::kBad;
    }
    if (!rest.empty()) {  // the CAS of gets
      uint64_t cas = 0;
      if (!ParseU64(NextToken(&rest), &cas) || !rest.empty()) return ReplyStatus::kBad;
    }
    out->kind = ReplyKind::kValue;
    out->key = key;
    out->flags = static_cast<uint32_t>(flags);
    return TakeData(p, n, line_end, len, limits.max_value, &out->data, consumed);
  }
  if (word == "VA") {
    uint64_t len = 0;
    if (!ParseU64(NextToken(&rest), &len)) return ReplyStatus::kBad;
    out->kind = ReplyKind::kMetaValue;
    out->text = rest;
    return TakeData(p, n, line_end, len, limits.max_value, &out->data, consumed);
  }
  for (const Word& w : kWords) {
    if (word != w.word) continue;
    if (!w.takes_text && !rest.empty()) return ReplyStatus::kBad;
    out->kind = w.kind;
    out->text = rest;
    *consumed = line_end;
    return ReplyStatus::kOk;
  }
  uint64_t num = 0;
  if (rest.empty() && ParseU64(word, &num)) {
    out->kind = ReplyKind::kNumber;
    *consumed = line_end;
    return ReplyStatus::kOk;
  }
  return ReplyStatus::kBad;
}

int CodeOf(ReplyKind k) {
  switch (k) {
    case ReplyKind::kStored: return kCodeStored;
    case ReplyKind::kExists:
    case ReplyKind::kMetaExists: return kCodeExists;
    case ReplyKind::kDeleted: return kCodeDeleted;
    case ReplyKind::kTouched: return kCodeTouched;
    case ReplyKind::kVersion: return kCodeVersion;
    case ReplyKind::kNotFound:
    case ReplyKind::kMetaNotFound: return kCodeNotFound;
    case ReplyKind::kNotStored:
    case ReplyKind::kMetaNotStored: return kCodeNotStored;
    case ReplyKind::kMetaNoop: return kCodeNop;
    case ReplyKind::kEnd:
    case ReplyKind::kMetaMiss: return kCodeEnd;
    case ReplyKind::kError: return kCodeError;
    case ReplyKind::kClientError: return kCodeClientError;
    case ReplyKind::kServerError: return kCodeServerError;
    case ReplyKind::kValue:
    case ReplyKind::kOk:
    case ReplyKind::kNumber:
    case ReplyKind::kMetaValue:
    case ReplyKind::kMetaHit:
    case ReplyKind::kMetaDebug: return kCodeOk;
  }
  return kCodeOk;
}

int TypeOf(ReplyKind k) {
  switch (k) {
    case ReplyKind::kValue: return kTypeGet;
    case ReplyKind::kEnd: return kTypeEnd;
    case ReplyKind::kVersion: return kTypeVersion;
    case ReplyKind::kNumber: return kTypeNumeric;
    case ReplyKind::kError:
    case ReplyKind::kClientError:
    case ReplyKind::kServerError: return kTypeErrmsg;
    case ReplyKind::kMetaValue:
    case ReplyKind::kMetaHit:
    case ReplyKind::kMetaMiss:
    case ReplyKind::kMetaNotStored:
    case ReplyKind::kMetaExists:
    case ReplyKind::kMetaNotFound:
    case ReplyKind::kMetaNoop:
    case ReplyKind::kMetaDebug: return kTypeMeta;
    default: return kTypeGeneric;
  }
}

ReplyStatus ParseReply(const char* p, size_t n, ParsedReply* out) {
  ReplyElement e;
  size_t used = 0;
  ReplyStatus st = ParseReplyElement(p, n, &e, &used);
  if (st != ReplyStatus::kOk) return st;
  *out = ParsedReply{};
  out->line_len = e.line_len;
  out->code = CodeOf(e.kind);
  out->type = TypeOf(e.kind);
  if (e.kind == ReplyKind::kMetaValue) {
    out->vlen = e.data.size();
    out->value_off = static_cast<size_t>(e.data.data() - p);
  }
  if (e.kind != ReplyKind::kValue) {
    out->len = used;
    return ReplyStatus::kOk;
  }
  // VALUE blocks through END: the whole `get` reply is one.
  out->vlen = e.data.size();
  out->value_off = static_cast<size_t>(e.data.data() - p);
  size_t pos = used;
  for (;;) {
    st = ParseReplyElement(p + pos, n - pos, &e, &used);
    if (st != ReplyStatus::kOk) return st;
    pos += used;
    if (e.kind == ReplyKind::kEnd) break;
    if (e.kind != ReplyKind::kValue) return ReplyStatus::kBad;
  }
  out->len = pos;
  return ReplyStatus::kOk;
}

}  // namespace trove::memcache
