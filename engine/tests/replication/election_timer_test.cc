#include "election_timer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

namespace rolis::replication {
namespace {

using std::chrono::milliseconds;

constexpr milliseconds kTimeout{300};
constexpr milliseconds kLook{10};

// Looks every 10 ms while the leader is heard at every look for `alive`,
// then goes on looking with the leader silent: how long after the leader's
// last contact the member stands.
milliseconds GapAfterLeaderDies(uint64_t seed, int alive_looks) {
  SteadyClock::time_point now{};
  ElectionTimer timer(kTimeout, seed, now);
  SteadyClock::time_point contact = now;
  for (int i = 0; i < alive_looks; i++) {
    now += kLook;
    contact = now;
    EXPECT_FALSE(timer.Due(now, contact, false)) << "stood while the leader was heard, look " << i;
  }
  for (int i = 0; i < 1000; i++) {
    now += kLook;
    if (timer.Due(now, contact, false)) return std::chrono::duration_cast<milliseconds>(now - contact);
  }
  ADD_FAILURE() << "never stood after the leader went silent";
  return milliseconds::max();
}

TEST(ElectionTimer, StandsBetweenOneAndTwoTimeoutsAfterTheLastContact) {
  for (uint64_t seed = 1; seed <= 50; seed++) {
    milliseconds gap = GapAfterLeaderDies(seed, 100);
    EXPECT_GE(gap, kTimeout) << "seed " << seed;
    EXPECT_LE(gap, 2 * kTimeout + kLook) << "seed " << seed;
  }
}

// The split-vote bug: drawing the random part at every look and keeping the
// latest deadline put every member near 2 x timeout after a long-lived
// leader, so two members stood together.
TEST(ElectionTimer, AfterALongLivedLeaderTheWaitsStaySpreadOverTheRange) {
  std::vector<milliseconds> gaps;
  for (uint64_t seed = 1; seed <= 200; seed++) gaps.push_back(GapAfterLeaderDies(seed, 500));
  std::sort(gaps.begin(), gaps.end());
  milliseconds median = gaps[gaps.size() / 2];
  EXPECT_GT(median, kTimeout + kTimeout / 4);
  EXPECT_LT(median, kTimeout + 3 * kTimeout / 4);
  size_t near_the_top = std::count_if(gaps.begin(), gaps.end(), [](milliseconds g) { return g > 2 * kTimeout - kTimeout / 10; });
  EXPECT_LT(near_the_top, gaps.size() / 4) << "waits bunch at the end of the range";
}

TEST(ElectionTimer, ALeaderOrACatchingUpMemberNeverStandsAndWaitsAgainAfter) {
  SteadyClock::time_point start{};
  ElectionTimer timer(kTimeout, 7, start);
  SteadyClock::time_point now = start;
  for (int i = 0; i < 200; i++) {
    now += kLook;
    EXPECT_FALSE(timer.Due(now, start, true));  // no contact since start: exempt all the same
  }
  SteadyClock::time_point exempt_until = now;
  bool stood = false;
  while (!stood) {
    now += kLook;
    stood = timer.Due(now, start, false);
    ASSERT_LE(now - exempt_until, 2 * kTimeout + kLook) << "never stood";
  }
  EXPECT_GE(now - exempt_until, kTimeout + timer.random_part());
}

TEST(ElectionTimer, EachWaitDrawsItsOwnRandomPart) {
  ElectionTimer timer(kTimeout, 11, SteadyClock::time_point{});
  std::vector<milliseconds> parts;
  for (int i = 0; i < 20; i++) {
    timer.Restart(SteadyClock::time_point{} + i * kTimeout);
    EXPECT_GE(timer.random_part(), milliseconds(0));
    EXPECT_LE(timer.random_part(), kTimeout);
    parts.push_back(timer.random_part());
  }
  std::sort(parts.begin(), parts.end());
  EXPECT_GT(std::unique(parts.begin(), parts.end()) - parts.begin(), 10);
}

}  // namespace
}  // namespace rolis::replication
