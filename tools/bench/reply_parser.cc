// Reply parsers (see reply_parser.h): memcached text/meta and RESP2. Run on
// the load thread that owns the connection.
#include "reply_parser.h"

#include <charconv>
#include <cstring>

namespace trove::bench {

namespace {

// Finds the CRLF ending the line at p. Returns kOk with *line (no CRLF),
// kNeedMore, or kError for an over-long line or a bare LF.
ParseStatus FindLine(const char* p, size_t n, std::string_view* line) {
  size_t limit = n < kMaxReplyLine + 2 ? n : kMaxReplyLine + 2;
  const void* lf = std::memchr(p, '\n', limit);
  if (lf == nullptr) return n >= kMaxReplyLine + 2 ? ParseStatus::kError : ParseStatus::kNeedMore;
  size_t pos = static_cast<size_t>(static_cast<const char*>(lf) - p);
  if (pos == 0 || p[pos - 1] != '\r') return ParseStatus::kError;
  *line = std::string_view(p, pos - 1);
  return ParseStatus::kOk;
}

bool ParseI64(std::string_view s, int64_t* v) {
  if (s.empty()) return false;
  auto r = std::from_chars(s.data(), s.data() + s.size(), *v);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

// Reads `len` bytes of data plus CRLF that start at p + off.
ParseStatus TakeData(const char* p, size_t n, size_t off, uint64_t len, std::string_view* data,
                     size_t* consumed) {
  if (len > kMaxReplyValue) return ParseStatus::kError;
  if (n < off + len + 2) return ParseStatus::kNeedMore;
  if (p[off + len] != '\r' || p[off + len + 1] != '\n') return ParseStatus::kError;
  *data = std::string_view(p + off, len);
  *consumed = off + len + 2;
  return ParseStatus::kOk;
}

}  // namespace

ParseStatus ParseMcReply(const char* p, size_t n, McReply* out, size_t* consumed) {
  memcache::ReplyLimits limits;
  limits.max_line = kMaxReplyLine;
  limits.max_value = kMaxReplyValue;
  switch (memcache::ParseReplyElement(p, n, out, consumed, limits)) {
    case memcache::ReplyStatus::kOk: return ParseStatus::kOk;
    case memcache::ReplyStatus::kNeedMore: return ParseStatus::kNeedMore;
    case memcache::ReplyStatus::kBad: break;
  }
  return ParseStatus::kError;
}

ParseStatus ParseRespReply(const char* p, size_t n, RespReply* out, size_t* consumed) {
  if (n == 0) return ParseStatus::kNeedMore;
  std::string_view line;
  ParseStatus st = FindLine(p, n, &line);
  if (st != ParseStatus::kOk) return st;
  size_t line_end = line.size() + 2;
  std::string_view body = line.substr(1);
  *out = RespReply();
  switch (p[0]) {
    case '+':
    case '-':
      out->kind = p[0] == '+' ? RespKind::kSimple : RespKind::kError;
      out->str = body;
      *consumed = line_end;
      return ParseStatus::kOk;
    case ':':
      if (!ParseI64(body, &out->integer)) return ParseStatus::kError;
      out->kind = RespKind::kInteger;
      *consumed = line_end;
      return ParseStatus::kOk;
    case '$': {
      int64_t len;
      if (!ParseI64(body, &len) || len < -1) return ParseStatus::kError;
      if (len == -1) {
        out->kind = RespKind::kNullBulk;
        *consumed = line_end;
        return ParseStatus::kOk;
      }
      out->kind = RespKind::kBulk;
      return TakeData(p, n, line_end, static_cast<uint64_t>(len), &out->str, consumed);
    }
    case '*': {
      int64_t count;
      if (!ParseI64(body, &count) || count < -1) return ParseStatus::kError;
      out->kind = count == -1 ? RespKind::kNullArray : RespKind::kArray;
      out->integer = count;
      *consumed = line_end;
      return ParseStatus::kOk;
    }
    default:
      return ParseStatus::kError;
  }
}

}  // namespace trove::bench
