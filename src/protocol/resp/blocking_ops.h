// The parts of the list and zset commands that the blocking commands run
// (cmd_blocking.cc), with their keys' stripes held.
#pragma once

#include "protocol/resp/command.h"

namespace trove::resp {

// LEFT / RIGHT (any case); false for anything else.
bool ParseSide(std::string_view s, bool* left);
// LMOVE's body on argv[1] (source) and argv[2] (destination), replying.
void ListMove(CommandContext& ctx, bool from_left, bool to_left);
// LMPOP / ZMPOP on argv (numkeys at argv[1]): true if a reply was written
// (data or an error), false if every key was empty (nothing written).
bool ListMPop(CommandContext& ctx);
bool ZsetMPop(CommandContext& ctx);

}  // namespace trove::resp
