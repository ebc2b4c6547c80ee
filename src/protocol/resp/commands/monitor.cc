// MONITOR: the command, and the line every command that ran produces for
// the monitors (Redis's replicationFeedMonitors format). Lines travel
// through the server's LogHub (lossy, bounded); runs on workers.
#include <cstdio>
#include <string>

#include "net/log_hub.h"
#include "net/protocol_handler.h"
#include "protocol/resp/core/command.h"
#include "protocol/resp/services/acl_categories.h"
#include "protocol/resp/core/client.h"
#include "protocol/resp/core/command_table.h"
#include "protocol/resp/core/resp_server.h"
#include "protocol/resp/commands/server_commands.h"
#include "protocol/resp/core/resp_parser.h"

namespace trove::resp {

namespace {

// Redis's sdscatrepr: quoted, with \\ \" \n \r \t \a \b and \xHH escapes.
void AppendRepr(std::string* out, std::string_view s) {
  out->push_back('"');
  for (unsigned char c : s) {
    switch (c) {
      case '\\': out->append("\\\\"); break;
      case '"': out->append("\\\""); break;
      case '\n': out->append("\\n"); break;
      case '\r': out->append("\\r"); break;
      case '\t': out->append("\\t"); break;
      case '\a': out->append("\\a"); break;
      case '\b': out->append("\\b"); break;
      default:
        if (c >= 0x20 && c < 0x7f) {
          out->push_back(static_cast<char>(c));
        } else {
          char hex[5];
          std::snprintf(hex, sizeof(hex), "\\x%02x", c);
          out->append(hex, 4);
        }
    }
  }
  out->push_back('"');
}

// Admin subcommands of a container that is not admin itself (Redis's
// CMD_ADMIN per subcommand): never shown to monitors.
bool AdminSubcommand(const CommandSpec& spec, std::span<const std::string_view> argv) {
  if (argv.size() < 2) return false;
  const int slot = HistogramSlots::Get().SlotOf(spec, argv);
  if (slot < 0 || slot == spec.id) return false;
  return (acl::CommandCategories::Get().of(static_cast<size_t>(slot)) & acl::kCatAdmin) != 0;
}

// Which arguments Redis redacts: AUTH's all; HELLO's after AUTH (user, pass).
bool Redacted(const CommandSpec& spec, std::span<const std::string_view> argv, size_t i) {
  const std::string_view name = spec.name;
  if (name == "auth") return i >= 1;
  if (name == "acl" && argv.size() >= 3 &&
      (EqualsIgnoreCase(argv[1], "setuser") || EqualsIgnoreCase(argv[1], "deluser") ||
       EqualsIgnoreCase(argv[1], "getuser")))
    return i >= 2;
  if (name == "hello") {
    for (size_t j = 2; j < argv.size() && j < i; ++j) {
      if (EqualsIgnoreCase(argv[j], "auth")) return i <= j + 2;
    }
  }
  return false;
}

void CmdMonitor(CommandContext& ctx) {
  // Redis: inside EXEC the client expects one reply per command.
  if (ctx.in_exec) {
    ctx.Error("ERR MONITOR isn't allowed for DENY BLOCKING client");
    return;
  }
  ctx.client->StartMonitor(ctx);
}

}  // namespace

void RespServer::FeedMonitors(const CommandSpec& spec, std::span<const std::string_view> argv,
                              const Identity& who) {
  FeedMonitorLine(spec, argv, who.db(), who.addr());
}

void RespServer::FeedMonitorLine(const CommandSpec& spec, std::span<const std::string_view> argv,
                                 int db, std::string_view addr) {
  if ((spec.flags & kCmdAdmin) != 0 || AdminSubcommand(spec, argv)) return;
  thread_local std::string line;
  line.clear();
  char head[32];
  const int n = std::snprintf(head, sizeof(head), "[%d ", db);
  line.append(head, static_cast<size_t>(n));
  line.append(addr);
  line.append("] ");
  for (size_t i = 0; i < argv.size(); ++i) {
    if (i > 0) line.push_back(' ');
    if (Redacted(spec, argv, i)) {
      line.append("\"(redacted)\"");
    } else {
      AppendRepr(&line, argv[i]);
    }
  }
  log_->Log(net::kLogMonitor, line);
}

void RegisterMonitorCommands(std::vector<CommandSpec>* t) {
  t->push_back({"monitor", 1, kCmdAdmin | kCmdLoading | kCmdStale, 0, 0, 0, CmdMonitor, nullptr,
                "server", "Listens for all requests received by the server in real-time.",
                "1.0.0"});
}

}  // namespace trove::resp
