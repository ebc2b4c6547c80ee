// What CONFIG's two files share: the parameters, their values and applying a
// new one (config_params.cc), for CONFIG GET and SET (config.cc). Runs on the
// connection's worker.
#pragma once

#include <atomic>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "protocol/resp/core/command.h"
#include "protocol/resp/core/resp_server.h"

namespace trove::resp {

// A parameter: an integer field of RespServer, or (field nullptr) one that
// ConfigValue and ApplyParam know by name.
struct ConfigParam {
  const char* name;
  std::atomic<int64_t> RespServer::*field;  // nullptr: special
  bool mutable_;
  // Redis's accepted range of an integer parameter (config.c).
  int64_t min = INT64_MIN;
  int64_t max = INT64_MAX;
};

// Every parameter CONFIG knows, in CONFIG GET's order (config_params.cc).
extern const std::span<const ConfigParam> kParams;

// A parameter's value as CONFIG GET shows it.
std::string ConfigValue(CommandContext& ctx, const ConfigParam& p);
// "ERR CONFIG SET failed (possibly related to argument '<name>') - <why>".
void SetFailed(CommandContext& ctx, std::string_view name, std::string_view why);
// One parameter's new value, checked and applied; false after the error
// reply.
bool ApplyParam(CommandContext& ctx, const ConfigParam& p, const std::string& name,
                std::string_view value);

}  // namespace trove::resp
