// SHA-256 (FIPS 180-4) and a constant-time comparison, for passwords: Trove
// keeps only their digests (as Redis's ACL does, `#<hex>`) and compares
// digests in time independent of where they differ. Any thread; no state.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace trove {

using Sha256Digest = std::array<uint8_t, 32>;

Sha256Digest Sha256(std::string_view data);
// The digest as 64 lower-case hex digits (Redis's ACL GETUSER form).
std::string Sha256Hex(std::string_view data);
// True when a == b; for equal lengths, the time taken does not depend on the
// bytes (a length difference returns at once: lengths are not secret here).
bool ConstantTimeEqual(std::string_view a, std::string_view b);

}  // namespace trove
