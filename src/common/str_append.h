// Small, allocation-free number formatting for reply paths (g++ 12 has no
// std::format; to_chars is also cheaper). Any thread.
#pragma once

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstdint>
#include <string>
#include <string_view>

namespace trove {

// Writes the decimal form of v at p and returns the end. p needs 20 (21 signed) bytes.
inline char* FormatU64(char* p, uint64_t v) { return std::to_chars(p, p + 20, v).ptr; }
inline char* FormatI64(char* p, int64_t v) { return std::to_chars(p, p + 21, v).ptr; }

inline void AppendU64(std::string& s, uint64_t v) {
  char buf[20];
  s.append(buf, FormatU64(buf, v));
}
inline void AppendI64(std::string& s, int64_t v) {
  char buf[21];
  s.append(buf, FormatI64(buf, v));
}

// Parses an unsigned decimal (no sign, no spaces); false on empty, junk or overflow.
inline bool ParseU64(std::string_view s, uint64_t* out) {
  if (s.empty()) return false;
  auto r = std::from_chars(s.data(), s.data() + s.size(), *out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}
inline bool ParseI64(std::string_view s, int64_t* out) {
  if (s.empty()) return false;
  auto r = std::from_chars(s.data(), s.data() + s.size(), *out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}
// Parses a whole string as strtod does (leading spaces, sign, exponent, inf,
// nan, hex); false on empty input or trailing junk. errno is left as strtod
// set it (cleared first), so callers can check ERANGE.
inline bool ParseDouble(std::string_view s, double* out) {
  if (s.empty()) return false;
  std::string tmp(s);  // strtod needs a terminator
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(tmp.c_str(), &end);
  if (end != tmp.c_str() + tmp.size()) return false;
  *out = v;
  return true;
}

inline bool ParseU32(std::string_view s, uint32_t* out) {
  if (s.empty()) return false;
  auto r = std::from_chars(s.data(), s.data() + s.size(), *out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

}  // namespace trove
