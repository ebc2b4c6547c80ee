// SHA-1 as RFC 3174 specifies it: 512-bit blocks, 80 rounds.
#include "common/sha1.h"

#include "common/padded_blocks.h"

namespace trove {
namespace {

inline uint32_t Rotl(uint32_t x, int n) { return (x << n) | (x >> (32 - n)); }

void Block(uint32_t h[5], const uint8_t* p) {
  uint32_t w[80];
  for (int i = 0; i < 16; ++i) {
    w[i] = (uint32_t{p[4 * i]} << 24) | (uint32_t{p[4 * i + 1]} << 16) |
           (uint32_t{p[4 * i + 2]} << 8) | uint32_t{p[4 * i + 3]};
  }
  for (int i = 16; i < 80; ++i) w[i] = Rotl(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
  uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];
  for (int i = 0; i < 80; ++i) {
    uint32_t f, k;
    if (i < 20) {
      f = (b & c) | (~b & d);
      k = 0x5a827999;
    } else if (i < 40) {
      f = b ^ c ^ d;
      k = 0x6ed9eba1;
    } else if (i < 60) {
      f = (b & c) | (b & d) | (c & d);
      k = 0x8f1bbcdc;
    } else {
      f = b ^ c ^ d;
      k = 0xca62c1d6;
    }
    const uint32_t t = Rotl(a, 5) + f + e + k + w[i];
    e = d;
    d = c;
    c = Rotl(b, 30);
    b = a;
    a = t;
  }
  h[0] += a;
  h[1] += b;
  h[2] += c;
  h[3] += d;
  h[4] += e;
}

}  // namespace

Sha1Digest Sha1(std::string_view data) {
  uint32_t h[5] = {0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476, 0xc3d2e1f0};
  ForEachPaddedBlock(data, LengthOrder::kBigEndian, [&h](const uint8_t* p) { Block(h, p); });
  Sha1Digest out;
  for (int i = 0; i < 5; ++i) {
    out[static_cast<size_t>(4 * i)] = static_cast<uint8_t>(h[i] >> 24);
    out[static_cast<size_t>(4 * i + 1)] = static_cast<uint8_t>(h[i] >> 16);
    out[static_cast<size_t>(4 * i + 2)] = static_cast<uint8_t>(h[i] >> 8);
    out[static_cast<size_t>(4 * i + 3)] = static_cast<uint8_t>(h[i]);
  }
  return out;
}

std::string Sha1Hex(std::string_view data) {
  static constexpr char kHex[] = "0123456789abcdef";
  const Sha1Digest d = Sha1(data);
  std::string s;
  s.reserve(40);
  for (uint8_t b : d) {
    s.push_back(kHex[b >> 4]);
    s.push_back(kHex[b & 15]);
  }
  return s;
}

}  // namespace trove
