// FUNCTION and FCALL / FCALL_RO: Redis 7 function libraries. The libraries
// are the server's (services/function_library.h); their code runs on each
// worker's Lua VM (scripting_library.cc); FCALL runs a function as EVAL runs
// a script, atomic over its declared keys, which the seam locks. Runs on the
// connection's worker.
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "common/glob.h"
#include "protocol/resp/commands/scripting_internal.h"
#include "protocol/resp/commands/server_commands.h"
#include "protocol/resp/core/command.h"
#include "protocol/resp/core/command_table.h"
#include "protocol/resp/core/resp_parser.h"
#include "protocol/resp/core/resp_server.h"
#include "protocol/resp/types/rdb_codec.h"

namespace trove::resp {
namespace {

// RDB's opcode before a library's code in a FUNCTION DUMP payload, and
// the pre-release form Redis 7.0's RC builds wrote.
constexpr uint8_t kRdbOpFunction2 = 245;
constexpr uint8_t kRdbOpFunctionPreGa = 246;

void Fcall(CommandContext& ctx, bool read_only) {
  size_t nk;
  if (!ParseNumKeys(ctx, "ERR Bad number of keys provided", &nk)) return;
  RunFunction(ctx, nk, read_only);
}

void CmdFcall(CommandContext& ctx) { Fcall(ctx, false); }
void CmdFcallRo(CommandContext& ctx) { Fcall(ctx, true); }

bool OverMemory(CommandContext& ctx) {
  if (!ctx.engine->over_mem_limit()) return false;
  ctx.Error("OOM command not allowed when used memory > 'maxmemory'.");
  return true;
}

void FunctionLoad(CommandContext& ctx) {
  bool replace = false;
  size_t i = 2;
  for (; i + 1 < ctx.argc(); ++i) {
    if (!EqualsIgnoreCase(ctx.argv[i], "replace")) {
      ctx.Error("ERR Unknown option given: " + std::string(ctx.argv[i]));
      return;
    }
    replace = true;
  }
  if (i >= ctx.argc()) {
    ctx.Error("ERR Function code is missing");
    return;
  }
  if (OverMemory(ctx)) return;
  FunctionLibrary lib;
  std::string err;
  if (!LoadLibrary(ctx, ctx.argv[i], &lib, &err)) {
    ctx.Error(err);
    return;
  }
  const std::string name = lib.name;
  if (!ctx.server->functions().Add(std::move(lib), replace, &err)) {
    ctx.Error("ERR " + err);
    return;
  }
  ctx.w->Bulk(name);
}

void ReplyFlags(CommandContext& ctx, uint32_t flags) {
  size_t n = 0;
  for (size_t b = 0; b < std::size(kFunctionFlagNames); ++b) n += (flags >> b) & 1;
  ctx.w->SetHeader(n);
  for (size_t b = 0; b < std::size(kFunctionFlagNames); ++b)
    if ((flags >> b) & 1) ctx.w->Simple(kFunctionFlagNames[b]);
}

void FunctionList(CommandContext& ctx) {
  bool with_code = false;
  bool have_pattern = false;
  std::string_view pattern;
  for (size_t i = 2; i < ctx.argc(); ++i) {
    if (!with_code && EqualsIgnoreCase(ctx.argv[i], "withcode")) {
      with_code = true;
      continue;
    }
    if (!have_pattern && EqualsIgnoreCase(ctx.argv[i], "libraryname")) {
      if (i + 1 >= ctx.argc()) {
        ctx.Error("ERR library name argument was not given");
        return;
      }
      pattern = ctx.argv[++i];
      have_pattern = true;
      continue;
    }
    ctx.Error("ERR Unknown argument " + std::string(ctx.argv[i]));
    return;
  }
  std::vector<FunctionLibrary> libs = ctx.server->functions().Snapshot();
  if (have_pattern) {
    std::erase_if(libs, [&](const FunctionLibrary& l) { return !GlobMatch(pattern, l.name, true); });
  }
  ctx.w->ArrayHeader(libs.size());
  for (const FunctionLibrary& lib : libs) {
    ctx.w->MapHeader(with_code ? 4 : 3);
    ctx.w->Bulk("library_name");
    ctx.w->Bulk(lib.name);
    ctx.w->Bulk("engine");
    ctx.w->Bulk("LUA");
    ctx.w->Bulk("functions");
    ctx.w->ArrayHeader(lib.functions.size());
    for (const FunctionInfo& f : lib.functions) {
      ctx.w->MapHeader(3);
      ctx.w->Bulk("name");
      ctx.w->Bulk(f.name);
      ctx.w->Bulk("description");
      if (f.description) {
        ctx.w->Bulk(*f.description);
      } else {
        ctx.w->Null();
      }
      ctx.w->Bulk("flags");
      ReplyFlags(ctx, f.flags);
    }
    if (with_code) {
      ctx.w->Bulk("library_code");
      ctx.w->Bulk(lib.code);
    }
  }
}

void FunctionDump(CommandContext& ctx) {
  std::string payload;
  for (const FunctionLibrary& lib : ctx.server->functions().Snapshot()) {
    payload.push_back(static_cast<char>(kRdbOpFunction2));
    AppendRdbString(&payload, lib.code);
  }
  AppendRdbFooter(&payload);
  ctx.w->Bulk(payload);
}

void FunctionRestore(CommandContext& ctx) {
  using Policy = FunctionLibraries::RestorePolicy;
  Policy policy = Policy::kAppend;
  if (ctx.argc() == 4) {
    if (EqualsIgnoreCase(ctx.argv[3], "append")) {
      policy = Policy::kAppend;
    } else if (EqualsIgnoreCase(ctx.argv[3], "replace")) {
      policy = Policy::kReplace;
    } else if (EqualsIgnoreCase(ctx.argv[3], "flush")) {
      policy = Policy::kFlush;
    } else {
      ctx.Error("ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.");
      return;
    }
  }
  if (OverMemory(ctx)) return;
  std::string_view body;
  if (!StripRdbFooter(ctx.argv[2], &body)) {
    ctx.Error("ERR DUMP payload version or checksum are wrong");
    return;
  }
  std::vector<FunctionLibrary> libs;
  RdbReader in(body);
  while (!in.done()) {
    uint8_t type;
    if (!in.ReadByte(&type)) {
      ctx.Error("ERR can not read data type");
      return;
    }
    if (type == kRdbOpFunctionPreGa) {
      ctx.Error("ERR Pre-GA function format not supported");
      return;
    }
    if (type != kRdbOpFunction2) {
      ctx.Error("ERR given type is not a function");
      return;
    }
    std::string code;
    if (!in.ReadString(&code)) {
      ctx.Error("ERR failed loading the given functions payload");
      return;
    }
    FunctionLibrary lib;
    std::string err;
    if (!LoadLibrary(ctx, code, &lib, &err)) {
      ctx.Error(err);
      return;
    }
    libs.push_back(std::move(lib));
  }
  std::string err;
  if (!ctx.server->functions().Restore(std::move(libs), policy, &err)) {
    ctx.Error("ERR " + err);
    return;
  }
  ctx.w->Ok();
}

void FunctionStats(CommandContext& ctx) {
  FunctionLibraries& libs = ctx.server->functions();
  ctx.w->MapHeader(2);
  ctx.w->Bulk("running_script");
  // Redis shows the running function; here another client can only ask
  // once it is busy (past busy-reply-threshold): before, it holds its
  // worker, or runs on another worker for less than the threshold.
  std::string name;
  std::vector<std::string> command;
  int64_t start_ns = 0;
  if (ctx.server->busy_scripts().RunningFunction(&name, &command, &start_ns)) {
    ctx.w->MapHeader(3);
    ctx.w->Bulk("name");
    ctx.w->Bulk(name);
    ctx.w->Bulk("command");
    ctx.w->ArrayHeader(command.size());
    for (const std::string& a : command) ctx.w->Bulk(a);
    ctx.w->Bulk("duration_ms");
    ctx.w->Integer((ctx.engine->clock()->MonoNanos() - start_ns) / 1000000);
  } else {
    ctx.w->Null();
  }
  ctx.w->Bulk("engines");
  ctx.w->MapHeader(1);
  ctx.w->Bulk("LUA");
  ctx.w->MapHeader(2);
  ctx.w->Bulk("libraries_count");
  ctx.w->Integer(static_cast<int64_t>(libs.library_count()));
  ctx.w->Bulk("functions_count");
  ctx.w->Integer(static_cast<int64_t>(libs.function_count()));
}

void FunctionHelp(CommandContext& ctx) {
  static constexpr std::string_view kLines[] = {
      "FUNCTION <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
      "LOAD [REPLACE] <FUNCTION CODE>",
      "    Create a new library with the given library name and code.",
      "DELETE <LIBRARY NAME>",
      "    Delete the given library.",
      "LIST [LIBRARYNAME PATTERN] [WITHCODE]",
      "    Return general information on all the libraries:",
      "    * Library name",
      "    * The engine used to run the Library",
      "    * Functions list",
      "    * Library code (if WITHCODE is given)",
      "    It also possible to get only function that matches a pattern using LIBRARYNAME "
      "argument.",
      "STATS",
      "    Return information about the current function running:",
      "    * Function name",
      "    * Command used to run the function",
      "    * Duration in MS that the function is running",
      "    If no function is running, return nil",
      "    In addition, returns a list of available engines.",
      "KILL",
      "    Kill the current running function.",
      "FLUSH [ASYNC|SYNC]",
      "    Delete all the libraries.",
      "    When called without the optional mode argument, the behavior is determined by the",
      "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
      "    * ASYNC: Asynchronously flush the libraries.",
      "    * SYNC: Synchronously flush the libraries.",
      "DUMP",
      "    Return a serialized payload representing the current libraries, can be restored using "
      "FUNCTION RESTORE command",
      "RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
      "    Restore the libraries represented by the given payload, it is possible to give a "
      "restore policy to",
      "    control how to handle existing libraries (default APPEND):",
      "    * FLUSH: delete all existing libraries.",
      "    * APPEND: appends the restored libraries to the existing libraries. On collision, "
      "abort.",
      "    * REPLACE: appends the restored libraries to the existing libraries, On collision, "
      "replace the old",
      "      libraries with the new libraries (notice that even on this option there is a chance "
      "of failure",
      "      in case of functions name collision with another library).",
      "HELP",
      "    Prints this help."};
  WriteHelp(ctx, kLines);
}

void CmdFunction(CommandContext& ctx) {
  const std::string sub = ToLower(ctx.argv[1]);
  const size_t argc = ctx.argc();
  FunctionLibraries& libs = ctx.server->functions();
  if (sub == "load" && argc >= 3) {
    FunctionLoad(ctx);
  } else if (sub == "list") {
    FunctionList(ctx);
  } else if (sub == "delete" && argc == 3) {
    if (!libs.Delete(ctx.argv[2])) {
      ctx.Error("ERR Library not found");
      return;
    }
    ctx.w->Ok();
  } else if (sub == "flush" && argc <= 3) {
    if (argc == 3 && !EqualsIgnoreCase(ctx.argv[2], "sync") &&
        !EqualsIgnoreCase(ctx.argv[2], "async")) {
      ctx.Error("ERR FUNCTION FLUSH only supports SYNC|ASYNC option");
      return;
    }
    libs.Flush();
    ctx.w->Ok();
  } else if (sub == "dump" && argc == 2) {
    FunctionDump(ctx);
  } else if (sub == "restore" && (argc == 3 || argc == 4)) {
    FunctionRestore(ctx);
  } else if (sub == "stats" && argc == 2) {
    FunctionStats(ctx);
  } else if (sub == "kill" && argc == 2) {
    KillBusyScript(ctx, /*is_eval=*/false);
  } else if (sub == "help" && argc == 2) {
    FunctionHelp(ctx);
  } else {
    SubcommandSyntaxError(ctx);
  }
}

}  // namespace

void RegisterFunctionCommands(std::vector<CommandSpec>* t) {
  const CommandAdder add{t, "scripting"};
  const uint32_t f = kCmdStale | kCmdMovableKeys;
  add("fcall", -3, f, 0, 0, CmdFcall, "Invokes a function.", "7.0.0", NumKeysAt2);
  add("fcall_ro", -3, f | kCmdReadonly, 0, 0, CmdFcallRo, "Invokes a read-only function.",
      "7.0.0", NumKeysAt2);
  add("function", -2, 0, CmdFunction, "A container for function commands.", "7.0.0");
}

}  // namespace trove::resp
