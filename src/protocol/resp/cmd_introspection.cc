// Introspection: COMMAND, OBJECT, MEMORY, DEBUG.
// Runs on the connection's worker.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/str_append.h"
#include "net/worker.h"
#include "protocol/resp/acl_categories.h"
#include "protocol/resp/collections.h"
#include "protocol/resp/command_table.h"
#include "protocol/resp/keyspace.h"
#include "protocol/resp/keyspace_walk.h"
#include "protocol/resp/resp_parser.h"
#include "protocol/resp/resp_server.h"
#include "protocol/resp/server_commands.h"
#include "protocol/resp/session.h"

namespace trove::resp {
namespace {

using engine::ItemRef;

// --- COMMAND ---

void WriteFlags(CommandContext& ctx, const CommandSpec& s) {
  std::vector<const char*> f;
  if (s.flags & kCmdWrite) f.push_back("write");
  if (s.flags & kCmdReadonly) f.push_back("readonly");
  if (s.flags & kCmdDenyOom) f.push_back("denyoom");
  if (s.flags & kCmdAdmin) f.push_back("admin");
  if (s.flags & kCmdNoAuth) f.push_back("no_auth");
  if (s.flags & kCmdLoading) f.push_back("loading");
  if (s.flags & kCmdStale) f.push_back("stale");
  if (s.flags & kCmdFast) f.push_back("fast");
  if (s.flags & kCmdNoMulti) f.push_back("no_multi");
  if (s.keys != nullptr) f.push_back("movablekeys");
  ctx.w->SetHeader(f.size());
  for (const char* x : f) ctx.w->Simple(x);
}

void WriteCommandInfo(CommandContext& ctx, const CommandSpec& s) {
  ctx.w->ArrayHeader(10);
  ctx.w->Bulk(s.name);
  ctx.w->Integer(s.arity);
  WriteFlags(ctx, s);
  ctx.w->Integer(s.first_key);
  ctx.w->Integer(s.last_key);
  ctx.w->Integer(s.step);
  const uint32_t cats = acl::CommandCategories::Get().of(static_cast<size_t>(s.id));
  ctx.w->SetHeader(static_cast<size_t>(__builtin_popcount(cats)));
  for (size_t i = 0; i < acl::kCategoryCount; ++i)
    if (cats & (1u << i)) ctx.w->Simple(std::string("@") + std::string(acl::kCategoryNames[i]));
  ctx.w->SetHeader(0);
  ctx.w->ArrayHeader(0);
  ctx.w->ArrayHeader(0);
}

void CmdCommand(CommandContext& ctx) {
  const CommandTable& t = CommandTable::Get();
  if (ctx.argc() == 1) {
    ctx.w->ArrayHeader(t.size());
    for (const auto& s : t.all()) WriteCommandInfo(ctx, s);
    return;
  }
  std::string sub = ToLower(ctx.argv[1]);
  if (sub == "count") {
    if (ctx.argc() != 2) {
      SubArity(ctx);
      return;
    }
    ctx.w->Integer(static_cast<int64_t>(t.size()));
  } else if (sub == "info") {
    if (ctx.argc() == 2) {
      ctx.w->ArrayHeader(t.size());
      for (const auto& s : t.all()) WriteCommandInfo(ctx, s);
      return;
    }
    ctx.w->ArrayHeader(ctx.argc() - 2);
    for (size_t i = 2; i < ctx.argc(); ++i) {
      const CommandSpec* s = t.Find(ctx.argv[i]);
      if (s == nullptr)
        ctx.w->Null();
      else
        WriteCommandInfo(ctx, *s);
    }
  } else if (sub == "docs") {
    std::vector<const CommandSpec*> list;
    if (ctx.argc() == 2) {
      for (const auto& s : t.all()) list.push_back(&s);
    } else {
      for (size_t i = 2; i < ctx.argc(); ++i) {
        if (const CommandSpec* s = t.Find(ctx.argv[i])) list.push_back(s);
      }
    }
    ctx.w->MapHeader(list.size());
    for (const CommandSpec* s : list) {
      ctx.w->Bulk(s->name);
      ctx.w->MapHeader(3);
      ctx.w->Bulk("summary");
      ctx.w->Bulk(s->summary);
      ctx.w->Bulk("since");
      ctx.w->Bulk(s->since);
      ctx.w->Bulk("group");
      ctx.w->Bulk(s->group);
    }
  } else if (sub == "list") {
    std::string_view pattern;
    bool has = false;
    if (ctx.argc() == 5 && EqualsIgnoreCase(ctx.argv[2], "filterby") &&
        EqualsIgnoreCase(ctx.argv[3], "pattern")) {
      pattern = ctx.argv[4];
      has = true;
    } else if (ctx.argc() != 2) {
      ctx.SyntaxError();
      return;
    }
    std::vector<const char*> names;
    for (const auto& s : t.all())
      if (!has || GlobMatch(pattern, s.name, true)) names.push_back(s.name);
    ctx.w->ArrayHeader(names.size());
    for (const char* n : names) ctx.w->Bulk(n);
  } else if (sub == "getkeys") {
    if (ctx.argc() < 4) {
      SubArity(ctx);
      return;
    }
    const CommandSpec* s = t.Find(ctx.argv[2]);
    if (s == nullptr) {
      ctx.Error("ERR Invalid command specified");
      return;
    }
    auto args = ctx.argv.subspan(2);
    int argc = static_cast<int>(args.size());
    if ((s->arity > 0 && argc != s->arity) || argc < -s->arity) {
      ctx.Error("ERR Invalid number of arguments specified for command");
      return;
    }
    std::vector<size_t> idx;
    CommandTable::KeyIndexes(*s, args, &idx);
    if (idx.empty()) {
      ctx.Error("ERR The command has no key arguments");
      return;
    }
    ctx.w->ArrayHeader(idx.size());
    for (size_t i : idx) ctx.w->Bulk(args[i]);
  } else {
    UnknownSubcommand(ctx);
  }
}

// --- OBJECT / MEMORY / DEBUG ---

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
    ctx.w->ArrayHeader(std::size(lines));
    for (auto l : lines) ctx.w->Simple(l);
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
    ctx.w->Integer(0);
  } else {
    ctx.w->Integer(1);
  }
}

