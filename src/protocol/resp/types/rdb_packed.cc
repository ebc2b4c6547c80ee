// The packed-blob readers of rdb_packed.h. Every offset is checked against
// the blob's size before the bytes at it are read; sizes read from the blob
// are compared by subtraction from what is left, so no sum can overflow.
#include "protocol/resp/types/rdb_packed.h"

#include <charconv>
#include <cstdint>

namespace trove::resp {
namespace {

constexpr uint8_t kEnd = 0xff;  // the end marker of all three lists

uint64_t LittleEndian(std::string_view b, size_t at, size_t bytes) {
  uint64_t v = 0;
  for (size_t i = bytes; i-- > 0;) v = (v << 8) | static_cast<uint8_t>(b[at + i]);
  return v;
}

// The n-bit two's-complement value in the low n bits of u.
int64_t SignExtend(uint64_t u, unsigned bits) {
  if (bits < 64 && (u >> (bits - 1)) != 0) u |= ~uint64_t{0} << bits;
  return static_cast<int64_t>(u);
}

// Hands an integer entry to `each` as its decimal text.
bool EmitInt(int64_t v, const PackedEntryFn& each) {
  char buf[24];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() && each(std::string_view(buf, static_cast<size_t>(end - buf)));
}
bool EmitInt(int64_t v, const PackedTypedEntryFn& each) {
  char buf[24];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() && each(std::string_view(buf, static_cast<size_t>(end - buf)), true);
}

// --- listpack ---
// [total bytes: 4 LE][count: 2 LE, 65535 = not kept][entries][0xff]. An entry
// is its encoding and data, then "backlen": the size of encoding + data in
// 7-bit groups, most significant first, every byte but the first with the
// top bit set (so it reads backwards from the entry's end).
constexpr size_t kLpHeader = 6;
constexpr uint64_t kLpCountUnknown = 65535;

size_t BacklenSize(uint64_t len) {
  if (len <= 127) return 1;
  if (len < 16383) return 2;
  if (len < 2097151) return 3;
  if (len < 268435455) return 4;
  return 5;
}

bool BacklenMatches(std::string_view b, size_t at, size_t size, uint64_t len) {
  for (size_t i = 0; i < size; ++i) {
    const unsigned shift = static_cast<unsigned>(7 * (size - 1 - i));
    uint8_t want = static_cast<uint8_t>((len >> shift) & 127);
    if (i > 0) want |= 128;
    if (static_cast<uint8_t>(b[at + i]) != want) return false;
  }
  return true;
}

}  // namespace

bool WalkListpack(std::string_view b, const PackedEntryFn& each) {
  return WalkListpackTyped(b, [&each](std::string_view e, bool) { return each(e); });
}

bool WalkListpackTyped(std::string_view b, const PackedTypedEntryFn& each) {
  if (b.size() < kLpHeader + 1 || LittleEndian(b, 0, 4) != b.size()) return false;
  if (static_cast<uint8_t>(b.back()) != kEnd) return false;
  const uint64_t declared = LittleEndian(b, 4, 2);
  const size_t end = b.size() - 1;  // the end marker's offset
  uint64_t n = 0;
  size_t pos = kLpHeader;
  while (pos < end) {
    const auto e = static_cast<uint8_t>(b[pos]);
    const size_t left = end - pos;
    size_t head = 1;     // encoding bytes
    uint64_t slen = 0;   // string bytes after them
    bool is_int = false;
    unsigned int_bytes = 0, int_bits = 0;
    int64_t iv = 0;
    if ((e & 0x80) == 0) {
      is_int = true;
      iv = e & 0x7f;
    } else if ((e & 0xc0) == 0x80) {
      slen = e & 0x3f;
    } else if ((e & 0xe0) == 0xc0) {
      if (left < 2) return false;
      head = 2;
      is_int = true;
      iv = SignExtend((static_cast<uint64_t>(e & 0x1f) << 8) | static_cast<uint8_t>(b[pos + 1]), 13);
    } else if ((e & 0xf0) == 0xe0) {
      if (left < 2) return false;
      head = 2;
      slen = (static_cast<uint64_t>(e & 0x0f) << 8) | static_cast<uint8_t>(b[pos + 1]);
    } else if (e == 0xf0) {
      if (left < 5) return false;
      head = 5;
      slen = LittleEndian(b, pos + 1, 4);
    } else if (e >= 0xf1 && e <= 0xf4) {
      static constexpr unsigned kBytes[] = {2, 3, 4, 8};
      int_bytes = kBytes[e - 0xf1];
      int_bits = 8 * int_bytes;
      head = 1 + int_bytes;
      if (left < head) return false;
      is_int = true;
      iv = SignExtend(LittleEndian(b, pos + 1, int_bytes), int_bits);
    } else {
      return false;  // 0xf5..0xfe are no encoding; 0xff ends the list only at `end`
    }
    if (slen > left - head) return false;
    const uint64_t entry = head + slen;
    const size_t back = BacklenSize(entry);
    if (back > left - entry || !BacklenMatches(b, pos + entry, back, entry)) return false;
    const bool ok = is_int ? EmitInt(iv, each)
                           : each(b.substr(pos + head, static_cast<size_t>(slen)), false);
    if (!ok) return false;
    pos += entry + back;
    ++n;
  }
  return declared == kLpCountUnknown || declared == n;
}

// --- ziplist ---
// [total bytes: 4 LE][offset of the last entry: 4 LE][count: 2 LE, 65535 =
// not kept][entries][0xff]. An entry is the previous entry's size (1 byte
// below 254, else 254 and 4 bytes LE), an encoding (strings: 00 + 6-bit
// length, 01 + 14-bit big-endian length, 10 + 4-byte big-endian length;
// integers: 0xc0 int16, 0xd0 int32, 0xe0 int64, 0xf0 int24, 0xfe int8, all
// LE, and 0xf1..0xfd the values 0..12 in the encoding itself), then data.
bool WalkZiplist(std::string_view b, const PackedEntryFn& each) {
  constexpr size_t kHeader = 10;
  if (b.size() < kHeader + 1 || LittleEndian(b, 0, 4) != b.size()) return false;
  if (static_cast<uint8_t>(b.back()) != kEnd) return false;
  const uint64_t tail = LittleEndian(b, 4, 4);
  const uint64_t declared = LittleEndian(b, 8, 2);
  const size_t end = b.size() - 1;
  uint64_t n = 0, prev = 0;
  size_t pos = kHeader, last = kHeader;
  while (pos < end) {
    size_t left = end - pos;
    size_t prev_size = 1;
    uint64_t prev_len = static_cast<uint8_t>(b[pos]);
    if (prev_len == 254) {
      if (left < 5) return false;
      prev_size = 5;
      prev_len = LittleEndian(b, pos + 1, 4);
    } else if (prev_len == kEnd) {
      return false;  // an end marker before the end
    }
    if (prev_len != prev || left < prev_size + 1) return false;
    const size_t at = pos + prev_size;  // the encoding
    left -= prev_size;
    const auto e = static_cast<uint8_t>(b[at]);
    size_t head = 1;
    uint64_t data = 0;
    bool is_int = true;
    int64_t iv = 0;
    switch (e >> 6) {
      case 0:
        is_int = false;
        data = e & 0x3f;
        break;
      case 1:
        if (left < 2) return false;
        is_int = false;
        head = 2;
        data = (static_cast<uint64_t>(e & 0x3f) << 8) | static_cast<uint8_t>(b[at + 1]);
        break;
      case 2:
        if (left < 5) return false;
        is_int = false;
        head = 5;
        for (size_t i = 1; i <= 4; ++i) data = (data << 8) | static_cast<uint8_t>(b[at + i]);
        break;
      default:
        if (e == 0xc0) {
          data = 2;
        } else if (e == 0xd0) {
          data = 4;
        } else if (e == 0xe0) {
          data = 8;
        } else if (e == 0xf0) {
          data = 3;
        } else if (e == 0xfe) {
          data = 1;
        } else if (e >= 0xf1 && e <= 0xfd) {
          iv = (e & 0x0f) - 1;
        } else {
          return false;
        }
        break;
    }
    if (data > left - head) return false;
    if (is_int && data != 0) {
      iv = SignExtend(LittleEndian(b, at + head, static_cast<size_t>(data)),
                      static_cast<unsigned>(8 * data));
    }
    const bool ok = is_int ? EmitInt(iv, each)
                           : each(b.substr(at + head, static_cast<size_t>(data)));
    if (!ok) return false;
    last = pos;
    prev = prev_size + head + data;
    pos = at + head + static_cast<size_t>(data);
    ++n;
  }
  if (tail != last) return false;
  return declared == 65535 || declared == n;
}

// --- intset ---
// [width: 4 LE, 2/4/8][count: 4 LE][count integers of that width, LE].
bool WalkIntset(std::string_view b, const PackedEntryFn& each) {
  if (b.size() < 8) return false;
  const uint64_t width = LittleEndian(b, 0, 4);
  const uint64_t count = LittleEndian(b, 4, 4);
  if (width != 2 && width != 4 && width != 8) return false;
  if (count == 0 || count != (b.size() - 8) / width || (b.size() - 8) % width != 0) return false;
  int64_t prev = 0;
  for (uint64_t i = 0; i < count; ++i) {
    const size_t at = 8 + static_cast<size_t>(i * width);
    const int64_t v =
        SignExtend(LittleEndian(b, at, static_cast<size_t>(width)), static_cast<unsigned>(8 * width));
    if (i > 0 && v <= prev) return false;
    if (!EmitInt(v, each)) return false;
    prev = v;
  }
  return true;
}

// --- zipmap ---
// [count: 1 byte, exact below 254][key length][key][value length][free: 1
// byte][value][free unused bytes] ... [0xff]. A length is 1 byte below 254,
// else 254 and 4 bytes LE.
bool WalkZipmap(std::string_view b, const PackedPairFn& each) {
  if (b.size() < 2 || static_cast<uint8_t>(b.back()) != kEnd) return false;
  const auto declared = static_cast<uint8_t>(b[0]);
  const size_t end = b.size() - 1;
  size_t pos = 1;
  // Reads a length at pos (moving past it); false when cut short or 0xff.
  auto read_len = [&](uint64_t* len) {
    if (pos >= end) return false;
    const auto first = static_cast<uint8_t>(b[pos]);
    if (first == kEnd) return false;
    if (first < 254) {
      *len = first;
      pos += 1;
      return true;
    }
    if (end - pos < 5) return false;
    *len = LittleEndian(b, pos + 1, 4);
    pos += 5;
    return true;
  };
  uint64_t n = 0;
  while (pos < end) {
    uint64_t klen, vlen;
    if (!read_len(&klen) || klen > end - pos) return false;
    const std::string_view key = b.substr(pos, static_cast<size_t>(klen));
    pos += static_cast<size_t>(klen);
    if (!read_len(&vlen) || pos >= end) return false;
    const auto free = static_cast<uint8_t>(b[pos++]);
    if (vlen > end - pos || free > end - pos - vlen) return false;
    const std::string_view value = b.substr(pos, static_cast<size_t>(vlen));
    pos += static_cast<size_t>(vlen) + free;
    if (!each(key, value)) return false;
    ++n;
  }
  return n > 0 && (declared >= 254 || declared == n);
}

}  // namespace trove::resp
