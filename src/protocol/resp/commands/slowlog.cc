// SLOWLOG and LATENCY: the slow log, the latency monitor's events and the
// per-command latency histograms, with Redis 7's replies. Runs on the
// connection's worker.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/resp/core/command_table.h"
#include "protocol/resp/services/latency_histogram.h"
#include "protocol/resp/core/resp_parser.h"
#include "protocol/resp/core/resp_server.h"
#include "protocol/resp/commands/server_commands.h"

namespace trove::resp {
namespace {

void Help(CommandContext& ctx, const char* cmd, std::span<const std::string_view> lines) {
  ctx.w->ArrayHeader(lines.size() + 3);
  std::string head = cmd;
  head += " <subcommand> [<arg> [value] [opt] ...]. Subcommands are:";
  ctx.w->Simple(head);
  for (std::string_view l : lines) ctx.w->Simple(l);
  ctx.w->Simple("HELP");
  ctx.w->Simple("    Prints this help.");
}

// --- SLOWLOG ---

void WriteEntry(CommandContext& ctx, const SlowLogEntry& e) {
  ctx.w->ArrayHeader(6);
  ctx.w->Integer(e.id);
  ctx.w->Integer(e.unix_time);
  ctx.w->Integer(e.usec);
  ctx.w->ArrayHeader(e.argv.size());
  for (const std::string& a : e.argv) ctx.w->Bulk(a);
  ctx.w->Bulk(e.addr);
  ctx.w->Bulk(e.name);
}

void CmdSlowlog(CommandContext& ctx) {
  const std::string sub = ToLower(ctx.argv[1]);
  SlowLog& log = ctx.server->slowlog();
  if (sub == "get") {
    if (ctx.argc() > 3) {
      // Redis's slowlog|get takes any count of arguments, then refuses.
      SubcommandSyntaxError(ctx);
      return;
    }
    int64_t count = 10;
    if (ctx.argc() == 3 && (!ParseStrictInt64(ctx.argv[2], &count) || count < -1)) {
      ctx.Error("ERR count should be greater than or equal to -1");
      return;
    }
    const std::vector<SlowLogEntry> entries =
        log.Newest(count < 0 ? SIZE_MAX : static_cast<size_t>(count));
    ctx.w->ArrayHeader(entries.size());
    for (const SlowLogEntry& e : entries) WriteEntry(ctx, e);
    return;
  }
  if (sub != "len" && sub != "reset" && sub != "help") {
    UnknownSubcommand(ctx);
    return;
  }
  if (ctx.argc() != 2) {
    SubArity(ctx);
    return;
  }
  if (sub == "len") {
    ctx.w->Integer(static_cast<int64_t>(log.Len()));
  } else if (sub == "reset") {
    log.Reset();
    ctx.w->Ok();
  } else {
    static constexpr std::string_view kLines[] = {
        "GET [<count>]",
        "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
        "    Entries are made of:",
        "    id, timestamp, time in microseconds, arguments array, client IP and port,",
        "    client name",
        "LEN",
        "    Return the length of the slowlog.",
        "RESET",
        "    Reset the slowlog.",
    };
    Help(ctx, "SLOWLOG", kLines);
  }
}

// --- LATENCY ---

// LATENCY HISTOGRAM [command ...]: every slot with calls, summed over the
// workers, as {name: {calls, histogram_usec: {bound: cumulative count}}}.
void LatencyHistogramReply(CommandContext& ctx) {
  const HistogramSlots& slots = ctx.server->histogram_slots();
  std::vector<int> want;
  if (ctx.argc() == 2) {
    slots.AllSlots(&want);
  } else {
    for (size_t i = 2; i < ctx.argc(); ++i) slots.SlotsNamed(ctx.argv[i], &want);
  }
  using Counts = std::array<uint64_t, kLatencyBuckets>;
  std::vector<Counts> sum(slots.size(), Counts{});
  ctx.server->ForEachWorkerStats([&](const WorkerStats& w) {
    for (size_t s = 0; s < w.latency.size() && s < sum.size(); ++s) {
      for (int b = 0; b < kLatencyBuckets; ++b)
        sum[s][static_cast<size_t>(b)] += w.latency[s].buckets[b].load(std::memory_order_relaxed);
    }
  });
  auto calls = [&](int s) {
    uint64_t n = 0;
    for (uint64_t c : sum[static_cast<size_t>(s)]) n += c;
    return n;
  };
  size_t with_data = 0;
  for (int s : want)
    if (calls(s) > 0) ++with_data;
  ctx.w->MapHeader(with_data);
  for (int s : want) {
    const uint64_t n = calls(s);
    if (n == 0) continue;
    const Counts& c = sum[static_cast<size_t>(s)];
    ctx.w->Bulk(slots.name(static_cast<size_t>(s)));
    ctx.w->MapHeader(2);
    ctx.w->Bulk("calls");
    ctx.w->Integer(static_cast<int64_t>(n));
    ctx.w->Bulk("histogram_usec");
    size_t used = 0;
    for (uint64_t x : c)
      if (x > 0) ++used;
    ctx.w->MapHeader(used);
    uint64_t cumulative = 0;
    for (int b = 0; b < kLatencyBuckets; ++b) {
      const uint64_t x = c[static_cast<size_t>(b)];
      if (x == 0) continue;
      cumulative += x;
      ctx.w->Integer(LatencyBucketUpperUsec(b));
      ctx.w->Integer(static_cast<int64_t>(cumulative));
    }
  }
}

void CmdLatency(CommandContext& ctx) {
  struct Sub {
    std::string_view name;
    int arity;  // Redis's latency|<sub> arity
  };
  static constexpr Sub kSubs[] = {{"doctor", 2},  {"graph", 3},  {"help", 2},  {"histogram", -2},
                                  {"history", 3}, {"latest", 2}, {"reset", -2}};
  const std::string sub = ToLower(ctx.argv[1]);
  const Sub* found = nullptr;
  for (const Sub& s : kSubs)
    if (s.name == sub) found = &s;
  if (found == nullptr) {
    UnknownSubcommand(ctx);
    return;
  }
  const int argc = static_cast<int>(ctx.argc());
  if ((found->arity > 0 && argc != found->arity) || argc < -found->arity) {
    SubArity(ctx);
    return;
  }
  LatencyMonitor& mon = ctx.server->latency_monitor();
  const int64_t now = ctx.engine->clock()->UnixSeconds();
  if (sub == "history") {
    std::vector<LatencySample> v;
    mon.History(ctx.argv[2], &v);
    ctx.w->ArrayHeader(v.size());
    for (const LatencySample& x : v) {
      ctx.w->ArrayHeader(2);
      ctx.w->Integer(x.unix_time);
      ctx.w->Integer(x.ms);
    }
  } else if (sub == "graph") {
    std::string g;
    if (!mon.Graph(ctx.argv[2], now, &g)) {
      std::string m = "ERR No samples available for event '";
      m.append(ctx.argv[2]);
      m += "'";
      ctx.Error(m);
      return;
    }
    ctx.w->Verbatim(g);
  } else if (sub == "latest") {
    const std::vector<LatencyLatest> v = mon.Latest();
    ctx.w->ArrayHeader(v.size());
    for (const LatencyLatest& x : v) {
      ctx.w->ArrayHeader(4);
      ctx.w->Bulk(x.event);
      ctx.w->Integer(x.unix_time);
      ctx.w->Integer(x.ms);
      ctx.w->Integer(x.max_ms);
    }
  } else if (sub == "doctor") {
    LatencyDoctorConfig cfg{ctx.server->slowlog_log_slower_than.load(std::memory_order_relaxed),
                            ctx.server->latency_monitor_threshold.load(std::memory_order_relaxed)};
    ctx.w->Verbatim(mon.Doctor(cfg, now));
  } else if (sub == "reset") {
    int n = 0;
    if (ctx.argc() == 2) {
      n = mon.ResetAll();
    } else {
      for (size_t i = 2; i < ctx.argc(); ++i) n += mon.Reset(ctx.argv[i]);
    }
    ctx.w->Integer(n);
  } else if (sub == "histogram") {
    LatencyHistogramReply(ctx);
  } else {
    static constexpr std::string_view kLines[] = {
        "DOCTOR",
        "    Return a human readable latency analysis report.",
        "GRAPH <event>",
        "    Return an ASCII latency graph for the <event> class.",
        "HISTORY <event>",
        "    Return time-latency samples for the <event> class.",
        "LATEST",
        "    Return the latest latency samples for all events.",
        "RESET [<event> ...]",
        "    Reset latency data of one or more <event> classes.",
        "    (default: reset all data for all event classes)",
        "HISTOGRAM [COMMAND ...]",
        "    Return a cumulative distribution of latencies in the format of a histogram for the "
        "specified command names.",
        "    If no commands are specified then all histograms are replied.",
    };
    Help(ctx, "LATENCY", kLines);
  }
}

}  // namespace

void RegisterSlowlogCommands(std::vector<CommandSpec>* t) {
  const CommandAdder add{t};
  add("slowlog", -2, kCmdAdmin | kCmdLoading | kCmdStale, CmdSlowlog, "server",
      "A container for slow log commands.", "2.2.12");
  add("latency", -2, kCmdAdmin | kCmdLoading | kCmdStale, CmdLatency, "server",
      "A container for latency diagnostics commands.", "2.8.13");
}

}  // namespace trove::resp