int64_t MemoryOf(const ItemRef& it) {
  int64_t base = static_cast<int64_t>(it.key().size()) + 48;
  if (it.is_heap()) return base + static_cast<int64_t>(it.heap()->MemoryUsage());
  return base + static_cast<int64_t>(it.value_length());
}

void CmdMemory(CommandContext& ctx) {
  std::string sub = ToLower(ctx.argv[1]);
  if (sub == "usage") {
    if (ctx.argc() < 3) {
      SubArity(ctx);
      return;
    }
    for (size_t i = 3; i < ctx.argc(); ++i) {
      int64_t n;
      if (EqualsIgnoreCase(ctx.argv[i], "samples") && i + 1 < ctx.argc()) {
        if (!ArgInt(ctx, ctx.argv[++i], &n)) return;
      } else {
        ctx.SyntaxError();
        return;
      }
    }
    std::string key = ctx.Key(2);
    engine::KeyLockSet lock(ctx.engine, key);
    ItemRef it = ctx.engine->GetLocked(key, ctx.ts, false);
    if (!it)
      ctx.w->Null();
    else
      ctx.w->Integer(MemoryOf(it));
  } else if (sub == "help") {
    const std::string_view lines[] = {
        "MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "USAGE <key> [SAMPLES <count>]",
        "    Return memory in bytes used by <key> and its value. Nested values are",
        "    sampled up to <count> times (default: 5, 0 means sample all).",
        "HELP",
        "    Print this help."};
    ctx.w->ArrayHeader(std::size(lines));
    for (auto l : lines) ctx.w->Simple(l);
  } else {
    UnknownSubcommand(ctx);
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
    char buf[256];
    std::snprintf(buf, sizeof buf,
                  "Value at:%p refcount:1 encoding:%s serializedlength:%lld lru:0 "
                  "lru_seconds_idle:0",
                  static_cast<const void*>(it.raw()), Encoding(it).c_str(),
                  static_cast<long long>(MemoryOf(it)));
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
    ctx.w->ArrayHeader(std::size(lines));
    for (auto l : lines) ctx.w->Simple(l);
  } else {
    std::string m = "ERR unknown subcommand or wrong number of arguments for '";
    m.append(ctx.argv[1]);
    m += "'. Try DEBUG HELP.";
    ctx.Error(m);
  }
}

}  // namespace

void RegisterIntrospectionCommands(std::vector<CommandSpec>* t) {
  auto add = [t](const char* n, int ar, uint32_t f, CommandFn fn, const char* group,
                 const char* sum, const char* since) {
    t->push_back({n, ar, f, 0, 0, 0, fn, nullptr, group, sum, since});
  };
  add("command", -1, kCmdLoading | kCmdStale, CmdCommand, "server",
      "Returns detailed information about all commands.", "2.8.13");
  add("object", -2, kCmdReadonly | kCmdGlobal, CmdObject, "generic",
      "A container for object introspection commands.", "2.2.3");
  add("memory", -2, kCmdReadonly | kCmdGlobal, CmdMemory, "server",
      "A container for memory diagnostics commands.", "4.0.0");
  add("debug", -2, kCmdAdmin | kCmdGlobal, CmdDebug, "server",
      "A container for debugging commands.", "1.0.0");
}

}  // namespace trove::resp
