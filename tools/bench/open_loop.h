// OpenLoopSchedule: the fixed-rate send schedule of one trove-bench
// connection in open-loop mode. Owned by the connection's load thread.
#pragma once

#include <cstdint>

namespace trove::bench {

// Intended send times first, first + interval, first + 2 * interval, ...
// fixed in advance. A request whose time has come but that cannot be sent
// (the pipeline window is full) keeps its intended time, and latency is
// counted from that time, so a server that stalls is charged for the whole
// wait of every request it delayed instead of the generator quietly sending
// less (coordinated omission).
//
// Thread safety: one owner.
class OpenLoopSchedule {
 public:
  OpenLoopSchedule() = default;
  OpenLoopSchedule(int64_t first_ns, int64_t interval_ns)
      : next_(first_ns), interval_(interval_ns < 1 ? 1 : interval_ns) {}

  // If a request is due at `now`, stores its intended time, advances the
  // schedule and returns true. Call only when the request can be sent.
  bool TakeDue(int64_t now, int64_t* intended) {
    if (next_ > now) return false;
    *intended = next_;
    next_ += interval_;
    return true;
  }
  int64_t next_due() const { return next_; }

 private:
  int64_t next_ = 0;
  int64_t interval_ = 1;
};

}  // namespace trove::bench
