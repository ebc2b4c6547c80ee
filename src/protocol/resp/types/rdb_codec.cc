// RDB lengths, strings and the payload footer (rdb_codec.h). A length's top
// two bits say its form: 00 six bits, 01 fourteen bits (big-endian over two
// bytes), 10 then 0x80 a 32-bit or 0x81 a 64-bit big-endian length, 11 a
// special string encoding in the low six bits (0, 1, 2: an 8/16/32-bit
// little-endian integer written as its decimal text; 3: LZF, followed by
// the compressed and the original length).
#include "protocol/resp/types/rdb_codec.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>

#include "common/crc64.h"
#include "common/lzf.h"
#include "protocol/resp/core/resp_parser.h"

namespace trove::resp {
namespace {

constexpr uint8_t k6Bit = 0;
constexpr uint8_t k14Bit = 1;
constexpr uint8_t k32Bit = 0x80;
constexpr uint8_t k64Bit = 0x81;
constexpr uint8_t kEncoded = 3;
constexpr uint64_t kEncInt8 = 0, kEncInt16 = 1, kEncInt32 = 2, kEncLzf = 3;

void AppendBigEndian(std::string* out, uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

}  // namespace

void AppendRdbLength(std::string* out, uint64_t len) {
  if (len < (1u << 6)) {
    out->push_back(static_cast<char>((k6Bit << 6) | len));
  } else if (len < (1u << 14)) {
    out->push_back(static_cast<char>((k14Bit << 6) | (len >> 8)));
    out->push_back(static_cast<char>(len & 0xff));
  } else if (len <= UINT32_MAX) {
    out->push_back(static_cast<char>(k32Bit));
    AppendBigEndian(out, len, 4);
  } else {
    out->push_back(static_cast<char>(k64Bit));
    AppendBigEndian(out, len, 8);
  }
}

void AppendRdbString(std::string* out, std::string_view s) {
  AppendRdbLength(out, s.size());
  out->append(s);
}

void AppendRdbStringValue(std::string* out, std::string_view s) {
  int64_t v;
  // "-2147483648" is the longest canonical 32-bit form (11 bytes).
  if (s.size() <= 11 && ParseStrictInt64(s, &v) && v >= INT32_MIN && v <= INT32_MAX) {
    char buf[12];
    const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
    if (ec == std::errc() && std::string_view(buf, static_cast<size_t>(end - buf)) == s) {
      const auto u = static_cast<uint32_t>(static_cast<int32_t>(v));
      int bytes = 4;
      uint64_t enc = kEncInt32;
      if (v >= INT8_MIN && v <= INT8_MAX) {
        bytes = 1;
        enc = kEncInt8;
      } else if (v >= INT16_MIN && v <= INT16_MAX) {
        bytes = 2;
        enc = kEncInt16;
      }
      out->push_back(static_cast<char>((kEncoded << 6) | enc));
      for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>((u >> (8 * i)) & 0xff));
      return;
    }
  }
  AppendRdbString(out, s);
}

void AppendRdbMillisecondTime(std::string* out, uint64_t ms) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>((ms >> (8 * i)) & 0xff));
}

void AppendRdbFooter(std::string* out, uint16_t version) {
  out->push_back(static_cast<char>(version & 0xff));
  out->push_back(static_cast<char>(version >> 8));
  uint64_t crc = Crc64(0, *out);
  for (int i = 0; i < 8; ++i) {
    out->push_back(static_cast<char>(crc & 0xff));
    crc >>= 8;
  }
}

bool StripRdbFooter(std::string_view payload, std::string_view* body) {
  if (payload.size() < 10) return false;
  const size_t foot = payload.size() - 10;
  const auto byte = [&](size_t i) { return static_cast<uint64_t>(static_cast<uint8_t>(payload[i])); };
  const uint64_t version = byte(foot) | (byte(foot + 1) << 8);
  if (version > kRdbVersionRead) return false;
  uint64_t want = 0;
  for (int i = 7; i >= 0; --i) want = (want << 8) | byte(foot + 2 + static_cast<size_t>(i));
  if (Crc64(0, payload.substr(0, foot + 2)) != want) return false;
  *body = payload.substr(0, foot);
  return true;
}

bool RdbReader::ReadBytes(size_t n, std::string_view* out) {
  if (n > in_.size() - pos_) return false;
  *out = in_.substr(pos_, n);
  pos_ += n;
  return true;
}

