// Membership changes end to end inside one process (real engines and
// Replicas on the fault-injecting network): 3 → 4 → 5 and back, with a
// leader crash in the 5-member configuration. Each test names the change
// and the invariant.
#include <gtest/gtest.h>

#include "cluster_harness.h"

namespace rolis::replication::testing {
namespace {

std::vector<MemberAddr> Members(std::initializer_list<uint32_t> ids) {
  std::vector<MemberAddr> out;
  for (uint32_t id : ids) out.push_back(MemberAddr{id, "member-" + std::to_string(id)});
  return out;
}

TEST(MembershipCluster, ThreeToFiveToThreeOneAtATimeKeepsEveryAcknowledgedWrite) {
  ClusterOptions o;
  o.members = 5;
  o.initial = 3;
  Cluster c(o);
  ASSERT_TRUE(c.Failover(1).ok()) << c.Describe();
  int n = 0;
  auto put = [&](uint32_t leader, int count) {
    for (int i = 0; i < count; i++, n++) {
      ASSERT_EQ(c.Put(leader, n % 2, "k" + std::to_string(n), "v" + std::to_string(n)), Cluster::Ack::kAcked)
          << n << "\n" << c.Describe();
    }
  };
  put(1, 50);
  DecidedPtr now;
  // Member 4 is not running: it cannot catch up, nothing changes.
  Status s = c.r(1).ChangeMembership(Members({1, 2, 3, 4}), 300ms, &now);
  EXPECT_EQ(s.code(), StatusCode::kInternal) << s.ToString();
  EXPECT_NE(s.message().find("did not catch up"), std::string::npos) << s.message();
  EXPECT_EQ(MemberIds(c.r(1).Configuration()), (std::vector<uint32_t>{1, 2, 3}));

  c.Join(4);
  ASSERT_TRUE(c.r(1).ChangeMembership(Members({1, 2, 3, 4}), 10s, &now).ok()) << c.Describe();
  EXPECT_EQ(now->config, 1u);
  put(1, 50);
  c.Join(5);
  // Two at once is refused; then one at a time.
  EXPECT_EQ(c.r(1).ChangeMembership(Members({1, 2, 3, 4, 5, 6}), 10s, &now).code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(c.r(1).ChangeMembership(Members({1, 2, 3, 4, 5}), 10s, &now).ok()) << c.Describe();
  EXPECT_EQ(now->config, 2u);
  // The same membership again changes nothing.
  ASSERT_TRUE(c.r(1).ChangeMembership(Members({1, 2, 3, 4, 5}), 10s, &now).ok());
  EXPECT_EQ(now->config, 2u);
  put(1, 50);
  ASSERT_TRUE(c.WaitReplicated(1)) << c.Describe();
  EXPECT_EQ(c.Dump(5).size(), static_cast<size_t>(n)) << "the new member holds everything";
  EXPECT_EQ(MemberIds(c.r(5).GetStatus().members), (std::vector<uint32_t>{1, 2, 3, 4, 5}));

  // The leader of the 5-member configuration crashes; the new members
  // count towards the majority of the failover (2 of the old 3 alone would
  // not be a majority of 5, but 2,3,4,5 are).
  c.Crash(1);
  ASSERT_TRUE(c.Failover(2).ok()) << c.Describe();
  for (int i = 0; i < n; i++) {
    EXPECT_EQ(c.Read(2, "k" + std::to_string(i)), "v" + std::to_string(i)) << "acknowledged write " << i << " lost";
  }
  put(2, 20);
  EXPECT_EQ(c.r(2).ChangeMembership(Members({1, 3, 4, 5}), 10s, &now).code(), StatusCode::kFailedPrecondition)
      << "the leader does not remove itself";
  ASSERT_TRUE(c.r(2).ChangeMembership(Members({1, 2, 3, 4}), 10s, &now).ok()) << c.Describe();
  ASSERT_TRUE(c.r(2).ChangeMembership(Members({1, 2, 3}), 10s, &now).ok()) << c.Describe();
  EXPECT_EQ(now->config, 4u);
  // A removed member does not vote and cannot be a candidate.
  ASSERT_TRUE(Cluster::WaitUntil([&] { return MemberIds(c.r(4).Configuration()) == std::vector<uint32_t>{1, 2, 3}; }, 2000ms));
  PrepareResult pr;
  Status p = c.r(4).PrepareFailover(100, *c.r(4).GetStatus().decided, &pr);
  EXPECT_EQ(p.code(), StatusCode::kFailedPrecondition) << p.ToString();
  EXPECT_EQ(c.r(2).role(), Role::kLeader);
  // With 4 and 5 gone, 2 and 3 are a majority of {1,2,3}: writes go on.
  c.Crash(4);
  c.Crash(5);
  put(2, 20);
  for (int i = 0; i < n; i++) ASSERT_EQ(c.Read(2, "k" + std::to_string(i)), "v" + std::to_string(i)) << i;
}

}  // namespace
}  // namespace rolis::replication::testing
