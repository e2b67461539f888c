// What the metrics read from ReplicaStatus (docs/operations.md, "Metrics"):
// when the leader's clock read G, on this host's monotonic clock (exact on
// the leader, estimated on a follower), and which streams a member has
// replayed up to G.
#include <gtest/gtest.h>

#include "cluster_harness.h"

namespace rolis::replication::testing {
namespace {

int64_t Now() { return static_cast<int64_t>(MonotonicNanos()); }

TEST(StatusClock, EveryMemberKnowsWhenTheLeadersClockReadG) {
  Cluster c({});
  ASSERT_TRUE(c.Failover(1).ok());
  for (int i = 0; i < 100; i++) ASSERT_EQ(c.Put(1, i % 2, "k" + std::to_string(i), "v"), Cluster::Ack::kAcked);
  ASSERT_TRUE(c.WaitReplicated(1));
  // The members share this process's clock: every estimate is of a moment
  // in the last second (an idle leader moves G every idle heartbeat).
  for (uint32_t id : {1u, 2u, 3u}) {
    ASSERT_TRUE(Cluster::WaitUntil([&] { return c.r(id).GetStatus().watermark_mono_ns != 0; }, 5s)) << id;
    const int64_t at = c.r(id).GetStatus().watermark_mono_ns;
    EXPECT_LE(at, Now()) << "member " << id << ": G read in the future";
    EXPECT_GT(at, Now() - 1'000'000'000) << "member " << id << ": G more than 1 s old";
  }
  // Every stream of a follower is replayed up to G once it caught up.
  ASSERT_TRUE(Cluster::WaitUntil(
      [&] {
        for (const StreamStatus& s : c.r(2).GetStatus().streams) {
          if (!s.through_watermark) return false;
        }
        return true;
      },
      5s));
  for (const StreamStatus& s : c.r(1).GetStatus().streams) EXPECT_TRUE(s.through_watermark) << "the leader's";

  // Member 3 hears nothing from the leader: its G, and when it was read,
  // stay where they were while the leader's move on.
  c.net().Cut(1, 3, true);
  const int64_t cut = Now();
  std::this_thread::sleep_for(700ms);
  EXPECT_LT(c.r(3).GetStatus().watermark_mono_ns, cut) << "a cut-off follower's G looks fresh";
  EXPECT_GT(c.r(1).GetStatus().watermark_mono_ns, cut) << "the leader's G stopped";
  c.net().Heal();
  ASSERT_TRUE(Cluster::WaitUntil([&] { return c.r(3).GetStatus().watermark_mono_ns > cut; }, 5s))
      << "member 3's G did not move after the heal";
}

}  // namespace
}  // namespace rolis::replication::testing
