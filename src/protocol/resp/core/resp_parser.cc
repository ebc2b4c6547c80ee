// RespParser implementation; runs on the owning connection's worker.
#include "protocol/resp/core/resp_parser.h"

#include "common/vector_pool.h"

#include <climits>
#include <cstring>

namespace trove::resp {

bool ParseStrictInt64(std::string_view s, int64_t* out) {
  if (s.empty() || s.size() > 20) return false;
  size_t i = 0;
  bool neg = false;
  if (s.size() == 1 && s[0] == '0') {
    *out = 0;
    return true;
  }
  if (s[0] == '-') {
    neg = true;
    i = 1;
    if (s.size() == 1) return false;
  }
  if (s[i] < '1' || s[i] > '9') return false;
  uint64_t v = 0;
  for (; i < s.size(); ++i) {
    char c = s[i];
    if (c < '0' || c > '9') return false;
    uint64_t d = static_cast<uint64_t>(c - '0');
    if (v > (UINT64_MAX - d) / 10) return false;
    v = v * 10 + d;
  }
  if (neg) {
    if (v > static_cast<uint64_t>(INT64_MAX) + 1) return false;
    *out = static_cast<int64_t>(0 - v);
  } else {
    if (v > static_cast<uint64_t>(INT64_MAX)) return false;
    *out = static_cast<int64_t>(v);
  }
  return true;
}

namespace {
bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}
int HexVal(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}
}  // namespace

bool SplitInlineArgs(std::string_view line, std::vector<std::string>* out) {
  out->clear();
  size_t i = 0;
  const size_t n = line.size();
  while (true) {
    while (i < n && IsSpace(line[i])) ++i;
    if (i >= n) return true;
    std::string cur;
    bool in_dq = false, in_sq = false, done = false;
    while (!done) {
      if (in_dq) {
        if (i >= n) return false;
        char c = line[i];
        if (c == '\\' && i + 3 < n && line[i + 1] == 'x' && HexVal(line[i + 2]) >= 0 &&
            HexVal(line[i + 3]) >= 0) {
          cur.push_back(static_cast<char>(HexVal(line[i + 2]) * 16 + HexVal(line[i + 3])));
          i += 3;
        } else if (c == '\\' && i + 1 < n) {
          char e = line[++i];
          switch (e) {
            case 'n':
              e = '\n';
              break;
            case 'r':
              e = '\r';
              break;
            case 't':
              e = '\t';
              break;
            case 'b':
              e = '\b';
              break;
            case 'a':
              e = '\a';
              break;
            default:
              break;
          }
          cur.push_back(e);
        } else if (c == '"') {
          // A closing quote must be followed by a space or the end.
          if (i + 1 < n && !IsSpace(line[i + 1])) return false;
          done = true;
        } else {
          cur.push_back(c);
        }
      } else if (in_sq) {
        if (i >= n) return false;
        char c = line[i];
        if (c == '\\' && i + 1 < n && line[i + 1] == '\'') {
          cur.push_back('\'');
          ++i;
        } else if (c == '\'') {
          if (i + 1 < n && !IsSpace(line[i + 1])) return false;
          done = true;
        } else {
          cur.push_back(c);
        }
      } else {
        if (i >= n) {
          done = true;
          break;
        }
        char c = line[i];
        if (c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == '\0') {
          done = true;
        } else if (c == '"') {
          in_dq = true;
        } else if (c == '\'') {
          in_sq = true;
        } else {
          cur.push_back(c);
        }
      }
      if (i < n) ++i;
    }
    out->push_back(std::move(cur));
  }
}

void RespParser::ResetRequest() {
  in_multibulk_ = false;
  multibulk_left_ = 0;
  bulk_len_ = -1;
  pos_ = 0;
  spans_.clear();
}

ParseStatus RespParser::Fail(std::string msg) {
  ErrorSlot() = std::move(msg);
  ResetRequest();
  return ParseStatus::kError;
}

size_t RespParser::bytes_wanted() const {
  if (!in_multibulk_ || bulk_len_ < 0) return 0;
  return pos_ + static_cast<size_t>(bulk_len_) + 2;
}

std::string& RespParser::ErrorSlot() {
  static thread_local std::string error;
  return error;
}

using SpanPool = VectorPool<std::pair<size_t, size_t>>;
using ArgPool = VectorPool<std::string_view>;

void RespParser::ReleaseIdle() {
  if (in_multibulk_) return;
  SpanPool::Give(&spans_);
  ArgPool::Give(&args_);
  if (inline_storage_.capacity() != 0) std::vector<std::string>().swap(inline_storage_);
}

