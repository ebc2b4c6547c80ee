// COMMAND: INFO, DOCS, LIST, COUNT and HELP over the command table and its
// subcommands; GETKEYS[ANDFLAGS] and the key flags are command_keys.cc.
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
#include "protocol/resp/commands/command_internal.h"
#include "protocol/resp/commands/server_commands.h"
#include "protocol/resp/core/client.h"
#include "protocol/resp/core/command_table.h"
#include "protocol/resp/core/resp_parser.h"
#include "protocol/resp/core/resp_server.h"
#include "protocol/resp/services/acl_categories.h"
#include "protocol/resp/services/latency_histogram.h"
#include "protocol/resp/types/collections.h"
#include "protocol/resp/types/keyspace.h"

namespace trove::resp {
namespace {

using engine::ItemRef;

// Redis's arity of the subcommands Trove implements (HistogramSlots'
// containers), for COMMAND INFO and GETKEYS.
struct SubArityOf {
  std::string_view name;
  int arity;
};
// clang-format off
constexpr SubArityOf kSubArity[] = {
    {"acl|cat", -2}, {"acl|deluser", -3}, {"acl|dryrun", -4}, {"acl|genpass", -2},
    {"acl|getuser", 3}, {"acl|help", 2}, {"acl|list", 2}, {"acl|load", 2}, {"acl|log", -2},
    {"acl|save", 2}, {"acl|setuser", -3}, {"acl|users", 2}, {"acl|whoami", 2},
    {"client|caching", 3}, {"client|getname", 2}, {"client|getredir", 2}, {"client|help", 2},
    {"client|id", 2}, {"client|info", 2}, {"client|kill", -3}, {"client|list", -2},
    {"client|no-evict", 3}, {"client|no-touch", 3}, {"client|pause", -3}, {"client|reply", 3},
    {"client|setinfo", 4}, {"client|setname", 3}, {"client|tracking", -3},
    {"client|trackinginfo", 2}, {"client|unblock", -3}, {"client|unpause", 2},
    {"command|count", 2}, {"command|docs", -2}, {"command|getkeys", -3},
    {"command|getkeysandflags", -3}, {"command|help", 2}, {"command|info", -2},
    {"command|list", -2},
    {"config|get", -3}, {"config|help", 2}, {"config|resetstat", 2}, {"config|rewrite", 2},
    {"config|set", -4},
    {"latency|doctor", 2}, {"latency|graph", 3}, {"latency|help", 2}, {"latency|histogram", -2},
    {"latency|history", 3}, {"latency|latest", 2}, {"latency|reset", -2},
    {"memory|doctor", 2}, {"memory|help", 2}, {"memory|malloc-stats", 2}, {"memory|purge", 2},
    {"memory|stats", 2}, {"memory|usage", -3},
    {"object|encoding", 3}, {"object|freq", 3}, {"object|help", 2}, {"object|idletime", 3},
    {"object|refcount", 3},
    {"pubsub|channels", -2}, {"pubsub|help", 2}, {"pubsub|numpat", 2}, {"pubsub|numsub", -2},
    {"pubsub|shardchannels", -2}, {"pubsub|shardnumsub", -2},
    {"slowlog|get", -2}, {"slowlog|help", 2}, {"slowlog|len", 2}, {"slowlog|reset", 2}};
// clang-format on

}  // namespace

CmdView ViewOf(const CommandSpec& s) {
  CmdView v;
  v.name = s.name;
  v.arity = s.arity;
  v.flags = s.flags;
  v.first_key = s.first_key;
  v.last_key = s.last_key;
  v.step = s.step;
  v.slot = static_cast<size_t>(s.id);
  v.spec = &s;
  return v;
}

// A subcommand's flags follow from its categories as in Redis's table:
// the @admin ones are admin, loading and stale; the ones that read a key
// (@read: OBJECT's and MEMORY USAGE, whose key is argv[2]) readonly;
// MEMORY's reports none; the others loading and stale.
CmdView ViewOfSub(size_t slot) {
  CmdView v;
  v.name = HistogramSlots::Get().name(slot);
  v.slot = slot;
  v.arity = -2;  // one missing from kSubArity: at least its own name
  for (const SubArityOf& s : kSubArity)
    if (s.name == v.name) v.arity = s.arity;
  const uint32_t cats = acl::CommandCategories::Get().of(slot);
  if (cats & acl::kCatAdmin) {
    v.flags = kCmdAdmin | kCmdLoading | kCmdStale;
  } else if (cats & acl::kCatRead) {
    v.flags = kCmdReadonly;
    v.first_key = v.last_key = 2;
    v.step = 1;
  } else if (v.name.substr(0, 7) != "memory|" || v.name == "memory|help") {
    v.flags = kCmdLoading | kCmdStale;
  }
  return v;
}

namespace {

// A command, or a subcommand as "container|sub" (case-insensitive).
bool FindCommand(std::string_view name, CmdView* out) {
  if (const CommandSpec* s = CommandTable::Get().Find(name)) {
    *out = ViewOf(*s);
    return true;
  }
  if (name.find('|') == std::string_view::npos) return false;
  const acl::CommandCategories& cc = acl::CommandCategories::Get();
  const int slot = cc.Find(name);
  if (slot < 0 || cc.parent(static_cast<size_t>(slot)) < 0) return false;  // memcache|get
  *out = ViewOfSub(static_cast<size_t>(slot));
  return true;
}

void WriteFlags(CommandContext& ctx, const CmdView& v) {
  const char* f[11];
  size_t n = 0;
  if (v.flags & kCmdWrite) f[n++] = "write";
  if (v.flags & kCmdReadonly) f[n++] = "readonly";
  if (v.flags & kCmdDenyOom) f[n++] = "denyoom";
  if (v.flags & kCmdAdmin) f[n++] = "admin";
  if (v.flags & kCmdNoAuth) f[n++] = "no_auth";
  if (v.flags & kCmdLoading) f[n++] = "loading";
  if (v.flags & kCmdStale) f[n++] = "stale";
  if (v.flags & kCmdFast) f[n++] = "fast";
  if (v.flags & kCmdNoMulti) f[n++] = "no_multi";
  if (v.spec != nullptr && v.spec->keys != nullptr) f[n++] = "movablekeys";
  ctx.w->SetHeader(n);
  for (size_t i = 0; i < n; ++i) ctx.w->Simple(f[i]);
}

// Redis 7's ten fields; a container's last field holds its subcommands'
// entries. Trove gives no tips and no key specs (docs/resp.md).
void WriteCommandInfo(CommandContext& ctx, const CmdView& v) {
  ctx.w->ArrayHeader(10);
  ctx.w->Bulk(v.name);
  ctx.w->Integer(v.arity);
  WriteFlags(ctx, v);
  ctx.w->Integer(v.first_key);
  ctx.w->Integer(v.last_key);
  ctx.w->Integer(v.step);
  const uint32_t cats = acl::CommandCategories::Get().of(v.slot);
  ctx.w->SetHeader(static_cast<size_t>(__builtin_popcount(cats)));
  char cat[24] = "@";
  for (size_t i = 0; i < acl::kCategoryCount; ++i) {
    if (!(cats & (1u << i))) continue;
    const std::string_view name = acl::kCategoryNames[i];
    name.copy(cat + 1, name.size());
    ctx.w->Simple(std::string_view(cat, name.size() + 1));
  }
  ctx.w->SetHeader(0);  // tips
  ctx.w->SetHeader(0);  // key specs
  const HistogramSlots& slots = HistogramSlots::Get();
  const bool container = v.spec != nullptr && slots.sub_begin(v.slot) >= 0;
  if (!container) {
    ctx.w->SetHeader(0);
    return;
  }
  const int begin = slots.sub_begin(v.slot), end = slots.sub_end(v.slot);
  ctx.w->SetHeader(static_cast<size_t>(end - begin));
  for (int j = begin; j < end; ++j) WriteCommandInfo(ctx, ViewOfSub(static_cast<size_t>(j)));
}

void WriteAllCommandInfo(CommandContext& ctx) {
  const CommandTable& t = CommandTable::Get();
  ctx.w->ArrayHeader(t.size());
  for (const auto& s : t.all()) WriteCommandInfo(ctx, ViewOf(s));
}

// COMMAND LIST [FILTERBY MODULE <name> | ACLCAT <category> | PATTERN <glob>]:
// every command, each followed by its subcommands, as Redis lists them. An
// unknown category matches nothing, and no command belongs to a module.
void ListCommands(CommandContext& ctx) {
  enum class Filter { kNone, kModule, kAclCat, kPattern } filter = Filter::kNone;
  std::string_view arg;
  if (ctx.argc() == 5 && EqualsIgnoreCase(ctx.argv[2], "filterby")) {
    if (EqualsIgnoreCase(ctx.argv[3], "module")) {
      filter = Filter::kModule;
    } else if (EqualsIgnoreCase(ctx.argv[3], "aclcat")) {
      filter = Filter::kAclCat;
    } else if (EqualsIgnoreCase(ctx.argv[3], "pattern")) {
      filter = Filter::kPattern;
    } else {
      ctx.SyntaxError();
      return;
    }
    arg = ctx.argv[4];
  } else if (ctx.argc() != 2) {
    ctx.SyntaxError();
    return;
  }
  const acl::CommandCategories& cc = acl::CommandCategories::Get();
  const uint32_t cat = filter == Filter::kAclCat ? acl::CategoryByName(arg) : 0;
  auto listed = [&](std::string_view name, size_t slot) {
    switch (filter) {
      case Filter::kNone:
        return true;
      case Filter::kModule:
        return false;
      case Filter::kAclCat:
        return (cc.of(slot) & cat) != 0;
      case Filter::kPattern:
        return GlobMatch(arg, name, true);
    }
    return false;
  };
  const HistogramSlots& slots = HistogramSlots::Get();
  std::vector<std::string_view> names;
  for (const CommandSpec& s : CommandTable::Get().all()) {
    const size_t id = static_cast<size_t>(s.id);
    if (listed(s.name, id)) names.emplace_back(s.name);
    for (int j = slots.sub_begin(id); j >= 0 && j < slots.sub_end(id); ++j) {
      const size_t slot = static_cast<size_t>(j);
      if (listed(slots.name(slot), slot)) names.emplace_back(slots.name(slot));
    }
  }
  ctx.w->ArrayHeader(names.size());
  for (std::string_view n : names) ctx.w->Bulk(n);
}

void WriteDocs(CommandContext& ctx, const CommandSpec& s) {
  ctx.w->Bulk(s.name);
  ctx.w->MapHeader(3);
  ctx.w->Bulk("summary");
  ctx.w->Bulk(s.summary);
  ctx.w->Bulk("since");
  ctx.w->Bulk(s.since);
  ctx.w->Bulk("group");
  ctx.w->Bulk(s.group);
}

void CmdCommand(CommandContext& ctx) {
  const CommandTable& t = CommandTable::Get();
  if (ctx.argc() == 1) {
    WriteAllCommandInfo(ctx);
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
      WriteAllCommandInfo(ctx);
      return;
    }
    ctx.w->ArrayHeader(ctx.argc() - 2);
    for (size_t i = 2; i < ctx.argc(); ++i) {
      CmdView v;
      if (FindCommand(ctx.argv[i], &v))
        WriteCommandInfo(ctx, v);
      else
        ctx.w->Null();
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
    for (const CommandSpec* s : list) WriteDocs(ctx, *s);
  } else if (sub == "list") {
    ListCommands(ctx);
  } else if (sub == "getkeys" || sub == "getkeysandflags") {
    GetKeys(ctx, sub == "getkeysandflags");
  } else if (sub == "help" && ctx.argc() == 2) {
    const std::string_view lines[] = {
        "COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "(no subcommand)",
        "    Return details about all Redis commands.",
        "COUNT",
        "    Return the total number of commands in this Redis server.",
        "LIST",
        "    Return a list of all commands in this Redis server.",
        "INFO [<command-name> ...]",
        "    Return details about multiple Redis commands.",
        "    If no command names are given, documentation details for all",
        "    commands are returned.",
        "DOCS [<command-name> ...]",
        "    Return documentation details about multiple Redis commands.",
        "    If no command names are given, documentation details for all",
        "    commands are returned.",
        "GETKEYS <full-command>",
        "    Return the keys from a full Redis command.",
        "GETKEYSANDFLAGS <full-command>",
        "    Return the keys and the access flags from a full Redis command.",
        "HELP",
        "    Prints this help."};
    WriteHelp(ctx, lines);
  } else if (sub == "help") {
    SubArity(ctx);
  } else {
    UnknownSubcommand(ctx);
  }
}

}  // namespace

void RegisterCommandCommands(std::vector<CommandSpec>* t) {
  t->push_back({"command", -1, kCmdLoading | kCmdStale, 0, 0, 0, CmdCommand, nullptr, "server",
                "Returns detailed information about all commands.", "2.8.13"});
}

}  // namespace trove::resp
