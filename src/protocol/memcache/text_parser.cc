// Framing and tokenizing of memcached command lines (see text_parser.h).
#include "protocol/memcache/text_parser.h"

#include <cstring>

#include "common/str_append.h"

namespace trove::memcache {
namespace {

bool StartsWith(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.compare(0, p.size(), p) == 0;
}

// Strips one leading '+' (accepted by strtoul/strtol).
std::string_view StripPlus(std::string_view s) {
  if (!s.empty() && s[0] == '+') s.remove_prefix(1);
  return s;
}

}  // namespace

LineResult FindLine(const char* data, size_t len, size_t multiget_cap) {
  LineResult r;
  const void* nl = std::memchr(data, '\n', len);
  if (nl == nullptr) {
    if (len <= kLineLimit) return r;  // kNeedMore
    // Only a multiget may be this long without a newline.
    size_t spaces = 0;
    while (spaces < len && data[spaces] == ' ') ++spaces;
    std::string_view head(data + spaces, len - spaces);
    bool multiget =
        spaces <= kMaxLeadingSpaces && (StartsWith(head, "get ") || StartsWith(head, "gets "));
    r.status = (multiget && len <= multiget_cap) ? LineStatus::kNeedMore : LineStatus::kClose;
    return r;
  }
  size_t end = static_cast<size_t>(static_cast<const char*>(nl) - data);
  r.consumed = end + 1;
  // memcached drops the '\r' only when the line has more than one byte before
  // the '\n'; a lone "\r\n" still leaves an (unknown) one-byte command.
  if (end > 1 && data[end - 1] == '\r') --end;
  r.line = std::string_view(data, end);
  r.status = LineStatus::kOk;
  return r;
}

void Tokenize(std::string_view line, ParsedLine* out) {
  out->count = 0;
  out->rest = {};
  size_t i = 0;
  const size_t n = line.size();
  while (i < n) {
    while (i < n && line[i] == ' ') ++i;
    if (i == n) break;
    if (out->count == kMaxTokens) {
      out->rest = line.substr(i);
      return;
    }
    size_t start = i;
    while (i < n && line[i] != ' ') ++i;
    out->tokens[out->count++] = line.substr(start, i - start);
  }
}

bool WordIterator::Next(std::string_view* word) {
  const size_t n = s_.size();
  while (pos_ < n && s_[pos_] == ' ') ++pos_;
  if (pos_ == n) return false;
  size_t start = pos_;
  while (pos_ < n && s_[pos_] != ' ') ++pos_;
  *word = s_.substr(start, pos_ - start);
  return true;
}

bool ParseFlags(std::string_view s, uint32_t* out) {
  uint64_t v = 0;
  if (!ParseU64(StripPlus(s), &v)) return false;
  *out = static_cast<uint32_t>(v);  // memcached truncates to 32 bits
  return true;
}

bool ParseInt(std::string_view s, int64_t* out) {
  if (!s.empty() && s[0] == '+') s.remove_prefix(1);
  return ParseI64(s, out);
}

bool ParseUint(std::string_view s, uint64_t* out) { return ParseU64(StripPlus(s), out); }

bool ParseValueLength(std::string_view s, size_t* out) {
  constexpr size_t kMaxChars = 11;  // mcmc's limit for a 32-bit token
  if (s.empty() || s.size() > kMaxChars) return false;
  size_t i = 0;
  bool neg = s[0] == '-';
  if (neg) i = 1;
  int64_t v = 0;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    v = v * 10 + (s[i] - '0');  // 10 digits at most: no int64 overflow
    if (v > (neg ? 2147483648LL : 2147483647LL)) return false;
  }
  // "-" alone and "-0" are 0, as mcmc reads them; any other negative fails.
  if (neg && v != 0) return false;
  if (v > 2147483647LL - 2) return false;
  *out = static_cast<size_t>(v);
  return true;
}

bool ParseCasUnique(std::string_view s, uint64_t* out) {
  constexpr size_t kMaxChars = 22;
  if (s.empty() || s.size() > kMaxChars) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return ParseU64(s, out);
}

std::string_view NthWord(std::string_view s, size_t idx) {
  WordIterator it(s);
  std::string_view w;
  for (size_t i = 0; it.Next(&w); ++i) {
    if (i == idx) return w;
  }
  return {};
}

}  // namespace trove::memcache
