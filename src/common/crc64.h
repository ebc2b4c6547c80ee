// CRC-64/Jones as Redis computes it for DUMP and FUNCTION DUMP payloads
// (reflected, polynomial 0xad93d23594c935a9, initial value 0, no final xor;
// check value of "123456789": 0xe9c6d914c4b8d9ca). Any thread; no state
// besides a constant table.
#pragma once

#include <cstdint>
#include <string_view>

namespace trove {

// The CRC of data continued from crc (0 to start).
uint64_t Crc64(uint64_t crc, std::string_view data);

}  // namespace trove
