// What the bitmap commands (bitmaps.cc) and BITFIELD (bitfield.cc) share:
// reading a string item's bytes in place, Redis's bit offsets, and the
// rewrite of a string value. Run on the connection's worker with the key's
// stripe held.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "engine/engine.h"
#include "protocol/resp/core/command_table.h"

namespace trove::resp {

// Copies bytes [off, off + n) of the value into dst: 0 past its end (or for
// no item).
void ReadBytes(const engine::ItemRef& it, size_t off, uint8_t* dst, size_t n);

// SETBIT, GETBIT and BITFIELD offsets (Redis's getBitOffsetFromArgument): an
// integer >= 0 whose byte (offset / 8) is below proto-max-bulk-len. For
// BITFIELD (bits > 0), "#N" is the N-th field of that width. False after
// the error reply.
bool ParseBitOffset(CommandContext& ctx, std::string_view s, int bits, uint64_t* out);

// Starts a rewrite of the string *it (null: a new key) that needs `need`
// bytes: *v holds its value grown with zero bytes, *exptime its expiry, and
// *it is released. False after the error reply when the result would be
// larger than the engine's item size.
bool BeginRewrite(CommandContext& ctx, engine::ItemRef* it, size_t need, std::string* v,
                  int64_t* exptime);

inline uint8_t* Bytes(std::string& s) { return reinterpret_cast<uint8_t*>(s.data()); }

// BITFIELD and BITFIELD_RO (bitfield.cc), registered with the bitmap commands.
void CmdBitfield(CommandContext& ctx);
void CmdBitfieldRo(CommandContext& ctx);

}  // namespace trove::resp
