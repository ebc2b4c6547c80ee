// ClientPause: CLIENT PAUSE's state, set on the RESP port and obeyed by both
// protocols (a WRITE pause also holds memcached-port writes).
//
// Thread safety: mode/end are atomics read with relaxed loads on every
// command while a pause may be on (one load when it is off); Pause/Unpause
// serialize on a leaf mutex. HeldOn(w) is touched only by worker w's thread.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <vector>

#include "common/mutex.h"

namespace trove::protocol {

class ClientPause {
 public:
  static constexpr int kNone = 0, kWrite = 1, kAll = 2;
  static constexpr int kMaxWorkers = 1024;

  // Fast test: a pause may be in force (check ModeAt before holding).
  bool maybe() const { return mode_.load(std::memory_order_relaxed) != kNone; }
  // The mode in force at monotonic time now_ns.
  int ModeAt(int64_t now_ns) const {
    const int m = mode_.load(std::memory_order_relaxed);
    return m != kNone && now_ns < end_ns_.load(std::memory_order_relaxed) ? m : kNone;
  }
  int64_t end_ns() const { return end_ns_.load(std::memory_order_relaxed); }
  // Redis's pauseClients: the more restrictive mode and the later end win.
  void Pause(int mode, int64_t end_ns, int64_t now_ns) EXCLUDES(mu_) {
    MutexLock l(&mu_);
    int old = mode_.load(std::memory_order_relaxed);
    const int64_t old_end = end_ns_.load(std::memory_order_relaxed);
    if (old_end <= now_ns) old = kNone;
    end_ns_.store(std::max(old_end, end_ns), std::memory_order_relaxed);
    mode_.store(std::max(old, mode), std::memory_order_relaxed);
  }
  void Unpause() EXCLUDES(mu_) {
    MutexLock l(&mu_);
    mode_.store(kNone, std::memory_order_relaxed);
    end_ns_.store(0, std::memory_order_relaxed);
  }
  // Connections held by a pause (INFO blocked_clients counts them).
  std::atomic<int64_t> held{0};
  // The ids of worker w's held connections (CLIENT UNPAUSE resumes them).
  std::vector<uint64_t>& HeldOn(int w) { return held_on_[static_cast<size_t>(w) % kMaxWorkers]; }

 private:
  Mutex mu_{LockRank::kLeaf};
  std::atomic<int> mode_{kNone};
  std::atomic<int64_t> end_ns_{0};
  std::array<std::vector<uint64_t>, kMaxWorkers> held_on_;
};

}  // namespace trove::protocol
