// The connection and server commands, split by concern over commands/server.cc,
// commands/connection.cc, commands/client.cc, commands/info.cc, commands/memory.cc,
// commands/config.cc, commands/command.cc, commands/introspection.cc and commands/slowlog.cc,
// and the helpers they share.
// Connection's worker.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "net/protocol_handler.h"
#include "protocol/resp/core/command.h"
#include "protocol/resp/services/acl_user.h"

namespace trove::resp {

// The Redis version Trove reports (INFO, HELLO).
inline constexpr const char* kRedisVersion = "7.0.15";

// "ERR unknown subcommand '<sub>'. Try <CMD> HELP."
void UnknownSubcommand(CommandContext& ctx);
// "ERR unknown subcommand or wrong number of arguments for '<sub>'. Try <CMD>
// HELP." (Redis's addReplySubcommandSyntaxError; <sub> cut at 128 bytes)
void SubcommandSyntaxError(CommandContext& ctx);
// "ERR wrong number of arguments for '<cmd>|<sub>' command"
void SubArity(CommandContext& ctx);
// A HELP reply: the lines as simple strings, in one array.
void WriteHelp(CommandContext& ctx, std::span<const std::string_view> lines);
// CLIENT TRACKING / CACHING / GETREDIR / TRACKINGINFO (commands/tracking.cc):
// false when `sub` (lower case) is none of them or has the wrong arity.
bool ClientTrackingCommand(CommandContext& ctx, std::string_view sub);
// A CLIENT LIST line (with its newline) for c (commands/client_list.cc).
void AppendClientLine(std::string* out, const net::ClientInfo& c);
// CLIENT LIST and CLIENT KILL, over every worker's connections
// (commands/client_list.cc).
void ClientList(CommandContext& ctx);
void ClientKill(CommandContext& ctx);
// The text after NOPERM (or DRYRUN's reply) for a denial (session_acl.cc);
// verbose names the key or channel.
std::string AclDeniedMessage(acl::Denied d, const std::string& user, std::string_view cmd,
                             std::string_view object, bool verbose);
// An INFO line "k:v\r\n".
void AddField(std::string* s, std::string_view k, std::string_view v);
void AddField(std::string* s, std::string_view k, int64_t v);

}  // namespace trove::resp
