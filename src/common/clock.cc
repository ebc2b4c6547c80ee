// SystemClock: wall and monotonic time from clock_gettime.
#include "common/clock.h"

#include <time.h>

namespace trove {

int64_t SystemClock::UnixSeconds() const {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return ts.tv_sec;
}
int64_t SystemClock::MonoNanos() const {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}
int64_t SystemClock::UnixMicros() const {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t{ts.tv_sec} * 1000000 + ts.tv_nsec / 1000;
}
SystemClock* SystemClock::Default() {
  static SystemClock clock;
  return &clock;
}

}  // namespace trove
