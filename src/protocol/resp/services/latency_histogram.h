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
#include "protocol/resp/core/command.h"

namespace trove::resp {

using protocol::kLatencyBuckets;
using protocol::LatencyBucket;
using protocol::LatencyHistogram;

// The upper bound in µs Redis prints for bucket k (histogram_usec keys).
int64_t LatencyBucketUpperUsec(int k);

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
  // Command id's subcommand slots [sub_begin, sub_end) (both -1 if it is
  // not a container), and the first memcache|<cmd> slot.
  int sub_begin(size_t id) const { return sub_begin_[id]; }
  int sub_end(size_t id) const { return sub_end_[id]; }
  int mc_begin() const { return mc_begin_; }

 private:
  HistogramSlots();
  int SubSlot(size_t id, std::string_view sub) const;

  std::vector<std::string> names_;
  std::vector<int> sub_begin_;  // per command id: first subcommand slot, -1 if not a container
  std::vector<int> sub_end_;
  int mc_begin_ = 0;  // the memcache|<cmd> slots: [mc_begin_, mc_begin_ + kMcCmdCount)
};

}  // namespace trove::resp
