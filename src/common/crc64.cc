// CRC-64/Jones, a byte at a time from a 256-entry table (crc64.h).
#include "common/crc64.h"

#include <array>

namespace trove {
namespace {

// The polynomial with its bits reversed (the reflected form).
constexpr uint64_t kReflectedPoly = 0x95ac9329ac4bc9b5ULL;

constexpr std::array<uint64_t, 256> MakeTable() {
  std::array<uint64_t, 256> t{};
  for (uint64_t i = 0; i < 256; ++i) {
    uint64_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) != 0 ? (c >> 1) ^ kReflectedPoly : c >> 1;
    t[i] = c;
  }
  return t;
}

constexpr std::array<uint64_t, 256> kTable = MakeTable();

}  // namespace

uint64_t Crc64(uint64_t crc, std::string_view data) {
  for (unsigned char b : data) crc = kTable[(crc ^ b) & 0xff] ^ (crc >> 8);
  return crc;
}

}  // namespace trove
