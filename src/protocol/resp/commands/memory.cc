// MEMORY: USAGE, STATS, DOCTOR, MALLOC-STATS, PURGE and HELP, over the
// figures INFO memory reports too (memory_figures.h). Runs on the
// connection's worker.
#include <malloc.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string>
#include <vector>

#include "common/str_append.h"
#include "protocol/resp/core/command_table.h"
#include "protocol/resp/types/keyspace.h"
#include "protocol/resp/types/memory_figures.h"
#include "protocol/resp/core/resp_parser.h"
#include "protocol/resp/core/resp_server.h"
#include "protocol/resp/commands/server_commands.h"
#include "protocol/resp/core/client.h"

namespace trove::resp {
namespace {

using engine::ItemRef;

// --- MEMORY ---

int64_t MemoryOf(const ItemRef& it) {
  int64_t base = static_cast<int64_t>(it.key().size()) + 48;
  if (it.is_heap()) return base + static_cast<int64_t>(it.heap()->MemoryUsage());
  return base + static_cast<int64_t>(it.value_length());
}

void MemoryUsage(CommandContext& ctx) {
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
}

// Redis's fields, Trove's figures: total.allocated is INFO's used_memory
// and the dataset the items' bytes, so overhead.total is the slab memory
// not holding them. No high-water mark is kept: the peak is the current
// figure. Replication, cluster, AOF and scripting do not exist here (0);
// connections' buffers are not totalled (clients.normal 0). Trove has one
// hash table for every database, so no db.<n> overheads are listed. The
// allocator's figures are glibc's (ReadAllocator).
void MemoryStats(CommandContext& ctx) {
  const MemoryFigures m = ReadMemory(*ctx.engine);
  const AllocatorFigures a = ReadAllocator();
  const int64_t net = m.used - m.startup;
  auto num = [&ctx](std::string_view k, int64_t v) {
    ctx.w->Bulk(k);
    ctx.w->Integer(v);
  };
  auto ratio = [&ctx](std::string_view k, double v) {
    ctx.w->Bulk(k);
    ctx.w->Double(v);
  };
  ctx.w->MapHeader(27);
  num("peak.allocated", m.used);
  num("total.allocated", m.used);
  num("startup.allocated", m.startup);
  num("replication.backlog", 0);
  num("clients.slaves", 0);
  num("clients.normal", 0);
  num("cluster.links", 0);
  num("aof.buffer", 0);
  num("lua.caches", 0);
  num("functions.caches", 0);
  num("overhead.total", m.used - m.dataset);
  num("keys.count", m.keys);
  num("keys.bytes-per-key", m.keys > 0 ? net / m.keys : 0);
  num("dataset.bytes", m.dataset);
  ratio("dataset.percentage", Ratio(m.dataset * 100, net));
  ratio("peak.percentage", m.used > 0 ? 100.0 : 0.0);
  num("allocator.allocated", a.allocated);
  num("allocator.active", a.active);
  num("allocator.resident", a.resident);
  ratio("allocator-fragmentation.ratio", Ratio(a.active, a.allocated));
  num("allocator-fragmentation.bytes", a.active - a.allocated);
  ratio("allocator-rss.ratio", Ratio(a.resident, a.active));
  num("allocator-rss.bytes", a.resident - a.active);
  // The allocator's resident figure is the process's RSS itself.
  ratio("rss-overhead.ratio", 1.0);
  num("rss-overhead.bytes", 0);
  ratio("fragmentation", Ratio(a.resident, m.used));
  num("fragmentation.bytes", a.resident - m.used);
}

// Redis's texts around Trove's one check: memory over a maxmemory that was
// lowered below it at run time.
void MemoryDoctor(CommandContext& ctx) {
  const MemoryFigures m = ReadMemory(*ctx.engine);
  if (m.used < (int64_t{5} << 20)) {
    ctx.w->Verbatim(
        "Hi Sam, this instance is empty or is using very little memory, my issues detector "
        "can't be used in these conditions. Please, leave for your mission on Earth and fill it "
        "with some data. The new Sam and I will be back to our programming as soon as I "
        "finished rebooting.");
    return;
  }
  if (!ctx.engine->over_mem_limit()) {
    ctx.w->Verbatim(
        "Hi Sam, I can't find any memory issue in your instance. I can only account for what "
        "occurs on this base.");
    return;
  }
  ctx.w->Verbatim(
      "Sam, I detected a few issues in this Redis instance memory implants:\n\n"
      " * Memory over maxmemory: maxmemory was set below the memory the server already holds. "
      "Commands that may add data are refused until enough keys expire or are deleted, or "
      "maxmemory is raised.\n\n"
      "I'm here to keep you safe, Sam. I want to help you.\n");
}

// glibc's own report (malloc_info's XML), where Redis prints jemalloc's.
void MemoryMallocStats(CommandContext& ctx) {
  char* buf = nullptr;
  size_t len = 0;
  FILE* f = ::open_memstream(&buf, &len);
  if (f == nullptr) {
    ctx.w->Verbatim("Stats not supported for the current allocator");
    return;
  }
  ::malloc_info(0, f);
  std::fclose(f);
  ctx.w->Verbatim(std::string_view(buf, len));
  std::free(buf);
}

void CmdMemory(CommandContext& ctx) {
  const std::string sub = ToLower(ctx.argv[1]);
  if (sub == "usage") {
    MemoryUsage(ctx);
    return;
  }
  if (sub != "stats" && sub != "doctor" && sub != "malloc-stats" && sub != "purge" &&
      sub != "help") {
    UnknownSubcommand(ctx);
    return;
  }
  if (ctx.argc() != 2) {
    SubArity(ctx);
    return;
  }
  if (sub == "stats") {
    MemoryStats(ctx);
  } else if (sub == "doctor") {
    MemoryDoctor(ctx);
  } else if (sub == "malloc-stats") {
    MemoryMallocStats(ctx);
  } else if (sub == "purge") {
    // glibc's malloc_trim gives free memory back to the system, as
    // jemalloc's purge does for Redis.
    ::malloc_trim(0);
    ctx.w->Ok();
  } else {
    const std::string_view lines[] = {
        "MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "DOCTOR",
        "    Return memory problems reports.",
        "MALLOC-STATS",
        "    Return internal statistics report from the memory allocator.",
        "PURGE",
        "    Attempt to purge dirty pages for reclamation by the allocator.",
        "STATS",
        "    Return information about the memory usage of the server.",
        "USAGE <key> [SAMPLES <count>]",
        "    Return memory in bytes used by <key> and its value. Nested values are",
        "    sampled up to <count> times (default: 5, 0 means sample all).",
        "HELP",
        "    Prints this help."};
    WriteHelp(ctx, lines);
  }
}


}  // namespace

void RegisterMemoryCommands(std::vector<CommandSpec>* t) {
  t->push_back({"memory", -2, kCmdReadonly | kCmdGlobal, 0, 0, 0, CmdMemory, nullptr, "server",
                "A container for memory diagnostics commands.", "4.0.0"});
}

}  // namespace trove::resp
