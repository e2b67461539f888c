// When a member of the built-in election (--election=builtin) stands.
//
// A member stands once it has heard nothing from an open leader for the
// election timeout plus a random part (0 to one timeout). The random part
// is drawn once per wait: drawn anew at every look and the latest deadline
// kept, it ends near the top of the range on every member, so members
// stood together and split the vote (docs/benchmarks.md, "The built-in
// election's random wait").
#pragma once

#include <chrono>
#include <cstdint>
#include <random>

#include "types.h"

namespace rolis::replication {

class ElectionTimer {
 public:
  ElectionTimer(std::chrono::milliseconds timeout, uint64_t seed, SteadyClock::time_point now);

  // A look at the clock: true when the member should stand now. `exempt`
  // (leading, or catching up) starts the wait again from `now`;
  // `last_contact` is when the member last heard an open leader (or
  // promised another candidate).
  bool Due(SteadyClock::time_point now, SteadyClock::time_point last_contact, bool exempt);
  // After standing, won or lost: a new wait with a new random part.
  void Restart(SteadyClock::time_point now);

  SteadyClock::time_point deadline() const { return deadline_; }
  std::chrono::milliseconds random_part() const { return random_part_; }

 private:
  std::chrono::milliseconds Draw();

  std::chrono::milliseconds timeout_;
  std::mt19937_64 rng_;
  std::chrono::milliseconds random_part_{0};
  SteadyClock::time_point deadline_;
};

}  // namespace rolis::replication
