// ScanTextRequest: the look-ahead scan over pipelined memcached requests.
#include "protocol/memcache/text_prefetch.h"

#include <cstring>
#include <string_view>

#include "engine/engine.h"

namespace trove::memcache {
namespace {

constexpr size_t kMaxScanLine = 2048;  // longer lines are not worth a look-ahead

// The space-separated word of line at index `which` (0-based).
std::string_view Word(std::string_view line, int which) {
  size_t i = 0;
  for (int w = 0;; ++w) {
    while (i < line.size() && line[i] == ' ') ++i;
    size_t b = i;
    while (i < line.size() && line[i] != ' ') ++i;
    if (b == i) return {};
    if (w == which) return line.substr(b, i - b);
  }
}

bool ParseSize(std::string_view s, size_t* out) {
  if (s.empty() || s.size() > 10) return false;
  size_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<size_t>(c - '0');
  }
  *out = v;
  return true;
}

// True if a meta request's flags (words from index 2 on) include b (base64 key).
bool HasBase64Flag(std::string_view line, int first_flag) {
  for (int w = first_flag;; ++w) {
    std::string_view f = Word(line, w);
    if (f.empty()) return false;
    if (f == "b") return true;
  }
}

}  // namespace

bool ScanTextRequest(const char* data, size_t len, size_t start, size_t* end, uint64_t* hv) {
  if (start >= len) return false;
  const char* p = data + start;
  size_t avail = len - start;
  const void* nl = std::memchr(p, '\n', avail < kMaxScanLine ? avail : kMaxScanLine);
  if (nl == nullptr) return false;
  size_t line_end = static_cast<size_t>(static_cast<const char*>(nl) - p);
  size_t next = start + line_end + 1;
  std::string_view line(p, line_end);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  std::string_view cmd = Word(line, 0);
  std::string_view key = Word(line, 1);
  if (key.empty()) return false;
  size_t block = 0;  // data block bytes after the line (plus its CRLF)
  bool has_block = false;
  if (cmd == "get" || cmd == "gets" || cmd == "delete" || cmd == "incr" || cmd == "decr" ||
      cmd == "touch") {
  } else if (cmd == "set" || cmd == "add" || cmd == "replace" || cmd == "append" ||
             cmd == "prepend" || cmd == "cas") {
    if (!ParseSize(Word(line, 4), &block)) return false;
    has_block = true;
  } else if (cmd == "mg" || cmd == "md" || cmd == "ma") {
    if (HasBase64Flag(line, 2)) return false;
  } else if (cmd == "ms") {
    if (!ParseSize(Word(line, 2), &block) || HasBase64Flag(line, 3)) return false;
    has_block = true;
  } else {
    return false;
  }
  if (has_block) {
    if (block > len || next + block + 2 > len) return false;
    next += block + 2;
  }
  *end = next;
  *hv = engine::Engine::KeyHash(key);
  return true;
}

}  // namespace trove::memcache
