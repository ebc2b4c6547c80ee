// CommandLog: how memcached-port commands reach the RESP front's SLOWLOG
// and LATENCY HISTOGRAM (no peer has a slow log for memcached commands).
// The memcache handler records into its worker's sink; the RESP front
// implements it. Sinks are used by their worker only.
#pragma once

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

class CommandLog {
 public:
  // One worker's recorder. Record runs once per memcached command with its
  // duration (the same one-clock-read-per-command measure RESP uses): a
  // histogram increment, and a slow-log entry past slowlog-log-slower-than.
  // Thread safety: the worker it was made for only.
  class Sink {
   public:
    virtual ~Sink() = default;
    virtual void Record(McCmd cmd, std::string_view line, std::string_view client_addr,
                        int64_t usec) = 0;
  };
  virtual ~CommandLog() = default;
  // The sink of worker `worker_id`, valid as long as the CommandLog.
  // Thread safety: any worker (takes a lock; call once per connection).
  virtual Sink* SinkFor(int worker_id) = 0;
};

}  // namespace trove::protocol
