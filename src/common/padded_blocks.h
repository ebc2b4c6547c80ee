// ForEachPaddedBlock: the 64-byte blocks of a message with Merkle-Damgard
// padding, shared by md5.cc and sha256.cc. Any thread (pure function).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace trove {

enum class LengthOrder { kLittleEndian, kBigEndian };

// Calls block(p) for each 64-byte block of `data`, then for the padding: a 1
// bit, zeros up to 56 mod 64, and the length in bits as 8 bytes in `order`
// (MD5 little-endian, SHA-256 big-endian). p is valid for that call only.
template <typename Block>
void ForEachPaddedBlock(std::string_view data, LengthOrder order, Block block) {
  const auto* p = reinterpret_cast<const uint8_t*>(data.data());
  size_t n = data.size();
  while (n >= 64) {
    block(p);
    p += 64;
    n -= 64;
  }
  uint8_t tail[128] = {};
  if (n > 0) std::memcpy(tail, p, n);
  tail[n] = 0x80;
  const size_t total = n < 56 ? 64 : 128;
  const uint64_t bits = static_cast<uint64_t>(data.size()) * 8;
  for (size_t i = 0; i < 8; ++i) {
    const size_t at = order == LengthOrder::kBigEndian ? total - 1 - i : total - 8 + i;
    tail[at] = static_cast<uint8_t>(bits >> (8 * i));
  }
  block(tail);
  if (total == 128) block(tail + 64);
}

}  // namespace trove
