// SHA-1 (RFC 3174), for naming server-side scripts by their body as Redis's
// EVALSHA does (not for security). Any thread; no state.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace trove {

using Sha1Digest = std::array<uint8_t, 20>;

Sha1Digest Sha1(std::string_view data);
// The digest as 40 lower-case hex digits.
std::string Sha1Hex(std::string_view data);

}  // namespace trove
