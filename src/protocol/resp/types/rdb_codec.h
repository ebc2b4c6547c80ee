// The pieces of Redis's RDB format that its DUMP-style payloads use (DUMP /
// RESTORE, FUNCTION DUMP / RESTORE): length and string encodings, and the
// payload footer (2-byte RDB version, little-endian, then the CRC-64/Jones
// of everything before it, little-endian). Written as Redis 7.0 writes them
// (RDB version 10; strings raw, or as small integers); read as Redis 7.0-7.4
// write them (versions up to 12; integer-encoded and LZF-compressed strings
// too). The values built from these are in rdb_objects.h. Any thread; no
// state.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace trove::resp {

// The RDB version written in footers; the one a payload needs when it holds
// a hash with field TTLs (the forms Redis 7.4 added; a Redis that does not
// know them refuses the payload by its version); and the newest one read.
inline constexpr uint16_t kRdbVersionWritten = 10;         // Redis 7.0
inline constexpr uint16_t kRdbVersionHashFieldTtls = 12;  // Redis 7.4
inline constexpr uint16_t kRdbVersionRead = 12;            // Redis 7.4

void AppendRdbLength(std::string* out, uint64_t len);
void AppendRdbString(std::string* out, std::string_view s);
// A value string as Redis writes one: the integer encoding when s is the
// canonical decimal form of a 32-bit integer ("123", not "0123" or "+1"),
// else raw. Reads back as the same bytes.
void AppendRdbStringValue(std::string* out, std::string_view s);
// A unix time in ms as RDB writes one: 8 bytes, little-endian.
void AppendRdbMillisecondTime(std::string* out, uint64_t ms);
// Appends the footer of `version` over *out's bytes so far.
void AppendRdbFooter(std::string* out, uint16_t version = kRdbVersionWritten);
// The payload without its footer, if the footer's version is one Trove
// reads and its checksum matches; false otherwise.
bool StripRdbFooter(std::string_view payload, std::string_view* body);

// Reads a payload's body front to back; every method false past the end or
// on a malformed value.
class RdbReader {
 public:
  explicit RdbReader(std::string_view body) : in_(body) {}
  bool done() const { return pos_ >= in_.size(); }
  size_t remaining() const { return in_.size() - pos_; }
  bool ReadByte(uint8_t* b);
  // A plain length; false for a special (encoded-string) form.
  bool ReadLength(uint64_t* len);
  // A string in any of its encodings: raw, integer (8/16/32 bits) or LZF.
  bool ReadString(std::string* s);
  // 8 bytes of a little-endian IEEE double (ZSET_2 scores).
  bool ReadBinaryDouble(double* d);
  // 8 bytes of a little-endian unix time in ms (AppendRdbMillisecondTime).
  bool ReadMillisecondTime(uint64_t* ms);
  // A score of the old ZSET form: a length byte, then that many bytes of
  // decimal text; 253, 254, 255 stand for nan, inf and -inf.
  bool ReadTextDouble(double* d);

 private:
  // A length, or a special form's tag in *len with *special set.
  bool ReadLengthOrSpecial(uint64_t* len, bool* special);
  bool ReadBytes(size_t n, std::string_view* out);

  std::string_view in_;
  size_t pos_ = 0;
};

}  // namespace trove::resp
