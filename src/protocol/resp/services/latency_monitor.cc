// LatencyMonitor: event samples, LATENCY DOCTOR's report and LATENCY
// GRAPH's sparkline, with Redis 7's texts; any worker thread.
#include "protocol/resp/services/latency_monitor.h"

#include <cstdarg>
#include <cstdint>
#include <cstdio>

#include "protocol/resp/core/command_table.h"

namespace trove::resp {

void LatencyMonitor::AddSample(std::string_view event, int64_t ms, int64_t now) {
  const uint32_t v = ms < 0 ? 0 : ms > UINT32_MAX ? UINT32_MAX : static_cast<uint32_t>(ms);
  MutexLock l(&mu_);
  Series* s = nullptr;
  for (const auto& e : events_)
    if (e->event == event) s = e.get();
  if (s == nullptr) {
    events_.push_back(std::make_unique<Series>());
    s = events_.back().get();
    s->event.assign(event);
  }
  if (v > s->max) s->max = v;
  // A second already sampled keeps its worst latency (invariant 2).
  LatencySample& prev =
      s->samples[(s->next + limits::kLatencySamples - 1) % limits::kLatencySamples];
  if (prev.unix_time == now) {
    if (v > prev.ms) prev.ms = v;
    return;
  }
  s->samples[s->next] = LatencySample{now, v};
  s->next = (s->next + 1) % limits::kLatencySamples;
}

const LatencyMonitor::Series* LatencyMonitor::FindLocked(std::string_view event) const {
  mu_.AssertHeld();
  for (const auto& s : events_)
    if (s->event == event) return s.get();
  return nullptr;
}

void LatencyMonitor::Ordered(const Series& s, std::vector<LatencySample>* out) {
  for (size_t j = 0; j < limits::kLatencySamples; ++j) {
    const LatencySample& x = s.samples[(s.next + j) % limits::kLatencySamples];
    if (x.unix_time != 0) out->push_back(x);
  }
}

bool LatencyMonitor::History(std::string_view event, std::vector<LatencySample>* out) const {
  MutexLock l(&mu_);
  const Series* s = FindLocked(event);
  if (s == nullptr) return false;
  Ordered(*s, out);
  return true;
}

std::vector<LatencyLatest> LatencyMonitor::Latest() const {
  MutexLock l(&mu_);
  std::vector<LatencyLatest> out;
  for (const auto& s : events_) {
    const LatencySample& last =
        s->samples[(s->next + limits::kLatencySamples - 1) % limits::kLatencySamples];
    out.push_back({s->event, last.unix_time, last.ms, s->max});
  }
  return out;
}

int LatencyMonitor::Reset(std::string_view event) {
  MutexLock l(&mu_);
  int n = 0;
  for (size_t i = 0; i < events_.size();) {
    if (EqualsIgnoreCase(events_[i]->event, event)) {
      events_.erase(events_.begin() + static_cast<std::ptrdiff_t>(i));
      ++n;
    } else {
      ++i;
    }
  }
  return n;
}

int LatencyMonitor::ResetAll() {
  MutexLock l(&mu_);
  const int n = static_cast<int>(events_.size());
  events_.clear();
  return n;
}

namespace {

// Redis's latencyStats of one event (analyzeLatencyForEvent).
struct EventStats {
  uint64_t samples = 0;
  uint64_t avg = 0;
  uint64_t mad = 0;    // mean absolute deviation from avg
  int64_t period = 0;  // seconds from the oldest sample to now, at least 1
};

EventStats Analyze(const std::vector<LatencySample>& v, int64_t now) {
  EventStats st;
  uint64_t sum = 0;
  int64_t oldest = 0;
  for (const LatencySample& x : v) {
    ++st.samples;
    sum += x.ms;
    if (oldest == 0 || x.unix_time < oldest) oldest = x.unix_time;
  }
  if (st.samples == 0) return st;
  st.avg = sum / st.samples;
  st.period = now - oldest;
  if (st.period == 0) st.period = 1;
  uint64_t dev = 0;
  for (const LatencySample& x : v) {
    const int64_t d = static_cast<int64_t>(st.avg) - static_cast<int64_t>(x.ms);
    dev += static_cast<uint64_t>(d < 0 ? -d : d);
  }
  st.mad = dev / st.samples;
  return st;
}

__attribute__((format(printf, 2, 3))) void Appendf(std::string* s, const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  const int n = std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (n > 0)
    s->append(buf, static_cast<size_t>(n) < sizeof buf ? static_cast<size_t>(n) : sizeof buf - 1);
}

}  // namespace

std::string LatencyMonitor::Doctor(const LatencyDoctorConfig& cfg, int64_t now) const {
  MutexLock l(&mu_);
  std::string r;
  if (events_.empty() && cfg.latency_monitor_threshold == 0) {
    r = "I'm sorry, Dave, I can't do that. Latency monitoring is disabled in this Redis "
        "instance. You may use \"CONFIG SET latency-monitor-threshold <milliseconds>.\" in order "
        "to enable it. If we weren't in a deep space mission I'd suggest to take a look at "
        "https://redis.io/topics/latency-monitor.\n";
    return r;
  }
  bool slowlog_enable = false, slowlog_tuning = false, slowlog_inspect = false;
  bool scheduler = false, large_objects = false;
  int advices = 0;
  int num = 0;
  for (const auto& s : events_) {
    std::vector<LatencySample> v;
    Ordered(*s, &v);
    const EventStats st = Analyze(v, now);
    if (++num == 1) {
      r += "Dave, I have observed latency spikes in this Redis instance. You don't mind talking "
           "about it, do you Dave?\n\n";
    }
    Appendf(&r,
            "%d. %s: %d latency spikes (average %lums, mean deviation %lums, period %.2f sec). "
            "Worst all time event %lums.",
            num, s->event.c_str(), static_cast<int>(st.samples), static_cast<unsigned long>(st.avg),
            static_cast<unsigned long>(st.mad),
            static_cast<double>(st.period) / static_cast<double>(st.samples),
            static_cast<unsigned long>(s->max));
    if (EqualsIgnoreCase(s->event, "command")) {
      if (cfg.slowlog_log_slower_than < 0) {
        slowlog_enable = true;
        ++advices;
      } else if (cfg.slowlog_log_slower_than / 1000 > cfg.latency_monitor_threshold) {
        slowlog_tuning = true;
        ++advices;
      }
      slowlog_inspect = large_objects = true;
      advices += 2;
    }
    if (EqualsIgnoreCase(s->event, "fast-command")) {
      scheduler = true;
      ++advices;
    }
    r += '\n';
  }
  if (num == 0 && advices == 0) {
    r += "Dave, no latency spike was observed during the lifetime of this Redis instance, not in "
         "the slightest bit. I honestly think you ought to sit down calmly, take a stress pill, "
         "and think things over.\n";
    return r;
  }
  if (advices == 0) {
    r += "\nWhile there are latency events logged, I'm not able to suggest any easy fix. Please "
         "use the Redis community to get some help, providing this report in your help request.\n";
    return r;
  }
  const auto threshold_us =
      static_cast<unsigned long long>(cfg.latency_monitor_threshold) * 1000ull;
  r += "\nI have a few advices for you:\n\n";
  if (slowlog_enable) {
    Appendf(&r,
            "- There are latency issues with potentially slow commands you are using. Try to "
            "enable the Slow Log Redis feature using the command 'CONFIG SET "
            "slowlog-log-slower-than %llu'. If the Slow log is disabled Redis is not able to log "
            "slow commands execution for you.\n",
            threshold_us);
  }
  if (slowlog_tuning) {
    Appendf(&r,
            "- Your current Slow Log configuration only logs events that are slower than your "
            "configured latency monitor threshold. Please use 'CONFIG SET "
            "slowlog-log-slower-than %llu'.\n",
            threshold_us);
  }
  if (slowlog_inspect) {
    r += "- Check your Slow Log to understand what are the commands you are running which are "
         "too slow to execute. Please check https://redis.io/commands/slowlog for more "
         "information.\n";
  }
  if (scheduler) {
    r += "- The system is slow to execute Redis code paths not containing system calls. This "
         "usually means the system does not provide Redis CPU time to run for long periods. You "
         "should try to:\n"
         "  1) Lower the system load.\n"
         "  2) Use a computer / VM just for Redis if you are running other software in the same "
         "system.\n"
         "  3) Check if you have a \"noisy neighbour\" problem.\n"
         "  4) Check with 'redis-cli --intrinsic-latency 100' what is the intrinsic latency in "
         "your system.\n"
         "  5) Check if the problem is allocator-related by recompiling Redis with MALLOC=libc, "
         "if you are using Jemalloc. However this may create fragmentation problems.\n";
  }
  if (large_objects) {
    r += "- Deleting, expiring or evicting (because of maxmemory policy) large objects is a "
         "blocking operation. If you have very large objects that are often deleted, expired, or "
         "evicted, try to fragment those objects into multiple smaller objects.\n";
  }
  return r;
}

namespace {

// Redis's sparkline (sparkline.c, filled style): each sample a column of
// `rows` lines, 3 levels per line ('_' 'o' '#', '|' below the top), then a
// blank line and the samples' labels written vertically.
struct Spark {
  double value;
  std::string label;
};

void RenderRange(const std::vector<Spark>& seq, double min, double max, int rows, size_t offset,
                 size_t len, std::string* out) {
  static constexpr char kFill[] = "_o#";
  constexpr int kLevels = 3;
  double relmax = max - min;
  if (relmax == 0) relmax = 1;
  const int steps = kLevels * rows;
  std::string chars;
  for (int row = 0;; ++row) {
    bool more = false;
    chars.assign(len, ' ');
    for (size_t j = 0; j < len; ++j) {
      const Spark& s = seq[offset + j];
      if (row < rows) {
        const double relval = s.value - min;
        int step = static_cast<int>(static_cast<double>(static_cast<int>(relval * steps)) / relmax);
        if (step < 0) step = 0;
        if (step >= steps) step = steps - 1;
        const int idx = step - (rows - row - 1) * kLevels;
        more = true;
        if (idx >= 0 && idx < kLevels)
          chars[j] = kFill[idx];
        else if (idx >= kLevels)
          chars[j] = '|';
      } else {
        if (row - rows < 1) {  // one blank line between the graph and the labels
          more = true;
          break;
        }
        const size_t at = static_cast<size_t>(row - rows - 1);
        if (s.label.size() > at) {
          more = true;
          chars[j] = s.label[at];
        }
      }
    }
    if (!more) break;
    out->append(chars);
    out->push_back('\n');
  }
}

}  // namespace

bool LatencyMonitor::Graph(std::string_view event, int64_t now, std::string* out) const {
  constexpr size_t kCols = 80;  // Redis's LATENCY_GRAPH_COLS
  MutexLock l(&mu_);
  const Series* s = FindLocked(event);
  if (s == nullptr) return false;
  std::vector<LatencySample> v;
  Ordered(*s, &v);
  std::vector<Spark> seq;
  uint32_t lo = 0, hi = 0;
  for (const LatencySample& x : v) {
    if (seq.empty()) {
      lo = hi = x.ms;
    } else {
      if (x.ms > hi) hi = x.ms;
      if (x.ms < lo) lo = x.ms;
    }
    const int64_t e = now - x.unix_time;
    char buf[32];
    if (e < 60)
      std::snprintf(buf, sizeof buf, "%llds", static_cast<long long>(e));
    else if (e < 3600)
      std::snprintf(buf, sizeof buf, "%lldm", static_cast<long long>(e / 60));
    else if (e < 86400)
      std::snprintf(buf, sizeof buf, "%lldh", static_cast<long long>(e / 3600));
    else
      std::snprintf(buf, sizeof buf, "%lldd", static_cast<long long>(e / 86400));
    seq.push_back({static_cast<double>(x.ms), buf});
  }
  out->clear();
  Appendf(out, "%s - high %lu ms, low %lu ms (all time high %lu ms)\n", s->event.c_str(),
          static_cast<unsigned long>(hi), static_cast<unsigned long>(lo),
          static_cast<unsigned long>(s->max));
  out->append(kCols, '-');
  out->push_back('\n');
  for (size_t j = 0; j < seq.size(); j += kCols) {
    if (j != 0) out->push_back('\n');
    const size_t len = seq.size() - j < kCols ? seq.size() - j : kCols;
    RenderRange(seq, lo, hi, 4, j, len, out);
  }
  return true;
}

}  // namespace trove::resp
