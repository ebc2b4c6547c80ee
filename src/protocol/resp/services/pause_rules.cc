// Which RESP commands wait under CLIENT PAUSE (pause_rules.h).
#include "protocol/resp/services/pause_rules.h"

#include "protocol/client_pause.h"
#include "protocol/resp/core/command_table.h"
#include "protocol/resp/core/conn_state.h"

namespace trove::resp {
namespace {

// Redis's CMD_WRITE | CMD_MAY_REPLICATE.
bool MayReplicate(const CommandSpec& spec) {
  if (spec.flags & kCmdWrite) return true;
  const std::string_view n = spec.name;
  return n == "publish" || n == "spublish" || n == "pfcount" || n == "eval" || n == "evalsha" ||
         n == "fcall";
}

}  // namespace

bool PauseHoldsCommand(int mode, const ConnState& conn, std::span<const std::string_view> argv) {
  if (mode == protocol::ClientPause::kNone) return false;
  const CommandSpec* spec = CommandTable::Get().Find(argv[0]);
  if (spec == nullptr) return false;  // its error comes at once
  const int argc = static_cast<int>(argv.size());
  if ((spec->arity > 0 && argc != spec->arity) || argc < -spec->arity) return false;
  if (!conn.identity().authenticated() && (spec->flags & kCmdNoAuth) == 0) return false;
  if (mode == protocol::ClientPause::kAll) return true;
  if (MayReplicate(*spec)) return true;
  if (std::string_view(spec->name) == "exec" && conn.txn().active()) {
    for (const auto& q : conn.txn().queued()) {
      const CommandSpec* s = CommandTable::Get().Find(q[0]);
      if (s != nullptr && MayReplicate(*s)) return true;
    }
  }
  return false;
}

}  // namespace trove::resp
