// INFO's per-command sections: commandstats (calls and time per command),
// errorstats, and latencystats (percentiles from LATENCY HISTOGRAM's
// counts). Runs on the connection's worker.
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/str_append.h"
#include "protocol/resp/commands/info_internal.h"
#include "protocol/resp/core/command_table.h"
#include "protocol/resp/core/resp_server.h"
#include "protocol/resp/services/latency_histogram.h"

namespace trove::resp {

void CommandstatsSection(CommandContext& ctx, std::string* s) {
  struct Totals {
    uint64_t calls = 0, usec = 0, rejected = 0, failed = 0;
  };
  // Reused per thread: INFO allocates nothing here once warm.
  thread_local std::vector<Totals> totals;
  const auto& specs = CommandTable::Get().all();
  totals.assign(specs.size(), Totals{});
  ctx.server->ForEachWorkerStats([](const WorkerStats& w) {
    for (size_t i = 0; i < w.cmds.size() && i < totals.size(); ++i) {
      totals[i].calls += w.cmds[i].calls.load(std::memory_order_relaxed);
      totals[i].usec += w.cmds[i].usec.load(std::memory_order_relaxed);
      totals[i].rejected += w.cmds[i].rejected.load(std::memory_order_relaxed);
      totals[i].failed += w.cmds[i].failed.load(std::memory_order_relaxed);
    }
  });
  *s += "# Commandstats\r\n";
  for (size_t i = 0; i < specs.size(); ++i) {
    const Totals& t = totals[i];
    if (t.calls == 0 && t.rejected == 0) continue;
    *s += "cmdstat_";
    *s += specs[i].name;
    *s += ":calls=";
    AppendU64(*s, t.calls);
    *s += ",usec=";
    AppendU64(*s, t.usec);
    char buf[64];
    std::snprintf(buf, sizeof buf, ",usec_per_call=%.2f",
                  t.calls == 0 ? 0.0 : static_cast<double>(t.usec) / static_cast<double>(t.calls));
    *s += buf;
    *s += ",rejected_calls=";
    AppendU64(*s, t.rejected);
    *s += ",failed_calls=";
    AppendU64(*s, t.failed);
    *s += "\r\n";
  }
}

// Error replies per error code (errorstat_ERR:count=...), summed over the
// workers, codes in byte order as Redis's rax lists them.
void ErrorstatsSection(CommandContext& ctx, std::string* s) {
  *s += "# Errorstats\r\n";
  std::map<std::string, uint64_t, std::less<>> codes;
  ctx.server->ForEachWorkerStats([&codes](const WorkerStats& w) {
    const size_t n = w.error_codes.n.load(std::memory_order_acquire);
    for (size_t i = 0; i < n; ++i) {
      const ErrorCodes::Slot& slot = w.error_codes.slots[i];
      const uint64_t c = slot.count.load(std::memory_order_relaxed);
      if (c != 0) codes[std::string(slot.name())] += c;
    }
  });
  for (const auto& [code, count] : codes) {
    *s += "errorstat_";
    *s += code;
    *s += ":count=";
    AppendU64(*s, count);
    *s += "\r\n";
  }
}

namespace {

// Redis's default latency-tracking-info-percentiles.
constexpr std::pair<std::string_view, double> kPercentiles[] = {
    {"p50", 50.0}, {"p99", 99.0}, {"p99.9", 99.9}};

// The p-th percentile call's latency in µs, at the histogram's resolution:
// the upper bound of its power-of-two bucket (Redis's HdrHistogram keeps
// three significant digits).
int64_t PercentileUsec(const std::array<uint64_t, kLatencyBuckets>& c, uint64_t n, double p) {
  const uint64_t rank =
      std::max<uint64_t>(1, static_cast<uint64_t>(p / 100.0 * static_cast<double>(n) + 0.5));
  uint64_t seen = 0;
  for (int b = 0; b < kLatencyBuckets; ++b) {
    seen += c[static_cast<size_t>(b)];
    if (seen >= rank) return LatencyBucketUpperUsec(b);
  }
  return LatencyBucketUpperUsec(kLatencyBuckets - 1);
}

}  // namespace

// Per RESP command and subcommand with calls, from the LATENCY HISTOGRAM
// counts, while latency tracking is on (Redis prints the header alone
// when it is off).
void LatencystatsSection(CommandContext& ctx, std::string* s) {
  *s += "# Latencystats\r\n";
  if (!ctx.server->latency_tracking.load(std::memory_order_relaxed)) return;
  const HistogramSlots& slots = ctx.server->histogram_slots();
  using Counts = std::array<uint64_t, kLatencyBuckets>;
  // Reused per thread: INFO allocates nothing here once warm.
  thread_local std::vector<Counts> sums;
  sums.assign(static_cast<size_t>(slots.mc_begin()), Counts{});
  ctx.server->ForEachWorkerStats([](const WorkerStats& w) {
    for (size_t slot = 0; slot < w.latency.size() && slot < sums.size(); ++slot) {
      for (size_t b = 0; b < sums[slot].size(); ++b)
        sums[slot][b] += w.latency[slot].buckets[b].load(std::memory_order_relaxed);
    }
  });
  for (size_t slot = 0; slot < sums.size(); ++slot) {
    uint64_t n = 0;
    for (uint64_t x : sums[slot]) n += x;
    if (n == 0) continue;
    *s += "latency_percentiles_usec_";
    *s += slots.name(slot);
    char sep = ':';
    for (const auto& [name, p] : kPercentiles) {
      char buf[48];
      const int len =
          std::snprintf(buf, sizeof buf, "%c%.*s=%lld.000", sep, static_cast<int>(name.size()),
                        name.data(), static_cast<long long>(PercentileUsec(sums[slot], n, p)));
      s->append(buf, static_cast<size_t>(len));
      sep = ',';
    }
    *s += "\r\n";
  }
}

}  // namespace trove::resp
