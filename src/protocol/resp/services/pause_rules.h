// CLIENT PAUSE on the RESP port: which commands wait while a pause is on
// (Redis's rules; docs/resp_modes.md section 8). The pause itself is
// protocol::ClientPause (shared with the memcached port); holding and
// waking a connection is connection/session_pause.cc.
#pragma once

#include <span>
#include <string_view>

namespace trove::resp {

class ConnState;

// True if the command argv (argv[0] its name), sent on connection `conn`,
// must wait under pause `mode` (protocol::ClientPause::kAll or kWrite):
// every command under ALL; writes and may-replicate commands (PUBLISH,
// EVAL ...) under WRITE, and an EXEC whose queue holds one. Unknown
// commands, arity errors and commands refused for want of AUTH are
// answered at once.
bool PauseHoldsCommand(int mode, const ConnState& conn, std::span<const std::string_view> argv);

}  // namespace trove::resp
