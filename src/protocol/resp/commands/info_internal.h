// INFO's per-command sections (info_command_stats.cc), for INFO's table of
// sections (info.cc). Runs on the connection's worker.
#pragma once

#include <string>

#include "protocol/resp/core/command.h"

namespace trove::resp {

// Each appends its section, "# <Name>" and its fields, to *s.
void CommandstatsSection(CommandContext& ctx, std::string* s);
void ErrorstatsSection(CommandContext& ctx, std::string* s);
void LatencystatsSection(CommandContext& ctx, std::string* s);

}  // namespace trove::resp
