// Clock: the only place that reads wall or monotonic time. Tests inject a
// ManualClock to travel in time. Thread safety: all methods are thread-safe.
#pragma once

#include <atomic>
#include <cstdint>

namespace trove {

class Clock {
 public:
  virtual ~Clock() = default;
  // Unix time in seconds.
  virtual int64_t UnixSeconds() const = 0;
  // Monotonic nanoseconds (arbitrary origin).
  virtual int64_t MonoNanos() const = 0;
  // Unix time in microseconds (for RESP TIME / PTTL).
  virtual int64_t UnixMicros() const = 0;
};

class SystemClock final : public Clock {
 public:
  int64_t UnixSeconds() const override;
  int64_t MonoNanos() const override;
  int64_t UnixMicros() const override;
  static SystemClock* Default();
};

// A clock that moves only when told. Starts at a fixed unix time.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(int64_t unix_seconds = 1700000000) : micros_(unix_seconds * 1000000) {}
  int64_t UnixSeconds() const override { return micros_.load(std::memory_order_relaxed) / 1000000; }
  int64_t MonoNanos() const override { return micros_.load(std::memory_order_relaxed) * 1000; }
  int64_t UnixMicros() const override { return micros_.load(std::memory_order_relaxed); }
  void AdvanceSeconds(int64_t s) { micros_.fetch_add(s * 1000000, std::memory_order_relaxed); }
  void AdvanceMicros(int64_t us) { micros_.fetch_add(us, std::memory_order_relaxed); }

 private:
  std::atomic<int64_t> micros_;
};

}  // namespace trove
