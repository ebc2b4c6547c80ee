// PopCount: the number of set bits in a byte range, with the fastest
// instructions the CPU has (chosen once per process). Any thread; no state
// beyond that choice.
#pragma once

#include <cstddef>
#include <cstdint>

namespace trove {

// The number of set bits in p[0, n). Reads the bytes in place, any alignment.
uint64_t PopCount(const uint8_t* p, size_t n);

}  // namespace trove
