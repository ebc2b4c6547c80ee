// MD5 (RFC 1321), for the proxy's ketama-compatible ring hash: libketama,
// twemproxy and EVCache place servers and keys with MD5, so a pool that must
// keep their placement needs it bit for bit. Not for anything secret. Any
// thread; no state.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace trove {

using Md5Digest = std::array<uint8_t, 16>;

// The digest of `data` (allocates nothing).
Md5Digest Md5(std::string_view data);

// The digest's bytes 4*i .. 4*i+3 read as a little-endian number (i in
// 0..3): the four ring points libketama takes from one digest, and with i 0
// its key hash.
inline uint32_t Md5Word(const Md5Digest& d, int i) {
  const auto b = static_cast<size_t>(4 * i);
  return uint32_t{d[b]} | (uint32_t{d[b + 1]} << 8) | (uint32_t{d[b + 2]} << 16) |
         (uint32_t{d[b + 3]} << 24);
}

}  // namespace trove
