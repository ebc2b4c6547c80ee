// LZF's stream (lzf.h): a control byte below 32 starts a literal run of
// ctrl+1 bytes; any other gives a back reference of (ctrl >> 5) + 2 bytes
// (an extra length byte follows when ctrl >> 5 is 7) at distance
// ((ctrl & 0x1f) << 8) + next byte + 1 behind the output's end.
#include "common/lzf.h"

namespace trove {

bool LzfDecompress(std::string_view in, size_t expected, std::string* out) {
  out->clear();
  // No stream expands more than kMaxRatio times (a 3-byte back reference
  // gives at most 264 bytes): a longer claim is malformed, and is refused
  // before anything is allocated for it (FUNCTION RESTORE's payloads are a
  // client's bytes).
  constexpr size_t kMaxRatio = 88;
  if (expected > in.size() * kMaxRatio) return false;
  out->reserve(expected);
  size_t ip = 0;
  while (ip < in.size()) {
    const unsigned ctrl = static_cast<unsigned char>(in[ip++]);
    if (ctrl < 32) {
      const size_t len = ctrl + 1;
      if (ip + len > in.size() || out->size() + len > expected) return false;
      out->append(in.substr(ip, len));
      ip += len;
      continue;
    }
    size_t len = ctrl >> 5;
    if (len == 7) {
      if (ip >= in.size()) return false;
      len += static_cast<unsigned char>(in[ip++]);
    }
    if (ip >= in.size()) return false;
    const size_t back = ((ctrl & 0x1fu) << 8) + static_cast<unsigned char>(in[ip++]) + 1;
    len += 2;
    if (back > out->size() || out->size() + len > expected) return false;
    size_t ref = out->size() - back;
    for (size_t i = 0; i < len; ++i) out->push_back((*out)[ref++]);  // may overlap its own output
  }
  return out->size() == expected;
}

}  // namespace trove
