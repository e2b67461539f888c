// Steps 2-4 of the failover protocol (docs/replication.md), one rule per test.
#include "failover_plan.h"

#include <gtest/gtest.h>

namespace rolis::replication {
namespace {

AcceptedSlot Txns(uint64_t index, uint64_t ballot, uint64_t epoch, uint64_t ts) {
  return {index, ballot, SlotValue{BatchKind::kTxns, epoch, ts, ts}};
}
AcceptedSlot Barrier(uint64_t index, uint64_t ballot, uint64_t epoch) {
  return {index, ballot, SlotValue{BatchKind::kBarrier, epoch, 0, 0}};
}
AcceptedSlot Noop(uint64_t index, uint64_t ballot) {
  return {index, ballot, SlotValue{BatchKind::kNoop, ballot, 0, 0}};
}

TEST(FailoverPlan, MergeKeepsTheValueOfTheHighestBallotPerSlot) {
  auto merged = MergeByHighestBallot({{Txns(0, 1, 1, 5), Txns(1, 1, 1, 7)}, {Txns(1, 2, 1, 9)}});
  ASSERT_EQ(merged.size(), 2u);
  EXPECT_EQ(merged[0].value.last_ts, 5u);
  EXPECT_EQ(merged[1].ballot, 2u);
  EXPECT_EQ(merged[1].value.last_ts, 9u);
}

TEST(FailoverPlan, ReachStopsAtAHole) {
  EpochRecord decided{1, {}};
  EXPECT_EQ(StreamReach({Txns(0, 1, 1, 5), Txns(2, 1, 1, 9)}, 0, decided), (LogKey{1, 5}));
}

TEST(FailoverPlan, ReachStopsAtAnEntryStaleAfterABarrier) {
  // Epoch 2's barrier at slot 1; a deposed epoch-1 leader's batch at slot 2
  // (ballot 1) was never written by epoch 2's leader.
  EpochRecord decided{2, {{1, 5}}};
  auto merged = std::vector<AcceptedSlot>{Txns(0, 2, 1, 5), Barrier(1, 2, 2), Txns(2, 1, 2, 8)};
  EXPECT_EQ(StreamReach(merged, 0, decided), (LogKey{1, 5}));
  merged[2].ballot = 2;  // written by epoch 2's leader: valid
  EXPECT_EQ(StreamReach(merged, 0, decided), (LogKey{2, 8}));
}

TEST(FailoverPlan, VoidedEntryRaisesReachToTheCut) {
  EpochRecord decided{2, {{1, 5}}};
  // (1,7) is voided by the cut at 5, but proves the stream held epoch 1 up to 5.
  EXPECT_EQ(StreamReach({Txns(0, 2, 1, 3), Txns(1, 2, 1, 7), Barrier(2, 2, 2)}, 0, decided), (LogKey{1, 5}));
}

TEST(FailoverPlan, EntriesOfAnEpochThatDidNotSurviveNeitherCountNorStopTheWalk) {
  EpochRecord decided{3, {{1, 5}}};  // epoch 2 did not survive
  auto merged = std::vector<AcceptedSlot>{Txns(0, 3, 1, 4), Txns(1, 3, 2, 9), Barrier(2, 3, 3), Txns(3, 3, 3, 11)};
  EXPECT_EQ(StreamReach(merged, 0, decided), (LogKey{3, 11}));
}

TEST(FailoverPlan, WatermarkIsTheMinimumReachAndTheCutFollowsIt) {
  EpochRecord decided{1, {}};
  // Two replicas of the quorum, two streams.
  std::vector<std::vector<std::vector<AcceptedSlot>>> replies = {
      {{Txns(0, 1, 1, 2), Txns(1, 1, 1, 6)}, {Txns(0, 1, 1, 3)}},
      {{Txns(0, 1, 1, 2)}, {Txns(0, 1, 1, 3), Txns(1, 1, 1, 8)}},
  };
  FailoverPlan plan = PlanFailover(2, decided, replies, {0, 0});
  EXPECT_EQ(plan.watermark, (LogKey{1, 6}));
  EXPECT_EQ(plan.record.epoch, 2u);
  EXPECT_EQ(plan.record.cut, (std::map<uint64_t, uint64_t>{{1, 6}}));
  // (1,8) is above the cut: it is re-proposed as found (never overwritten) but void.
  EXPECT_FALSE(IsValid(plan.record, LogKey{1, 8}));
  EXPECT_TRUE(IsValid(plan.record, LogKey{1, 6}));
}

TEST(FailoverPlan, ReproposesAsFoundFillsHolesWithNoopsAndEndsWithABarrier) {
  EpochRecord decided{1, {}};
  std::vector<std::vector<std::vector<AcceptedSlot>>> replies = {{{Txns(0, 1, 1, 2), Txns(2, 1, 1, 6)}}};
  FailoverPlan plan = PlanFailover(2, decided, replies, {0});
  ASSERT_EQ(plan.repropose[0].size(), 4u);
  EXPECT_EQ(plan.repropose[0][0].value.last_ts, 2u);
  EXPECT_EQ(plan.repropose[0][1].value.kind, BatchKind::kNoop);
  EXPECT_EQ(plan.repropose[0][2].value.last_ts, 6u);
  EXPECT_EQ(plan.repropose[0][3].value.kind, BatchKind::kBarrier);
  for (const auto& slot : plan.repropose[0]) EXPECT_EQ(slot.ballot, 2u);
  // The hole at slot 1 stops the walk: (1,6) is beyond G' and void.
  EXPECT_EQ(plan.watermark, (LogKey{1, 2}));
}

TEST(FailoverPlan, AnEpochAboveTheWatermarkIsDropped) {
  // Epoch 2 opened but wrote nothing on stream 1 past its barrier.
  EpochRecord decided{2, {{1, 5}}};
  std::vector<std::vector<std::vector<AcceptedSlot>>> replies = {
      {{Txns(0, 2, 1, 5), Barrier(1, 2, 2), Txns(2, 2, 2, 9)}, {Txns(0, 2, 1, 4), Barrier(1, 2, 2)}},
  };
  FailoverPlan plan = PlanFailover(3, decided, replies, {0, 0});
  EXPECT_EQ(plan.watermark, (LogKey{1, 4}));
  EXPECT_EQ(plan.record.cut, (std::map<uint64_t, uint64_t>{{1, 4}}));
  EXPECT_FALSE(IsValid(plan.record, LogKey{2, 9}));
}

TEST(FailoverPlan, NoopsAreWalkedPast) {
  EpochRecord decided{2, {{1, 5}}};
  EXPECT_EQ(StreamReach({Noop(0, 2), Barrier(1, 2, 2), Txns(2, 2, 2, 4)}, 0, decided), (LogKey{2, 4}));
}

}  // namespace
}  // namespace rolis::replication
