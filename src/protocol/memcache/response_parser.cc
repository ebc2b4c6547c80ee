// Reply framing for backend connections (see response_parser.h).
#include "protocol/memcache/response_parser.h"

#include <cstring>

namespace trove::memcache {
namespace {

// The line at p (without CRLF / LF) and the bytes through its '\n'.
bool LineAt(const char* p, size_t n, std::string_view* line, size_t* used) {
  const char* nl = static_cast<const char*>(std::memchr(p, '\n', n));
  if (nl == nullptr) return false;
  size_t l = static_cast<size_t>(nl - p);
  *used = l + 1;
  if (l > 0 && p[l - 1] == '\r') --l;
  *line = std::string_view(p, l);
  return true;
}

bool StartsWith(std::string_view s, std::string_view pre) { return s.substr(0, pre.size()) == pre; }

// The n-th space-separated word of s (0-based), or empty.
std::string_view Word(std::string_view s, int n) {
  size_t i = 0;
  for (int w = 0;; ++w) {
    while (i < s.size() && s[i] == ' ') ++i;
    size_t j = i;
    while (j < s.size() && s[j] != ' ') ++j;
    if (w == n || j == i) return s.substr(i, j - i);
    i = j;
  }
}

bool Digits(std::string_view s, uint64_t* v) {
  if (s.empty() || s.size() > 19) return false;
  uint64_t x = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    x = x * 10 + static_cast<uint64_t>(c - '0');
  }
  *v = x;
  return true;
}

}  // namespace

ReplyStatus ParseReply(const char* p, size_t n, ParsedReply* out) {
  std::string_view line;
  size_t used = 0;
  if (!LineAt(p, n, &line, &used)) {
    // A line this long without an end is not a reply.
    return n > 8192 ? ReplyStatus::kBad : ReplyStatus::kNeedMore;
  }
  *out = ParsedReply{};
  out->line_len = line.size();
  if (StartsWith(line, "VALUE ")) {
    // VALUE <key> <flags> <bytes> [<cas>], value, CRLF; more VALUEs; END.
    size_t pos = 0;
    bool first = true;
    for (;;) {
      std::string_view l;
      size_t lu = 0;
      if (!LineAt(p + pos, n - pos, &l, &lu)) return ReplyStatus::kNeedMore;
      if (l == "END") {
        pos += lu;
        break;
      }
      if (!StartsWith(l, "VALUE ")) return ReplyStatus::kBad;
      uint64_t bytes = 0;
      if (!Digits(Word(l, 3), &bytes) || bytes > kMaxReplyValue) return ReplyStatus::kBad;
      const size_t need = lu + bytes + 2;
      if (n - pos < need) return ReplyStatus::kNeedMore;
      if (p[pos + lu + bytes] != '\r' || p[pos + lu + bytes + 1] != '\n') return ReplyStatus::kBad;
      if (first) {
        out->vlen = bytes;
        out->value_off = pos + lu;
        first = false;
      }
      pos += need;
    }
    out->len = pos;
    out->code = kCodeOk;
    out->type = kTypeGet;
    return ReplyStatus::kOk;
  }
  if (StartsWith(line, "VA ")) {
    uint64_t bytes = 0;
    if (!Digits(Word(line, 1), &bytes) || bytes > kMaxReplyValue) return ReplyStatus::kBad;
    if (n - used < bytes + 2) return ReplyStatus::kNeedMore;
    if (p[used + bytes] != '\r' || p[used + bytes + 1] != '\n') return ReplyStatus::kBad;
    out->len = used + bytes + 2;
    out->vlen = bytes;
    out->value_off = used;
    out->code = kCodeOk;
    out->type = kTypeMeta;
    return ReplyStatus::kOk;
  }
  out->len = used;
  const std::string_view w = Word(line, 0);
  struct Code {
    const char* word;
    int code;
    int type;
  };
  static constexpr Code kCodes[] = {
      {"HD", kCodeOk, kTypeMeta},           {"EN", kCodeEnd, kTypeMeta},
      {"NF", kCodeNotFound, kTypeMeta},     {"NS", kCodeNotStored, kTypeMeta},
      {"EX", kCodeExists, kTypeMeta},       {"MN", kCodeNop, kTypeMeta},
      {"ME", kCodeOk, kTypeMeta},           {"END", kCodeEnd, kTypeEnd},
      {"STORED", kCodeStored, kTypeGeneric}, {"NOT_STORED", kCodeNotStored, kTypeGeneric},
      {"EXISTS", kCodeExists, kTypeGeneric}, {"NOT_FOUND", kCodeNotFound, kTypeGeneric},
      {"DELETED", kCodeDeleted, kTypeGeneric}, {"TOUCHED", kCodeTouched, kTypeGeneric},
      {"OK", kCodeOk, kTypeGeneric},         {"VERSION", kCodeVersion, kTypeVersion},
      {"ERROR", kCodeError, kTypeErrmsg},    {"CLIENT_ERROR", kCodeClientError, kTypeErrmsg},
      {"SERVER_ERROR", kCodeServerError, kTypeErrmsg},
  };
  for (const Code& c : kCodes) {
    if (w == c.word) {
      out->code = c.code;
      out->type = c.type;
      return ReplyStatus::kOk;
    }
  }
  uint64_t num = 0;
  if (Digits(w, &num) && line.size() == w.size()) {  // incr / decr
    out->code = kCodeOk;
    out->type = kTypeNumeric;
    return ReplyStatus::kOk;
  }
  return ReplyStatus::kBad;
}

}  // namespace trove::memcache
