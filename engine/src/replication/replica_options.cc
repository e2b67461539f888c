#include "replica_options.h"

#include <time.h>

namespace rolis::replication {

const char* DeciderName(Decider d) { return d == Decider::kOperator ? "operator" : "control-stream"; }

uint64_t MonotonicNanos() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

TsClock MonotonicTsClock(uint64_t before, uint64_t after) {
  TsClock c;
  // A worker's next ts is at least (engine ticks << 8) and engine ticks are
  // at least our ticks from the later base.
  c.floor = [after] {
    uint64_t now = MonotonicNanos();
    return now > after ? (now - after) << 8 : 0;
  };
  // Every ts assigned so far is below ((engine ticks + 1) << 8), and engine
  // ticks are at most our ticks from the earlier base (plus one: the engine
  // subtracts one from its base).
  c.ceiling = [before] { return ((MonotonicNanos() - before + 2) << 8) | 0xFF; };
  return c;
}

}  // namespace rolis::replication
