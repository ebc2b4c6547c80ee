// Helpers shared by the flag parser's files (config.cc: flags and checks;
// config_extended.cc: memcached's -o suboptions). Main thread, at startup.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"
#include "common/str_append.h"
#include "server/config.h"

namespace trove::server::detail {

constexpr size_t kItemSizeMaxLower = 1024;        // memcached ITEM_SIZE_MAX_LOWER_LIMIT
constexpr size_t kItemSizeMaxUpper = 1ull << 30;  // memcached ITEM_SIZE_MAX_UPPER_LIMIT

inline Status Bad(std::string msg) { return Status::Invalid(msg); }

inline bool ParseInt(std::string_view s, int64_t lo, int64_t hi, int64_t* out) {
  int64_t v;
  if (!ParseI64(s, &v) || v < lo || v > hi) return false;
  *out = v;
  return true;
}

// "1048576", "1024k", "1m", "1g" (memcached's -I units).
inline bool ParseSize(std::string_view s, uint64_t* out) {
  if (s.empty()) return false;
  uint64_t mult = 1;
  switch (s.back()) {
    case 'k': case 'K': mult = 1ull << 10; break;
    case 'm': case 'M': mult = 1ull << 20; break;
    case 'g': case 'G': mult = 1ull << 30; break;
    default: break;
  }
  if (mult != 1) s.remove_suffix(1);
  uint64_t v;
  if (!ParseU64(s, &v) || v > (UINT64_MAX / mult)) return false;
  *out = v * mult;
  return true;
}

// Applies a comma-separated -o list.
Status ApplyExtendedList(std::string_view list, Config* c);

}  // namespace trove::server::detail
