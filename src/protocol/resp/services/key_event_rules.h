// Keyspace notifications and tracking invalidations of a write command,
// found by comparing its keys before and after it runs (key_event_rules.cc
// says how and what it costs). Used by the command seam (core/execute.cc).
#pragma once

#include <span>
#include <string_view>
#include <vector>

#include "protocol/resp/core/command.h"

namespace trove::resp {

// Reused between commands so the comparison allocates nothing in steady state.
struct KeyChangeBuffers {
  std::vector<KeyVersion> before;
  std::vector<KeyVersion> after;
};

// Runs ctx.spec->fn with the stripes of keys[] held (argv indexes idx[]);
// for a write, with notifications or tracking on (ctx.notify), appends to
// ctx.fx the events Redis would raise and the keys that changed.
void RunRecordingChanges(CommandContext& ctx, std::span<const size_t> idx,
                         std::span<const std::string_view> keys, KeyChangeBuffers* buf);

}  // namespace trove::resp