bool RdbReader::ReadByte(uint8_t* b) {
  std::string_view v;
  if (!ReadBytes(1, &v)) return false;
  *b = static_cast<uint8_t>(v[0]);
  return true;
}

bool RdbReader::ReadLengthOrSpecial(uint64_t* len, bool* special) {
  uint8_t first;
  if (!ReadByte(&first)) return false;
  *special = false;
  const uint8_t kind = first >> 6;
  if (kind == k6Bit) {
    *len = first & 0x3f;
    return true;
  }
  if (kind == k14Bit) {
    uint8_t next;
    if (!ReadByte(&next)) return false;
    *len = (static_cast<uint64_t>(first & 0x3f) << 8) | next;
    return true;
  }
  if (kind == kEncoded) {
    *special = true;
    *len = first & 0x3f;
    return true;
  }
  int bytes;
  if (first == k32Bit) {
    bytes = 4;
  } else if (first == k64Bit) {
    bytes = 8;
  } else {
    return false;
  }
  std::string_view v;
  if (!ReadBytes(static_cast<size_t>(bytes), &v)) return false;
  uint64_t n = 0;
  for (char c : v) n = (n << 8) | static_cast<uint8_t>(c);
  *len = n;
  return true;
}

bool RdbReader::ReadLength(uint64_t* len) {
  bool special;
  return ReadLengthOrSpecial(len, &special) && !special;
}

bool RdbReader::ReadString(std::string* s) {
  uint64_t len;
  bool special;
  if (!ReadLengthOrSpecial(&len, &special)) return false;
  std::string_view v;
  if (!special) {
    if (!ReadBytes(len, &v)) return false;
    s->assign(v);
    return true;
  }
  if (len == kEncInt8 || len == kEncInt16 || len == kEncInt32) {
    const size_t bytes = len == kEncInt8 ? 1 : len == kEncInt16 ? 2 : 4;
    if (!ReadBytes(bytes, &v)) return false;
    uint64_t u = 0;
    for (size_t i = bytes; i-- > 0;) u = (u << 8) | static_cast<uint8_t>(v[i]);
    int64_t n;
    if (bytes == 1) {
      n = static_cast<int8_t>(u);
    } else if (bytes == 2) {
      n = static_cast<int16_t>(u);
    } else {
      n = static_cast<int32_t>(u);
    }
    *s = std::to_string(n);
    return true;
  }
  if (len != kEncLzf) return false;  // not one of the four special forms
  uint64_t clen, ulen;
  if (!ReadLength(&clen) || !ReadLength(&ulen) || !ReadBytes(clen, &v)) return false;
  if (ulen > (uint64_t{1} << 32)) return false;  // no payload string is this large
  return LzfDecompress(v, static_cast<size_t>(ulen), s);
}

bool RdbReader::ReadBinaryDouble(double* d) {
  std::string_view v;
  if (!ReadBytes(8, &v)) return false;
  uint64_t u = 0;
  for (size_t i = 8; i-- > 0;) u = (u << 8) | static_cast<uint8_t>(v[i]);
  std::memcpy(d, &u, sizeof *d);
  return true;
}

bool RdbReader::ReadMillisecondTime(uint64_t* ms) {
  std::string_view v;
  if (!ReadBytes(8, &v)) return false;
  uint64_t u = 0;
  for (size_t i = 8; i-- > 0;) u = (u << 8) | static_cast<uint8_t>(v[i]);
  *ms = u;
  return true;
}

bool RdbReader::ReadTextDouble(double* d) {
  uint8_t len;
  if (!ReadByte(&len)) return false;
  if (len == 253) {
    *d = std::numeric_limits<double>::quiet_NaN();
    return true;
  }
  if (len == 254 || len == 255) {
    *d = len == 254 ? HUGE_VAL : -HUGE_VAL;
    return true;
  }
  std::string_view v;
  if (!ReadBytes(len, &v)) return false;
  // Redis writes these with %.17g; the whole text must be the number.
  char buf[256];
  std::memcpy(buf, v.data(), v.size());
  buf[v.size()] = '\0';
  char* end = nullptr;
  *d = std::strtod(buf, &end);
  return len != 0 && end == buf + len;
}

}  // namespace trove::resp
