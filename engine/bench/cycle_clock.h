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
// The wall clock is read between two tick readings, and the pair kept from
// the try whose two tick readings were closest: on a VM the first
// instructions after a sleep are often held up (10% of 1,000 pairs read
// right after a 20 ms sleep on the Intel CI VM had more than 10 µs between
// their readings, one 320 ms), and a pair read across such a stop skews
// every conversion made from it by the stop's length. A 20 ms calibration
// once paced `--rate=2000` at 24,000 txn/s that way.
struct ClockPoint {
  uint64_t ticks;
  std::chrono::steady_clock::time_point wall;
  static ClockPoint Now() {
    ClockPoint best{};
    uint64_t best_gap = UINT64_MAX;
    for (int attempt = 0; attempt < 8; ++attempt) {
      const uint64_t before = CycleNow();
      const auto wall = std::chrono::steady_clock::now();
      const uint64_t after = CycleNow();
      if (after - before < best_gap) {
        best_gap = after - before;
        best = {before + (after - before) / 2, wall};
      }
    }
    return best;
  }
};

inline double NanosPerTick(const ClockPoint& a, const ClockPoint& b) {
  const double ns = std::chrono::duration<double, std::nano>(b.wall - a.wall).count();
  const double ticks = static_cast<double>(b.ticks - a.ticks);
  return ticks > 0 ? ns / ticks : 1.0;
}

}  // namespace rolis::bench
