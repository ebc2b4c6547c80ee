// LZF decompression, for the compressed strings of Redis's RDB format (a
// DUMP or FUNCTION DUMP payload from Redis carries strings longer than 20
// bytes LZF-compressed when that saves space). Any thread; no state.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace trove {

// Decompresses in into *out, which must come out exactly `expected` bytes
// long; false on a malformed stream (a back reference before the start, a
// run past either end), another length, or an `expected` no stream of this
// size can reach (more than 88 times its size: nothing is allocated then).
bool LzfDecompress(std::string_view in, size_t expected, std::string* out);

}  // namespace trove
