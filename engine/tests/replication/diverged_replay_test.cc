// A follower whose store no longer holds what the log says it holds (a
// patch that does not apply: docs/replication.md, "Patches") marks itself
// diverged and catches up by state transfer, without stopping the cluster.
// The divergence is made by hand: while the follower is partitioned away,
// the test writes a tombstone into its engine between the patch's base and
// the patch, as a bug would; what is tested is the member's reaction.
#include <gtest/gtest.h>

#include "cluster_harness.h"

namespace rolis::replication::testing {
namespace {

TEST(DivergedReplay, AFollowerWhosePatchDoesNotApplyCatchesUpByStateTransfer) {
  Cluster c({});
  ASSERT_TRUE(c.Failover(1).ok());
  ASSERT_EQ(c.Put(1, 0, "before", "1"), Cluster::Ack::kAcked);
  ASSERT_TRUE(c.WaitReplicated(1));
  const uint64_t transfers_before = c.r(2).GetStatus().state_transfers;

  c.net().Partition({2});
  const std::string v1(64, 'a');
  std::string v2 = v1;
  v2[8] = 'b';
  Table* table = c.m(1).table;
  const uint64_t ts1 = c.Run(1, 0, [&](Transaction* x) { return x->Put(table, "k", v1); });
  ASSERT_NE(ts1, 0u);
  ASSERT_TRUE(Cluster::WaitUntil([&] { return c.r(1).WatermarkCovers(ts1); }, 5s)) << c.Describe();
  const uint64_t patches_before = c.m(1).hook->patches.load();
  ASSERT_EQ(c.Put(1, 0, "k", v2), Cluster::Ack::kAcked);
  ASSERT_EQ(c.m(1).hook->patches.load(), patches_before + 1) << "v2 went whole, not as a patch against v1";

  // Member 2's store, by hand: "k" deleted at a key between v1 and v2. v1
  // is then older than what it holds (skipped, last writer wins) and v2's
  // patch finds no value to apply to.
  ReplicatedWrite tombstone;
  tombstone.write.table = c.m(2).table->id();
  tombstone.write.key = "k";
  tombstone.write.is_delete = true;
  tombstone.order_epoch = c.r(1).GetStatus().epoch;
  tombstone.order_ts = ts1 + 1;
  {
    auto w = c.m(2).db->RegisterWorker();
    ASSERT_TRUE(c.m(2).db->ApplyReplicatedBatch(w.get(), std::span<const ReplicatedWrite>(&tombstone, 1)).ok());
  }

  c.net().Heal();
  ASSERT_TRUE(Cluster::WaitUntil([&] { return c.r(2).GetStatus().state_transfers > transfers_before; }, 10s))
      << "member 2 did not notice that the patch does not apply\n" << c.Describe();
  ASSERT_TRUE(Cluster::WaitUntil([&] { return c.r(2).role() == Role::kFollower; }, 10s)) << c.Describe();
  // The cluster kept serving, and member 2 ends with the leader's store.
  ASSERT_EQ(c.Put(1, 1, "after", "1"), Cluster::Ack::kAcked);
  EXPECT_TRUE(c.WaitReplicated(1)) << c.Describe();
  EXPECT_EQ(c.Read(2, "k"), v2);
  EXPECT_EQ(c.Read(2, "after"), "1");
  EXPECT_FALSE(c.r(2).GetStatus().dirty);
}

}  // namespace
}  // namespace rolis::replication::testing
