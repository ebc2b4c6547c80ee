// client-output-buffer-limit: the limits of the three client classes, the
// rule Redis applies to them, and the CONFIG syntax. Any worker thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace trove::resp {

// Redis's classes, in its CONFIG GET order. A connection is kPubSub while it
// holds a subscription (RESP2 or RESP3), else kNormal; Trove has no
// replicas, so kReplica is stored for CONFIG only and applies to nobody.
enum class ClientClass : uint8_t { kNormal = 0, kReplica = 1, kPubSub = 2 };
inline constexpr size_t kClientClasses = 3;

// One class's limits in bytes and seconds; 0 disables a limit.
struct ObufLimit {
  int64_t hard = 0;
  int64_t soft = 0;
  int64_t soft_seconds = 0;
};

// Where one connection stands against its soft limit. Owner worker only.
struct ObufSoftState {
  bool reached = false;
  int64_t since_ns = 0;  // Clock::MonoNanos when it was first seen reached
};

// Redis's checkClientOutputBufferLimits: over at once when used >= hard, or
// when used >= soft has been seen continuously for more than soft_seconds
// (the first sighting only starts the clock). Going below the soft limit
// resets the clock. Redis counts whole unix seconds; this counts
// nanoseconds, so the cut comes soft_seconds after the first sighting
// rather than up to a second later.
bool ObufOverLimit(const ObufLimit& l, uint64_t used, int64_t now_ns, ObufSoftState* st);

// Redis's memory units (memtoull): digits with an optional k, kb, m, mb, g
// or gb suffix (any case; k = 1000, kb = 1024). False on anything else.
bool ParseMemoryUnits(std::string_view s, int64_t* out);

// The limits every connection is checked against.
// Thread safety: any thread. Each value is a relaxed atomic: a check racing a
// CONFIG SET may see one class's old and new values mixed, which only moves
// that one check's outcome between the two settings.
class ObufLimits {
 public:
  ObufLimits();  // Redis's defaults: normal 0 0 0, slave 256mb 64mb 60, pubsub 32mb 8mb 60

  ObufLimit Get(ClientClass c) const {
    const Slot& s = slots_[static_cast<size_t>(c)];
    return {s.hard.load(std::memory_order_relaxed), s.soft.load(std::memory_order_relaxed),
            s.soft_seconds.load(std::memory_order_relaxed)};
  }
  void Set(ClientClass c, const ObufLimit& l);
  // The lowest non-zero hard or soft limit of any class (UINT64_MAX: none):
  // a connection with less unsent output than this is within its limits,
  // whatever its class (the check after every command stops here).
  uint64_t floor() const { return floor_.load(std::memory_order_relaxed); }

  // CONFIG GET's value: "normal 0 0 0 slave 268435456 67108864 60 pubsub ...".
  std::string ToString() const;
  // CONFIG SET: "<class> <hard> <soft> <soft seconds>" repeated; classes
  // normal, slave/replica, pubsub (master is refused, as Redis). All or
  // nothing: on an error nothing changes and *err holds Redis's message.
  bool Apply(std::string_view value, std::string* err);

 private:
  struct Slot {
    std::atomic<int64_t> hard{0};
    std::atomic<int64_t> soft{0};
    std::atomic<int64_t> soft_seconds{0};
  };
  Slot slots_[kClientClasses];
  std::atomic<uint64_t> floor_{UINT64_MAX};
};

// One connection against the limits of its class: its soft-limit clock
// and whether it was closed for its output. Owner worker only (the
// connection's; connection/session_output.cc enforces it).
class ConnOutputLimit {
 public:
  // The check after every command, inlined: false means within every
  // class's limits with no soft limit being timed (a compare, no clock).
  bool MayBeOver(uint64_t pending, const ObufLimits& limits) const {
    return killed_ || soft_.reached || pending >= limits.floor();
  }
  // True when `used` bytes (unsent output plus any reply still being built)
  // are over class c's limit, or the connection was already killed;
  // advances the soft-limit clock, reading `now_ns` only when over a limit.
  template <typename NowFn>
  bool Over(const ObufLimits& limits, ClientClass c, uint64_t used, NowFn now_ns) {
    if (killed_) return true;
    const ObufLimit l = limits.Get(c);
    if (l.hard == 0 && l.soft == 0) return false;  // the default for normal clients
    if ((l.hard == 0 || used < static_cast<uint64_t>(l.hard)) &&
        (l.soft == 0 || used < static_cast<uint64_t>(l.soft))) {
      soft_.reached = false;  // below both
      return false;
    }
    return ObufOverLimit(l, used, now_ns(), &soft_);
  }
  // Closed for its output: nothing more may be written to it.
  bool killed() const { return killed_; }
  void MarkKilled() { killed_ = true; }

 private:
  ObufSoftState soft_;
  bool killed_ = false;
};

}  // namespace trove::resp
