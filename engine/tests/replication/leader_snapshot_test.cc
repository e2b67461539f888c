// State transfer when no caught-up follower can give a snapshot: the leader
// gives one (docs/replication.md, "Members that lose their memory").
#include <gtest/gtest.h>

#include "cluster_harness.h"

namespace rolis::replication::testing {
namespace {

// A deposed leader whose last commits did not survive the new epoch's cut
// replaces its store by a state transfer. With the third member down, no
// follower can give it a snapshot: the leader does, and the deposed member,
// which kept voting, counts its own votes in the majority it adopts. Then a
// member restarted empty takes its snapshot from that follower, not from
// the leader.
TEST(LeaderSnapshot, ADeposedLeaderCatchesUpFromTheLeaderWhileTheOtherMemberIsDown) {
  Cluster c({});
  ASSERT_TRUE(c.Failover(1).ok());
  for (int i = 0; i < 20; i++) ASSERT_EQ(c.Put(1, i % 2, "k" + std::to_string(i), "v1"), Cluster::Ack::kAcked);
  c.net().Partition({1});
  // The old leader commits locally; nothing may acknowledge it.
  for (int i = 0; i < 4; i++) {
    EXPECT_NE(c.Put(1, i % 2, "stale" + std::to_string(i), "v", 100ms), Cluster::Ack::kAcked);
  }
  ASSERT_TRUE(c.FailoverRetrying(2).ok()) << c.Describe();
  for (int i = 0; i < 10; i++) ASSERT_EQ(c.Put(2, i % 2, "k" + std::to_string(i), "v2"), Cluster::Ack::kAcked);
  c.Crash(3);
  c.net().Heal();
  // It keeps voting while it catches up: the leader's writes go on with it.
  ASSERT_EQ(c.Put(2, 0, "during", "1"), Cluster::Ack::kAcked) << c.Describe();
  ASSERT_TRUE(Cluster::WaitUntil([&] { return c.r(1).role() == Role::kFollower; }, 15s)) << c.Describe();
  EXPECT_EQ(c.r(1).GetStatus().state_transfers, 1u);
  EXPECT_EQ(c.r(2).GetStatus().leader_snapshots, 1u);
  ASSERT_EQ(c.Put(2, 1, "after", "1"), Cluster::Ack::kAcked);
  ASSERT_TRUE(c.WaitReplicated(2)) << c.Describe();
  auto dump = c.Dump(1);
  EXPECT_EQ(dump, c.Dump(2));
  EXPECT_FALSE(dump.count("stale0")) << "a commit the new epoch discarded is still there";
  EXPECT_EQ(dump["k0"], "v2");
  EXPECT_EQ(dump["k15"], "v1");
  EXPECT_EQ(dump.count("during") + dump.count("after"), 2u);

  // A member restarted empty: member 1 is a caught-up follower now, so the
  // leader is not asked.
  c.Restart(3);
  ASSERT_TRUE(Cluster::WaitUntil([&] { return c.r(3).role() == Role::kFollower; }, 15s)) << c.Describe();
  EXPECT_EQ(c.r(2).GetStatus().leader_snapshots, 1u);
  ASSERT_EQ(c.Put(2, 0, "last", "1"), Cluster::Ack::kAcked);
  ASSERT_TRUE(c.WaitReplicated(2)) << c.Describe();
  EXPECT_EQ(c.Dump(3), c.Dump(2));
}

}  // namespace
}  // namespace rolis::replication::testing
