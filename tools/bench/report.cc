// Summary table and JSON for a trove-bench run (main thread, after the run).
#include "report.h"

#include <string>

namespace trove::bench {

namespace {

double Us(uint64_t ns) { return static_cast<double>(ns) / 1000.0; }

void Row(std::FILE* f, const char* name, uint64_t ops, double secs, const LatencyHistogram& h) {
  std::fprintf(f, "%-6s %12.0f %12llu %9.1f %9.1f %9.1f %9.1f %9.1f %9.1f\n", name,
               secs > 0 ? static_cast<double>(ops) / secs : 0.0,
               static_cast<unsigned long long>(ops), Us(h.Percentile(50)), Us(h.Percentile(90)),
               Us(h.Percentile(99)), Us(h.Percentile(99.9)), Us(h.max()), h.mean() / 1000.0);
}

void JsonLatency(std::FILE* f, const char* name, uint64_t ops, double secs,
                 const LatencyHistogram& h, bool last) {
  std::fprintf(f,
               "  \"%s\": {\"ops\": %llu, \"ops_per_sec\": %.1f, \"latency_us\": {\"p50\": %.2f, "
               "\"p90\": %.2f, \"p99\": %.2f, \"p99_9\": %.2f, \"max\": %.2f, \"mean\": %.2f}}%s\n",
               name, static_cast<unsigned long long>(ops),
               secs > 0 ? static_cast<double>(ops) / secs : 0.0, Us(h.Percentile(50)),
               Us(h.Percentile(90)), Us(h.Percentile(99)), Us(h.Percentile(99.9)), Us(h.max()),
               h.mean() / 1000.0, last ? "" : ",");
}

// JSON string body with quotes, backslashes and control bytes escaped.
std::string JsonEscape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

void PrintSummary(std::FILE* f, const Options& o, const RunResult& r) {
  const Stats& s = r.stats;
  std::fprintf(f, "trove-bench: %s %s:%d, %d thread(s) x %d conns, pipeline %d, %s\n",
               ProtocolName(o.protocol), o.host.c_str(), o.port, o.threads, o.conns_per_thread,
               o.pipeline, o.rate > 0 ? "open loop" : "closed loop");
  if (o.rate > 0) std::fprintf(f, "  target rate %.0f ops/s\n", o.rate);
  std::fprintf(f, "  set:get %u:%u, %llu keys %s", o.set_weight, o.get_weight,
               static_cast<unsigned long long>(o.key_count), PatternName(o.pattern));
  if (o.pattern == KeyPattern::kZipf) std::fprintf(f, " (s=%.2f)", o.zipf_exponent);
  if (o.value_min == o.value_max) {
    std::fprintf(f, ", values %zu B", o.value_min);
  } else {
    std::fprintf(f, ", values %zu-%zu B", o.value_min, o.value_max);
  }
  if (o.multiget > 1) std::fprintf(f, ", multiget %d", o.multiget);
  if (o.requests > 0) {
    std::fprintf(f, ", %llu requests in %.2f s\n", static_cast<unsigned long long>(o.requests),
                 r.measured_s);
  } else {
    std::fprintf(f, ", %.1f s measured after %.1f s warm-up\n", o.duration_s, o.warmup_s);
  }
  std::fprintf(f, "%-6s %12s %12s %9s %9s %9s %9s %9s %9s\n", "", "ops/s", "ops", "p50 us",
               "p90 us", "p99 us", "p99.9 us", "max us", "mean us");
  Row(f, "total", s.ops, r.measured_s, s.all);
  if (s.gets > 0) Row(f, "get", s.gets, r.measured_s, s.get_lat);
  if (s.sets > 0) Row(f, "set", s.sets, r.measured_s, s.set_lat);
  uint64_t keys = s.hits + s.misses;
  std::fprintf(f, "keys read: %llu hits, %llu misses (%.1f%% hits)\n",
               static_cast<unsigned long long>(s.hits), static_cast<unsigned long long>(s.misses),
               keys ? 100.0 * static_cast<double>(s.hits) / static_cast<double>(keys) : 0.0);
  std::fprintf(f,
               "errors: %llu (malformed %llu, unexpected %llu, value mismatch %llu, connection "
               "%llu)\n",
               static_cast<unsigned long long>(s.errors()),
               static_cast<unsigned long long>(s.err_malformed),
               static_cast<unsigned long long>(s.err_unexpected),
               static_cast<unsigned long long>(s.err_mismatch),
               static_cast<unsigned long long>(s.err_connection));
  if (!s.first_error.empty()) std::fprintf(f, "first error: %s\n", s.first_error.c_str());
}

void PrintJson(std::FILE* f, const Options& o, const RunResult& r) {
  const Stats& s = r.stats;
  std::fprintf(f, "{\n  \"protocol\": \"%s\", \"host\": \"%s\", \"port\": %d,\n",
               ProtocolName(o.protocol), JsonEscape(o.host).c_str(), o.port);
  std::fprintf(f,
               "  \"threads\": %d, \"conns_per_thread\": %d, \"pipeline\": %d, \"rate\": %.1f,\n"
               "  \"set_weight\": %u, \"get_weight\": %u, \"keys\": %llu, \"pattern\": \"%s\", "
               "\"zipf_exponent\": %.3f,\n"
               "  \"value_min\": %zu, \"value_max\": %zu, \"multiget\": %d, \"connected\": %d,\n",
               o.threads, o.conns_per_thread, o.pipeline, o.rate, o.set_weight, o.get_weight,
               static_cast<unsigned long long>(o.key_count), PatternName(o.pattern),
               o.zipf_exponent, o.value_min, o.value_max, o.multiget, r.connected);
  std::fprintf(f,
               "  \"duration_s\": %.3f, \"completed\": %llu, \"hits\": %llu, \"misses\": %llu,\n",
               r.measured_s, static_cast<unsigned long long>(s.completed),
               static_cast<unsigned long long>(s.hits), static_cast<unsigned long long>(s.misses));
  std::fprintf(
      f,
      "  \"errors\": {\"total\": %llu, \"malformed\": %llu, \"unexpected\": %llu, "
      "\"mismatch\": %llu, \"connection\": %llu, \"first\": \"%s\"},\n",
      static_cast<unsigned long long>(s.errors()), static_cast<unsigned long long>(s.err_malformed),
      static_cast<unsigned long long>(s.err_unexpected),
      static_cast<unsigned long long>(s.err_mismatch),
      static_cast<unsigned long long>(s.err_connection), JsonEscape(s.first_error).c_str());
  JsonLatency(f, "total", s.ops, r.measured_s, s.all, false);
  JsonLatency(f, "get", s.gets, r.measured_s, s.get_lat, false);
  JsonLatency(f, "set", s.sets, r.measured_s, s.set_lat, true);
  std::fprintf(f, "}\n");
}

}  // namespace trove::bench
