// CONFIG GET / SET / RESETSTAT / REWRITE / HELP; the parameters and applying
// their values are config_params.cc. Runs on the connection's worker.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/str_append.h"
#include "net/worker.h"
#include "protocol/resp/commands/config_internal.h"
#include "protocol/resp/commands/server_commands.h"
#include "protocol/resp/core/client.h"
#include "protocol/resp/core/command_table.h"
#include "protocol/resp/core/keyspace_walk.h"
#include "protocol/resp/core/resp_parser.h"
#include "protocol/resp/core/resp_server.h"
#include "protocol/resp/types/collections.h"
#include "protocol/resp/types/keyspace.h"

namespace trove::resp {
namespace {

using engine::ItemRef;

namespace {

// CONFIG SET's tls-* settings, together (RespTls::Set); false after the
// error reply. A context that does not build is Redis's fixed reply, and
// OpenSSL's reason goes to the log (stderr).
bool ApplyTls(CommandContext& ctx, const std::vector<std::pair<std::string, std::string>>& changes) {
  std::string bad, err;
  bool build_failed = false;
  if (ctx.server->tls().Set(changes, &bad, &err, &build_failed)) return true;
  if (build_failed) {
    std::fprintf(stderr, "Failed to update TLS configuration: %s\n", err.c_str());
    SetFailed(ctx, bad, "Unable to update TLS configuration. Check server logs.");
  } else {
    SetFailed(ctx, bad, err);
  }
  return false;
}

}  // namespace

void CmdConfig(CommandContext& ctx) {
  std::string sub = ToLower(ctx.argv[1]);
  if (sub == "get") {
    if (ctx.argc() < 3) {
      SubArity(ctx);
      return;
    }
    std::vector<std::pair<std::string, std::string>> out;
    for (const ConfigParam& p : kParams) {
      bool alias = std::string_view(p.name).find("ziplist") != std::string_view::npos;
      for (size_t i = 2; i < ctx.argc(); ++i) {
        if (GlobMatch(ctx.argv[i], p.name, true) && (!alias || ctx.argv[i] == p.name)) {
          out.emplace_back(p.name, ConfigValue(ctx, p));
          break;
        }
      }
    }
    ctx.w->MapHeader(out.size());
    for (const auto& [k, v] : out) {
      ctx.w->Bulk(k);
      ctx.w->Bulk(v);
    }
  } else if (sub == "set") {
    if (ctx.argc() < 4 || ctx.argc() % 2 != 0) {
      SubArity(ctx);
      return;
    }
    for (size_t i = 2; i + 1 < ctx.argc(); i += 2) {
      for (size_t j = 2; j < i; j += 2) {
        if (EqualsIgnoreCase(ctx.argv[i], ctx.argv[j])) {
          SetFailed(ctx, ToLower(ctx.argv[i]), "duplicate parameter");
          return;
        }
      }
    }
    // All or nothing, as Redis 7: every name is checked first; then each
    // value is applied, and on a failure the ones applied before it get
    // their old values back. requirepass cannot fail and keeps no readable
    // old value, so it goes last.
    struct Pending {
      const ConfigParam* p;
      std::string name;
      std::string_view value;
    };
    std::vector<Pending> todo;
    for (size_t i = 2; i + 1 < ctx.argc(); i += 2) {
      std::string name = ToLower(ctx.argv[i]);
      const ConfigParam* found = nullptr;
      for (const ConfigParam& p : kParams)
        if (name == p.name) found = &p;
      if (found == nullptr) {
        std::string m = "ERR Unknown option or number of arguments for CONFIG SET - '";
        m.append(ctx.argv[i]);
        m += "'";
        ctx.Error(m);
        return;
      }
      if (!found->mutable_) {
        if (ctx.argv[i + 1] == ConfigValue(ctx, *found)) continue;  // its value already
        SetFailed(ctx, name, "can't set immutable config");
        return;
      }
      todo.push_back({found, std::move(name), ctx.argv[i + 1]});
    }
    std::stable_partition(todo.begin(), todo.end(),
                          [](const Pending& t) { return t.name != "requirepass"; });
    // The tls-* settings are applied together (one context is built from
    // all of them: a new certificate and its key arrive in one call) after
    // the others and before requirepass, so a failed build is the last
    // step that can fail.
    std::vector<std::pair<std::string, std::string>> tls_changes;
    for (auto it = todo.begin(); it != todo.end();) {
      if (RespTls::IsName(it->name)) {
        tls_changes.emplace_back(it->name, std::string(it->value));
        it = todo.erase(it);
      } else {
        ++it;
      }
    }
    std::vector<std::pair<const Pending*, std::string>> done;  // with old values
    auto put_back = [&ctx, &done] {
      // The error is written; put back what was applied, quietly.
      net::OutputBuffer junk;
      RespWriter jw(&junk, ctx.w->proto());
      CommandContext quiet = ctx;
      quiet.w = &jw;
      for (auto it = done.rbegin(); it != done.rend(); ++it) {
        (void)ApplyParam(quiet, *it->first->p, it->first->name, it->second);
      }
    };
    bool tls_done = tls_changes.empty();
    for (const Pending& t : todo) {
      if (!tls_done && t.name == "requirepass") {
        if (!ApplyTls(ctx, tls_changes)) {
          put_back();
          return;
        }
        tls_done = true;
      }
      std::string old = t.name == "requirepass" ? std::string() : ConfigValue(ctx, *t.p);
      if (!ApplyParam(ctx, *t.p, t.name, t.value)) {
        put_back();
        return;
      }
      done.emplace_back(&t, std::move(old));
    }
    if (!tls_done && !ApplyTls(ctx, tls_changes)) {
      put_back();
      return;
    }
    ctx.w->Ok();
  } else if (sub == "resetstat") {
    if (ctx.argc() != 2) {
      SubArity(ctx);
      return;
    }
    ctx.server->ResetStats();
    ctx.w->Ok();
  } else if (sub == "rewrite") {
    ctx.Error("ERR The server is running without a config file");
  } else if (sub == "help") {
    const std::string_view lines[] = {
        "CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "GET <pattern>",
        "    Return parameters matching the glob-like <pattern> and their values.",
        "SET <directive> <value>",
        "    Set the configuration <directive> to <value>.",
        "RESETSTAT",
        "    Reset statistics reported by the INFO command.",
        "HELP",
        "    Print this help."};
    WriteHelp(ctx, lines);
  } else {
    UnknownSubcommand(ctx);
  }
}

}  // namespace

void RegisterConfigCommands(std::vector<CommandSpec>* t) {
  const CommandAdder add{t};
  add("config", -2, kCmdAdmin | kCmdLoading | kCmdStale, CmdConfig, "server",
      "A container for server configuration commands.", "2.0.0");
}

}  // namespace trove::resp
