// Per-command latency histograms (LATENCY HISTOGRAM): Redis's buckets, and
// the slots that name a command or a container's subcommand. Recorded by
// each worker into its own WorkerStats, summed by any worker on demand.
#pragma once

#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/command_log.h"
#include "protocol/resp/command.h"

namespace trove::resp {

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

// The upper bound in µs Redis prints for bucket k (histogram_usec keys).
int64_t LatencyBucketUpperUsec(int k);

// One command's histogram on one worker. Written by that worker (relaxed
// fetch_add: CONFIG RESETSTAT may zero it from another worker), read by any.
struct LatencyHistogram {
  std::atomic<uint64_t> buckets[kLatencyBuckets] = {};  // relaxed: statistics only
  void Add(int64_t usec) { buckets[LatencyBucket(usec)].fetch_add(1, std::memory_order_relaxed); }
};

// Slot numbering of the histograms: slot i < CommandTable size is command i
// itself; the slots after are the subcommands of Redis's container commands
// (CLIENT, CONFIG, COMMAND, ...), named "parent|sub" as Redis does; last,
// the memcached port's commands as "memcache|<cmd>" (a Trove addition).
//
// Thread safety: immutable after Get() builds it (after CommandTable).
// Invariants:
//  1. names()[slot] is the Redis full name of every slot.
//  2. A container's subcommand slots are contiguous, in alphabetical order.
class HistogramSlots {
 public:
  static const HistogramSlots& Get();

  size_t size() const { return names_.size(); }
  const std::string& name(size_t slot) const { return names_[slot]; }

  // The slot a call records into: the command's own, or its subcommand's
  // for a container called with one. -1 for an unknown subcommand, which
  // Redis rejects before it runs (so it is neither timed nor logged).
  int SlotOf(const CommandSpec& spec, std::span<const std::string_view> argv) const {
    const size_t id = static_cast<size_t>(spec.id);
    if (sub_begin_[id] < 0 || argv.size() < 2) return spec.id;
    return SubSlot(id, argv[1]);
  }

  // The slot of a memcached-port command ("memcache|<name>").
  int MemcacheSlot(protocol::McCmd c) const { return mc_begin_ + static_cast<int>(c); }

  // LATENCY HISTOGRAM's argument lookup: "cmd" gives the command's slot and
  // then its subcommands' slots, "parent|sub" the subcommand's alone, and an
  // unknown name nothing (case-insensitive).
  void SlotsNamed(std::string_view name, std::vector<int>* out) const;
  // Every slot in reply order: each command, then its subcommands.
  void AllSlots(std::vector<int>* out) const;

 private:
  HistogramSlots();
  int SubSlot(size_t id, std::string_view sub) const;

  std::vector<std::string> names_;
  std::vector<int> sub_begin_;  // per command id: first subcommand slot, -1 if not a container
  std::vector<int> sub_end_;
  int mc_begin_ = 0;  // the memcache|<cmd> slots: [mc_begin_, mc_begin_ + kMcCmdCount)
};

}  // namespace trove::resp
