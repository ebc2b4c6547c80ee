// Building meta reply lines in place (mg, ms, md, ma, me): the pieces the
// meta command files share. Pure functions over a buffer the caller sized
// (kMetaLineMax); any thread.
#pragma once

#include <cstddef>
#include <cstring>
#include <string_view>

#include "protocol/memcache/meta_parser.h"

namespace trove::memcache {

inline constexpr const char* kFlagsTooLong = "options flags are too long";
// Room for the longest meta reply line: code, size, 19 flags with numbers, a
// base64 key (336 bytes) and an opaque token.
inline constexpr size_t kMetaLineMax = 2048;

inline char* PutChar(char* p, char c) {
  *p++ = ' ';
  *p++ = c;
  return p;
}
inline char* PutBytes(char* p, std::string_view s) {
  std::memcpy(p, s.data(), s.size());
  return p + s.size();
}
inline char* PutCrlf(char* p) {
  *p++ = '\r';
  *p++ = '\n';
  return p;
}
// " O<opaque>": the token is echoed as sent (it cannot hold CR/LF or spaces).
inline char* PutOpaque(char* p, std::string_view tok) {
  *p++ = ' ';
  return PutBytes(p, tok);
}

inline bool OpaqueTooLong(const MetaFlags& f) { return f.opaque.size() > kMetaMaxOpaque; }

}  // namespace trove::memcache
