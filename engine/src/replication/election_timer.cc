#include "election_timer.h"

#include <algorithm>

namespace rolis::replication {

ElectionTimer::ElectionTimer(std::chrono::milliseconds timeout, uint64_t seed, SteadyClock::time_point now)
    : timeout_(timeout), rng_(seed) {
  Restart(now);
}

std::chrono::milliseconds ElectionTimer::Draw() {
  return std::chrono::milliseconds(rng_() % (static_cast<uint64_t>(timeout_.count()) + 1));
}

bool ElectionTimer::Due(SteadyClock::time_point now, SteadyClock::time_point last_contact, bool exempt) {
  if (exempt) {
    deadline_ = now + timeout_ + random_part_;
    return false;
  }
  deadline_ = std::max(deadline_, last_contact + timeout_ + random_part_);
  return now >= deadline_;
}

void ElectionTimer::Restart(SteadyClock::time_point now) {
  random_part_ = Draw();
  deadline_ = now + timeout_ + random_part_;
}

}  // namespace rolis::replication