ParseStatus RespParser::Parse(const char* data, size_t len) {
  args_.clear();
  consumed_ = 0;
  if (len == 0) return ParseStatus::kNeedMore;
  if (in_multibulk_ || data[0] == '*') return ParseMultibulk(data, len);
  return ParseInline(data, len);
}

ParseStatus RespParser::ParseInline(const char* data, size_t len) {
  const void* nl = std::memchr(data, '\n', len);
  if (nl == nullptr) {
    if (len > limits::kRespInlineMax) return Fail("Protocol error: too big inline request");
    return ParseStatus::kNeedMore;
  }
  size_t nl_pos = static_cast<size_t>(static_cast<const char*>(nl) - data);
  size_t line_len = nl_pos;
  if (line_len > 0 && data[line_len - 1] == '\r') --line_len;
  if (!SplitInlineArgs(std::string_view(data, line_len), &inline_storage_)) {
    return Fail("Protocol error: unbalanced quotes in request");
  }
  ArgPool::Take(&args_);
  for (const std::string& s : inline_storage_) args_.emplace_back(s);
  consumed_ = nl_pos + 1;
  return ParseStatus::kOk;
}

ParseStatus RespParser::ParseMultibulk(const char* data, size_t len) {
  if (!in_multibulk_) {
    const void* cr = std::memchr(data, '\r', len);
    if (cr == nullptr) {
      if (len > limits::kRespInlineMax) return Fail("Protocol error: too big mbulk count string");
      return ParseStatus::kNeedMore;
    }
    size_t cr_pos = static_cast<size_t>(static_cast<const char*>(cr) - data);
    if (cr_pos + 1 >= len) return ParseStatus::kNeedMore;  // the '\n' is not here yet
    int64_t count = 0;
    if (!ParseStrictInt64(std::string_view(data + 1, cr_pos - 1), &count) || count > INT_MAX) {
      return Fail("Protocol error: invalid multibulk length");
    }
    if (unauth_ && count > kUnauthMaxArgs) {
      return Fail("Protocol error: unauthenticated multibulk length");
    }
    pos_ = cr_pos + 2;
    if (count <= 0) {
      consumed_ = pos_;
      ResetRequest();
      return ParseStatus::kOk;
    }
    in_multibulk_ = true;
    multibulk_left_ = count;
    bulk_len_ = -1;
    spans_.clear();
    SpanPool::Take(&spans_);
    // Never trust the count for allocation: a client may announce 2^31.
    spans_.reserve(static_cast<size_t>(count < 1024 ? count : 1024));
  }
  while (multibulk_left_ > 0) {
    if (bulk_len_ < 0) {
      if (pos_ >= len) return ParseStatus::kNeedMore;
      const void* cr = std::memchr(data + pos_, '\r', len - pos_);
      if (cr == nullptr) {
        if (len - pos_ > limits::kRespInlineMax) {
          return Fail("Protocol error: too big bulk count string");
        }
        return ParseStatus::kNeedMore;
      }
      size_t cr_pos = static_cast<size_t>(static_cast<const char*>(cr) - data);
      if (cr_pos + 1 >= len) return ParseStatus::kNeedMore;
      if (data[pos_] != '$') {
        std::string msg = "Protocol error: expected '$', got '";
        msg.push_back(data[pos_]);
        msg += "'";
        return Fail(std::move(msg));
      }
      int64_t blen = 0;
      if (!ParseStrictInt64(std::string_view(data + pos_ + 1, cr_pos - pos_ - 1), &blen) ||
          blen < 0 || static_cast<uint64_t>(blen) > max_bulk_) {
        return Fail("Protocol error: invalid bulk length");
      }
      if (unauth_ && blen > kUnauthMaxBulk) return Fail("Protocol error: unauthenticated bulk length");
      pos_ = cr_pos + 2;
      bulk_len_ = blen;
    }
    size_t need = static_cast<size_t>(bulk_len_) + 2;
    if (len - pos_ < need) return ParseStatus::kNeedMore;
    // Like Redis, the two bytes after the body are skipped, not checked.
    spans_.emplace_back(pos_, static_cast<size_t>(bulk_len_));
    pos_ += need;
    bulk_len_ = -1;
    --multibulk_left_;
  }
  ArgPool::Take(&args_);
  args_.reserve(spans_.size());
  for (const auto& [off, n] : spans_) args_.emplace_back(data + off, n);
  consumed_ = pos_;
  ResetRequest();
  return ParseStatus::kOk;
}

}  // namespace trove::resp
