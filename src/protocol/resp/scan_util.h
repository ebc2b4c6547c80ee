// Shared parsing of the SCAN-family options (HSCAN SSCAN ZSCAN); any worker.
#pragma once

#include <string_view>

#include "protocol/resp/command.h"

namespace trove::resp {

struct ScanOptions {
  std::string_view pattern;
  bool has_pattern = false;
  int64_t count = 10;
};

// Parses "cursor [MATCH p] [COUNT n]" from argv[cursor_at]; false after an
// error reply. Collection scans return every element at once with cursor 0
// (a valid SCAN answer: a full iteration in one call).
bool ParseScanArgs(CommandContext& ctx, size_t cursor_at, ScanOptions* o);

}  // namespace trove::resp
