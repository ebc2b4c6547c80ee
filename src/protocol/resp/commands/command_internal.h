// What COMMAND's two files share: command.cc (INFO, DOCS, LIST, COUNT, HELP
// and the dispatcher) and command_keys.cc (GETKEYS[ANDFLAGS] and the key
// flags). Runs on the connection's worker.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "protocol/resp/core/command.h"

namespace trove::resp {

// What COMMAND INFO and GETKEYS need of a command or of a subcommand.
struct CmdView {
  std::string_view name;
  int arity = 0;
  uint32_t flags = 0;
  int first_key = 0, last_key = 0, step = 0;
  size_t slot = 0;                    // HistogramSlots slot (a command's is its id)
  const CommandSpec* spec = nullptr;  // the command; nullptr for a subcommand
};

// A command's view (command.cc).
CmdView ViewOf(const CommandSpec& s);
// A subcommand's, by its HistogramSlots slot (command.cc).
CmdView ViewOfSub(size_t slot);
// COMMAND GETKEYS|GETKEYSANDFLAGS <command> [arg ...] (command_keys.cc).
void GetKeys(CommandContext& ctx, bool with_flags);

}  // namespace trove::resp
