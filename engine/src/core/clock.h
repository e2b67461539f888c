// The commit-timestamp clock: CLOCK_MONOTONIC in nanoseconds, which Linux
// keeps monotonic and comparable across cores (invariant TSC under vDSO).
#pragma once

#include <time.h>

#include <cstdint>

namespace rolis::core {

inline uint64_t MonotonicNanos() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace rolis::core
