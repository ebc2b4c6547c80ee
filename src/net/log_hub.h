// LogHub: the server's event log (memcached's logger): every thread writes
// entries into a bounded ring of its own; one collector thread formats them
// and sends them to the watching connections (memcached `watch`, RESP
// MONITOR) through their workers. Producers on any thread; collector thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/background_thread.h"
#include "common/clock.h"
#include "common/mutex.h"
#include "common/non_copyable.h"
#include "common/thread_annotations.h"

namespace trove::net {

class WorkerGroup;

// Event types: memcached's LOG_* bits (same values), plus MONITOR's.
enum LogType : uint32_t {
  kLogSysevents = 1u << 1,
  kLogFetchers = 1u << 2,
  kLogMutations = 1u << 3,
  kLogConnevents = 1u << 5,
  kLogEvictions = 1u << 6,
  kLogRawcmds = 1u << 9,
  kLogProxyreqs = 1u << 10,
  kLogProxyevents = 1u << 11,
  kLogProxyuser = 1u << 12,
  kLogDeletions = 1u << 13,
  kLogMonitor = 1u << 16,  // RESP MONITOR lines ("+<sec>.<usec> " prefix, CRLF)
};

struct LogHubOptions {
  size_t worker_buf = 64 * 1024;    // -o worker_logbuf_size (bytes per thread ring)
  size_t watcher_buf = 256 * 1024;  // -o watcher_logbuf_size (bytes queued per watcher)
  int max_watchers = 20;            // memcached's WATCHER_LIMIT (watch); MONITOR has its own
  int max_monitors = 1024;
};

struct LogHubStats {
  uint64_t worker_dropped = 0;   // entries a full ring refused
  uint64_t worker_written = 0;   // entries written into rings
  uint64_t watcher_skipped = 0;  // lines a slow watcher did not get
  uint64_t watcher_sent = 0;     // lines delivered to watchers
  uint64_t watchers = 0;         // `watch` connections now
  uint64_t monitors = 0;         // MONITOR connections now
};

// Thread safety: Wants, Log and Stats from any thread; Add/RemoveWatcher
// from any thread (the watcher's worker); Start/Stop from the server thread.
//
// Lossy by design (memcached's logger): a producer never waits. A full ring
// drops the entry (log_worker_dropped); a watcher whose queued output passes
// watcher_buf loses lines and is told how many ("skipped=N" before its next
// line). Memory is bounded by rings + watchers x (2 x watcher_buf).
//
// Invariants:
//  1. mask_ is the union of the live watchers' masks (updated under mu_), so
//     a producer's only cost while nobody watches is one relaxed load.
//  2. Each ring has exactly one producer (the thread that made it, on its
//     first Log) and one consumer (the collector): head is written only by
//     the producer, tail only by the collector.
//  3. A watcher sees only entries with gid >= its first gid (the log at the
//     moment it was added), in each producer's order; entries collected in
//     one pass are merged by gid (so lines of different workers interleave
//     as they happened, except for an entry whose producer was preempted
//     between taking its gid and writing it).
//  4. Lock order: mu_ is a leaf; the collector posts to
//     workers holding neither, and only the collector posts (a worker never
//     waits on itself: the collector is not a worker).
class LogHub : NonCopyable {
 public:
  LogHub(WorkerGroup* group, const Clock* clock, LogHubOptions opts);
  ~LogHub();

  void Start() {
    bg_.Start([this] { Run(); });
  }
  void Stop() { bg_.Stop(); }
  // The workers this hub delivers to.
  WorkerGroup* group() const { return group_; }

  bool Wants(uint32_t type) const { return (mask_.load(std::memory_order_relaxed) & type) != 0; }
  // Every type someone watches now (one relaxed load).
  uint32_t WatchedTypes() const { return mask_.load(std::memory_order_relaxed); }
  // Logs one entry. `body` is the text after memcached's "ts=... gid=... "
  // prefix (or after MONITOR's "+<sec>.<usec> "), without the line end;
  // entries longer than a quarter of the ring are cut to fit.
  void Log(LogType type, std::string_view body);

  enum class AddResult { kOk, kTooMany };
  // Registers connection `conn_id` (any worker) for the types in `mask`;
  // lines reach it through WorkerGroup::PostToConn. *id names it for Remove.
  AddResult AddWatcher(uint64_t conn_id, uint32_t mask, uint64_t* id);
  void RemoveWatcher(uint64_t id);

  LogHubStats Stats() const;
  const LogHubOptions& options() const { return opts_; }

  // The collector's pass, exposed for tests: drains every ring once and
  // posts what it formatted. Returns the entries read.
  size_t CollectOnce();

 private:
  struct Ring;
  struct Watcher;
  Ring* RingForThisThread();
  void Run();
  void UpdateMaskLocked() REQUIRES(mu_);
  void Deliver(const std::shared_ptr<Watcher>& w);
  void Format(const Watcher& w, uint64_t gid, int64_t ts_us, std::string_view body,
              std::string* out) const;

  WorkerGroup* const group_;
  const Clock* const clock_;
  const LogHubOptions opts_;
  const uint64_t generation_;  // tells a thread's cached ring apart across hubs
  std::atomic<uint32_t> mask_{0};
  std::atomic<uint64_t> next_gid_{1};
  std::atomic<uint64_t> dropped_{0}, written_{0}, skipped_{0}, sent_{0};

  mutable Mutex mu_{LockRank::kLeaf};
  CondVar cv_{&mu_};
  std::vector<std::unique_ptr<Ring>> rings_ GUARDED_BY(mu_);
  std::vector<std::shared_ptr<Watcher>> watchers_ GUARDED_BY(mu_);
  uint64_t next_watcher_id_ GUARDED_BY(mu_) = 1;
  int num_watch_ GUARDED_BY(mu_) = 0;
  int num_monitor_ GUARDED_BY(mu_) = 0;
  BackgroundThread bg_{&mu_, &cv_};  // last: joined before the rest goes
};

}  // namespace trove::net
