// LatencyMonitor: Redis's latency events ("command", "fast-command"): the
// worst latency of each second above latency-monitor-threshold, for LATENCY
// LATEST / HISTORY / RESET / GRAPH / DOCTOR. Owned by RespServer; any worker.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/limits.h"
#include "common/mutex.h"
#include "common/thread_annotations.h"

namespace trove::resp {

struct LatencySample {
  int64_t unix_time = 0;  // 0: unused slot
  uint32_t ms = 0;
};

// What LATENCY LATEST shows of one event.
struct LatencyLatest {
  std::string event;
  int64_t unix_time;
  int64_t ms;
  int64_t max_ms;  // worst since the event was created
};

// The settings LATENCY DOCTOR's advice depends on.
struct LatencyDoctorConfig {
  int64_t slowlog_log_slower_than;    // µs, -1 disabled
  int64_t latency_monitor_threshold;  // ms, 0 disabled
};

// Thread safety: every method takes mu_, a leaf lock. Workers add samples
// only for commands slower than the threshold, never on the common path.
// Invariants:
//  1. An event exists from its first sample until a RESET names it.
//  2. Within an event, each second has at most one sample (its worst), and
//     at most limits::kLatencySamples seconds are kept (a ring, oldest
//     overwritten).
class LatencyMonitor {
 public:
  // Records `ms` for `event` at `now` (unix seconds).
  void AddSample(std::string_view event, int64_t ms, int64_t now) EXCLUDES(mu_);
  // The samples of an event (exact name), oldest first; false if it has none.
  bool History(std::string_view event, std::vector<LatencySample>* out) const EXCLUDES(mu_);
  // The newest sample of every event, in creation order.
  std::vector<LatencyLatest> Latest() const EXCLUDES(mu_);
  // Forgets the event named (case-insensitive, as Redis) or every event;
  // returns how many were forgotten.
  int Reset(std::string_view event) EXCLUDES(mu_);
  int ResetAll() EXCLUDES(mu_);
  // LATENCY DOCTOR's report.
  std::string Doctor(const LatencyDoctorConfig& cfg, int64_t now) const EXCLUDES(mu_);
  // LATENCY GRAPH's ASCII sparkline of an event; false if it has no samples.
  bool Graph(std::string_view event, int64_t now, std::string* out) const EXCLUDES(mu_);

 private:
  struct Series {
    std::string event;
    LatencySample samples[limits::kLatencySamples];
    size_t next = 0;  // ring position of the next new second
    uint32_t max = 0;
  };
  const Series* FindLocked(std::string_view event) const REQUIRES(mu_);
  // Samples in ring order from the oldest.
  static void Ordered(const Series& s, std::vector<LatencySample>* out);

  mutable Mutex mu_{LockRank::kLeaf};
  std::vector<std::unique_ptr<Series>> events_ GUARDED_BY(mu_);  // in creation order
};

}  // namespace trove::resp
