// A cheap clock for per-transaction latency: the TSC on x86 (constant rate on
// every machine we run on), steady_clock elsewhere. Tick values are converted
// to time once, at the end, from the ticks and wall time of the whole run.
#pragma once

#include <chrono>
#include <cstdint>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

namespace rolis::bench {

inline uint64_t CycleNow() {
#if defined(__x86_64__) || defined(__i386__)
  return __rdtsc();
#else
  return static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
#endif
}

// Pairs a tick reading with steady_clock, to convert ticks to nanoseconds.
struct ClockPoint {
  uint64_t ticks;
  std::chrono::steady_clock::time_point wall;
  static ClockPoint Now() { return {CycleNow(), std::chrono::steady_clock::now()}; }
};

inline double NanosPerTick(const ClockPoint& a, const ClockPoint& b) {
  const double ns = std::chrono::duration<double, std::nano>(b.wall - a.wall).count();
  const double ticks = static_cast<double>(b.ticks - a.ticks);
  return ticks > 0 ? ns / ticks : 1.0;
}

}  // namespace rolis::bench
