// Introspection of keys and the server's internals: OBJECT and DEBUG. The
// command table's own (COMMAND) is commands/command.cc, MEMORY commands/memory.cc.
// Runs on the connection's worker.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "common/glob.h"
#include "common/str_append.h"
#include "protocol/resp/services/acl_categories.h"
#include "protocol/resp/types/collections.h"
#include "protocol/resp/core/command_table.h"
#include "protocol/resp/types/keyspace.h"
#include "protocol/resp/services/latency_histogram.h"
#include "protocol/resp/core/resp_parser.h"
#include "protocol/resp/core/resp_server.h"
#include "protocol/resp/commands/server_commands.h"
#include "protocol/resp/core/client.h"

namespace trove::resp {
namespace {

using engine::ItemRef;


// --- OBJECT / DEBUG ---

std::string Encoding(const ItemRef& it) {
  if (it.type() != engine::ValueType::kString) return CollectionEncoding(it);
  std::string v;
  it.CopyValue(&v);
  int64_t n;
  if (v.size() <= 20 && ParseStrictInt64(v, &n)) return "int";
  return v.size() <= 44 ? "embstr" : "raw";
}

void CmdObject(CommandContext& ctx) {
  std::string sub = ToLower(ctx.argv[1]);
  if (sub == "help") {
    const std::string_view lines[] = {
        "OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "ENCODING <key>",
        "    Return the kind of internal representation used in order to store the value",
        "    associated with a <key>.",
        "FREQ <key>",
        "    Return the access frequency index of the <key>. The returned integer is",
        "    proportional to the logarithm of the recent access frequency of the key.",
        "IDLETIME <key>",
        "    Return the idle time of the <key>, that is the approximated number of",
        "    seconds elapsed since the last access to the key.",
        "REFCOUNT <key>",
        "    Return the number of references of the value associated with the specified",
        "    <key>.",
        "HELP",
        "    Print this help."};
    WriteHelp(ctx, lines);
    return;
  }
  if (sub != "encoding" && sub != "freq" && sub != "idletime" && sub != "refcount") {
    UnknownSubcommand(ctx);
    return;
  }
  if (ctx.argc() != 3) {
    SubArity(ctx);
    return;
  }
  std::string key = ctx.Key(2);
  engine::KeyLockSet lock(ctx.engine, key);
  ItemRef it = ctx.engine->GetLocked(key, ctx.ts, false);
  CountKeyspace(ctx, static_cast<bool>(it));
  if (!it) {
    ctx.w->Null();
    return;
  }
  if (sub == "encoding") {
    ctx.w->Bulk(Encoding(it));
  } else if (sub == "freq") {
    ctx.Error(
        "ERR An LFU maxmemory policy is not selected, access frequency not tracked. "
        "Please note that when switching between policies at runtime LRU and LFU data "
        "will take some time to adjust.");
  } else if (sub == "idletime") {
    // The item's last-access time, which every bumping read and every write
    // renews (to the second), and RESTORE ... IDLETIME sets.
    ctx.w->Integer(ctx.engine->IdleSeconds(it));
  } else {
    ctx.w->Integer(1);
  }
}

void CmdDebug(CommandContext& ctx) {
  std::string sub = ToLower(ctx.argv[1]);
  if (sub == "sleep" && ctx.argc() == 3) {
    double secs;
    if (!ParseDouble(ctx.argv[2], &secs) || secs < 0) secs = 0;
    std::this_thread::sleep_for(std::chrono::microseconds(static_cast<int64_t>(secs * 1e6)));
    ctx.w->Ok();
  } else if (sub == "set-active-expire" && ctx.argc() == 3) {
    ctx.server->active_expire.store(ctx.argv[2] != "0", std::memory_order_relaxed);
    ctx.w->Ok();
  } else if (sub == "object" && ctx.argc() == 3) {
    std::string key = ctx.Key(2);
    engine::KeyLockSet lock(ctx.engine, key);
    ItemRef it = ctx.engine->GetLocked(key, ctx.ts, false);
    if (!it) {
      ctx.Error("ERR no such key");
      return;
    }
    // Redis's serializedlength is the value's RDB size; its bytes stand for it.
    const size_t value_bytes = it.is_heap() ? it.heap()->MemoryUsage() : it.value_length();
    char buf[256];
    std::snprintf(buf, sizeof buf,
                  "Value at:%p refcount:1 encoding:%s serializedlength:%zu lru:0 "
                  "lru_seconds_idle:%lld",
                  static_cast<const void*>(it.raw()), Encoding(it).c_str(), value_bytes,
                  static_cast<long long>(ctx.engine->IdleSeconds(it)));
    ctx.w->Simple(buf);
  } else if (sub == "help") {
    const std::string_view lines[] = {
        "DEBUG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "OBJECT <key>",
        "    Show low level info about the <key> and associated value.",
        "SET-ACTIVE-EXPIRE <0|1>",
        "    Setting it to 0 disables expiring keys in background.",
        "SLEEP <seconds>",
        "    Stop the server for <seconds>. Decimals allowed.",
        "HELP",
        "    Print this help."};
    WriteHelp(ctx, lines);
  } else {
    SubcommandSyntaxError(ctx);
  }
}

}  // namespace

void RegisterIntrospectionCommands(std::vector<CommandSpec>* t) {
  const CommandAdder add{t};
  add("object", -2, kCmdReadonly | kCmdGlobal, CmdObject, "generic",
      "A container for object introspection commands.", "2.2.3");
  add("debug", -2, kCmdAdmin | kCmdGlobal, CmdDebug, "server",
      "A container for debugging commands.", "1.0.0");
}

}  // namespace trove::resp
