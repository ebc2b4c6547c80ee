// CommandLog: how memcached-port commands reach the RESP front's SLOWLOG
// and LATENCY HISTOGRAM (no peer has a slow log for memcached commands).
// The memcache handler records into its worker's sink; the RESP front
// implements it. Sinks are used by their worker only.
#pragma once

#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace trove::protocol {

// The memcached commands timed, as LATENCY HISTOGRAM names them
// ("memcache|<name>"); kOther covers the rest (admin and unknown lines).
enum McCmd : uint8_t {
  kMcGet, kMcGets, kMcGat, kMcGats, kMcSet, kMcAdd, kMcReplace, kMcAppend, kMcPrepend, kMcCas,
  kMcIncr, kMcDecr, kMcDelete, kMcTouch, kMcMg, kMcMs, kMcMd, kMcMa, kMcMn, kMcMe,
  kMcFlushAll, kMcStats, kMcVersion, kMcOther, kMcCmdCount
};
inline constexpr std::string_view kMcCmdNames[kMcCmdCount] = {
    "get", "gets", "gat", "gats", "set", "add", "replace", "append", "prepend", "cas",
    "incr", "decr", "delete", "touch", "mg", "ms", "md", "ma", "mn", "me",
    "flush_all", "stats", "version", "other"};

// The container name memcached commands appear under in LATENCY HISTOGRAM.
inline constexpr std::string_view kMcContainer = "memcache";

// Redis records each call as usec*1000 ns (clamped to 1 ns..1 s) in an
// HdrHistogram with 2 significant digits and reports it at the levels
// 1024 * 2^k ns, k = 0..20. The reported bucket bounds are therefore not
// exact powers of two in µs: 1 2 4 8 16 33 66 132 ... 541065 1073741.
inline constexpr int kLatencyBuckets = 21;

// The bucket of a call of `usec` µs: the first level whose HdrHistogram
// range (1024 * 2^k plus that level's sub-bucket width 2^(3+k), which is
// 129 * 2^(3+k) - 1 in all) holds usec*1000 ns. One division by a
// constant and a bit scan.
inline int LatencyBucket(int64_t usec) {
  uint64_t ns = usec <= 0 ? 1 : static_cast<uint64_t>(usec) * 1000;
  if (ns > 1000000000) ns = 1000000000;
  return static_cast<int>(std::bit_width((ns - 1) / 1032));
}

// One command's histogram on one worker. Written by that worker (relaxed
// fetch_add: CONFIG RESETSTAT may zero it from another worker), read by any.
struct LatencyHistogram {
  std::atomic<uint64_t> buckets[kLatencyBuckets] = {};  // relaxed: statistics only
  void Add(int64_t usec) { buckets[LatencyBucket(usec)].fetch_add(1, std::memory_order_relaxed); }
};

class CommandLog {
 public:
  // One worker's recorder. Record runs once per memcached command with its
  // duration (the same one-clock-read-per-command measure RESP uses): a
  // histogram increment, and, past the lowest slow-log / latency-monitor
  // threshold, the owner's slow path. Inline and non-virtual: it is on
  // every memcached request.
  // Thread safety: the worker it was made for only (the settings it reads
  // are relaxed atomics the owner writes).
  class Sink {
   public:
    Sink(CommandLog* owner, LatencyHistogram* hist, const std::atomic<bool>* tracking,
         const std::atomic<uint64_t>* slow_above_us)
        : owner_(owner), hist_(hist), tracking_(tracking), slow_above_us_(slow_above_us) {}
    // False while both LATENCY HISTOGRAM tracking and the slow log / latency
    // monitor are off: then commands are not timed at all (no clock reads).
    bool active() const {
      return tracking_->load(std::memory_order_relaxed) ||
             slow_above_us_->load(std::memory_order_relaxed) != UINT64_MAX;
    }
    void Record(McCmd cmd, std::string_view line, std::string_view client_addr, int64_t usec) {
      if (tracking_->load(std::memory_order_relaxed)) hist_[cmd].Add(usec);
      if (static_cast<uint64_t>(usec) >= slow_above_us_->load(std::memory_order_relaxed)) {
        owner_->RecordSlowMemcache(line, client_addr, usec);
      }
    }

   private:
    CommandLog* owner_;
    LatencyHistogram* hist_;  // kMcCmdCount histograms of this worker
    const std::atomic<bool>* tracking_;
    const std::atomic<uint64_t>* slow_above_us_;
  };
  virtual ~CommandLog() = default;
  // The sink of worker `worker_id`, valid as long as the CommandLog.
  // Thread safety: any worker (takes a lock; call once per connection).
  virtual Sink* SinkFor(int worker_id) = 0;
  // The slow path: a SLOWLOG entry and a latency-monitor sample when due.
  virtual void RecordSlowMemcache(std::string_view line, std::string_view client_addr,
                                  int64_t usec) = 0;
};

}  // namespace trove::protocol
