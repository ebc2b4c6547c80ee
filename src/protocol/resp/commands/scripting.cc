// EVAL, EVALSHA, EVAL_RO, EVALSHA_RO and SCRIPT: server-side Lua scripts.
// The seam locks the script's declared KEYS for the whole run, so a script
// is atomic over them; the Lua side is scripting_lua.cc (the worker's VM)
// and scripting_call.cc (redis.call). Runs on the connection's worker.
#include <cctype>
#include <iterator>
#include <string>
#include <vector>

#include "common/sha1.h"
#include "protocol/resp/commands/scripting_internal.h"
#include "protocol/resp/commands/server_commands.h"
#include "protocol/resp/core/command.h"
#include "protocol/resp/core/command_table.h"
#include "protocol/resp/core/resp_parser.h"
#include "protocol/resp/core/resp_server.h"
#include "protocol/resp/services/script_cache.h"

namespace trove::resp {
namespace {

void Eval(CommandContext& ctx, bool read_only) {
  size_t nk;
  if (!ParseNumKeys(ctx, "ERR value is not an integer or out of range", &nk)) return;
  const std::string body(ctx.argv[1]);
  RunScript(ctx, Sha1Hex(body), &body, nk, read_only);
}

void EvalSha(CommandContext& ctx, bool read_only) {
  size_t nk;
  if (!ParseNumKeys(ctx, "ERR value is not an integer or out of range", &nk)) return;
  // Reused: EVALSHA cannot nest (scripts may not call it).
  thread_local std::string sha;
  sha.assign(ctx.argv[1]);
  if (sha.size() != 40) {
    ctx.Error("NOSCRIPT No matching script. Please use EVAL.");
    return;
  }
  for (char& c : sha) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  RunScript(ctx, sha, nullptr, nk, read_only);
}

void CmdEval(CommandContext& ctx) { Eval(ctx, false); }
void CmdEvalRo(CommandContext& ctx) { Eval(ctx, true); }
void CmdEvalSha(CommandContext& ctx) { EvalSha(ctx, false); }
void CmdEvalShaRo(CommandContext& ctx) { EvalSha(ctx, true); }

void ScriptHelp(CommandContext& ctx) {
  static constexpr std::string_view kLines[] = {
      "SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
      "EXISTS <sha1> [<sha1> ...]",
      "    Return information about the existence of the scripts in the script cache.",
      "FLUSH [ASYNC|SYNC]",
      "    Flush the Lua scripts cache. Very dangerous on replicas.",
      "    When called without the optional mode argument, the behavior is determined by the",
      "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
      "    * ASYNC: Asynchronously flush the scripts cache.",
      "    * SYNC: Synchronously flush the scripts cache.",
      "KILL",
      "    Kill the currently executing Lua script.",
      "LOAD <script>",
      "    Load a script into the scripts cache without executing it.",
      "HELP",
      "    Prints this help."};
  WriteHelp(ctx, kLines);
}

void CmdScript(CommandContext& ctx) {
  const std::string sub = ToLower(ctx.argv[1]);
  ScriptCache& cache = ctx.server->scripts();
  if (sub == "load" && ctx.argc() == 3) {
    const std::string sha = Sha1Hex(ctx.argv[2]);
    std::string err;
    if (!CompileScript(ctx, sha, ctx.argv[2], &err)) {
      ctx.Error(err);
      return;
    }
    cache.Add(sha, ctx.argv[2]);
    ctx.w->Bulk(sha);
  } else if (sub == "exists" && ctx.argc() >= 3) {
    ctx.w->ArrayHeader(ctx.argc() - 2);
    for (size_t i = 2; i < ctx.argc(); ++i) ctx.w->Integer(cache.Exists(ctx.argv[i]) ? 1 : 0);
  } else if (sub == "flush" && ctx.argc() <= 3) {
    if (ctx.argc() == 3 && !EqualsIgnoreCase(ctx.argv[2], "sync") &&
        !EqualsIgnoreCase(ctx.argv[2], "async")) {
      ctx.Error("ERR SCRIPT FLUSH only support SYNC|ASYNC option");
      return;
    }
    cache.Flush();  // each worker's VM drops its compiled scripts at its next script
    ctx.w->Ok();
  } else if (sub == "kill" && ctx.argc() == 2) {
    KillBusyScript(ctx, /*is_eval=*/true);
  } else if (sub == "help" && ctx.argc() == 2) {
    ScriptHelp(ctx);
  } else {
    SubcommandSyntaxError(ctx);
  }
}

}  // namespace

bool ParseNumKeys(CommandContext& ctx, std::string_view not_integer, size_t* nk) {
  int64_t n;
  if (!ParseStrictInt64(ctx.argv[2], &n)) {
    ctx.Error(not_integer);
    return false;
  }
  if (n < 0) {
    ctx.Error("ERR Number of keys can't be negative");
    return false;
  }
  if (static_cast<uint64_t>(n) > ctx.argc() - 3) {
    ctx.Error("ERR Number of keys can't be greater than number of args");
    return false;
  }
  *nk = static_cast<size_t>(n);
  return true;
}

void RegisterScriptingCommands(std::vector<CommandSpec>* t) {
  const CommandAdder add{t, "scripting"};
  const uint32_t f = kCmdStale | kCmdMovableKeys;
  add("eval", -3, f, 0, 0, CmdEval, "Executes a server-side Lua script.", "2.6.0", NumKeysAt2);
  add("evalsha", -3, f, 0, 0, CmdEvalSha, "Executes a server-side Lua script by SHA1 digest.",
      "2.6.0", NumKeysAt2);
  add("eval_ro", -3, f | kCmdReadonly, 0, 0, CmdEvalRo,
      "Executes a read-only server-side Lua script.", "7.0.0", NumKeysAt2);
  add("evalsha_ro", -3, f | kCmdReadonly, 0, 0, CmdEvalShaRo,
      "Executes a read-only server-side Lua script by SHA1 digest.", "7.0.0", NumKeysAt2);
  add("script", -2, 0, CmdScript, "A container for Lua scripts management commands.", "2.6.0");
}

void KillBusyScript(CommandContext& ctx, bool is_eval) {
  switch (ctx.server->busy_scripts().Kill(is_eval)) {
    case BusyScripts::KillResult::kKilled:
      ctx.w->Ok();
      return;
    case BusyScripts::KillResult::kNotBusy:
      ctx.Error("NOTBUSY No scripts in execution right now.");
      return;
    case BusyScripts::KillResult::kUnkillable:
      ctx.Error(
          "UNKILLABLE Sorry the script already executed write commands against the dataset. You "
          "can either wait the script termination or kill the server in a hard way using the "
          "SHUTDOWN NOSAVE command.");
      return;
    case BusyScripts::KillResult::kBusyEval:
      ctx.Error(BusyScripts::BusyError(true));
      return;
    case BusyScripts::KillResult::kBusyFunction:
      ctx.Error(BusyScripts::BusyError(false));
      return;
  }
}

}  // namespace trove::resp
