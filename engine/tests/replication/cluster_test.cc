// Replication end to end inside one process: real engines, Replicas and a
// fault-injecting network. Each test names the fault and the invariant.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <set>

#include "cluster_harness.h"

namespace rolis::replication::testing {
namespace {

TEST(Cluster, ElectsALeaderFromTheEmptyRecordAndReplicatesToEveryFollower) {
  Cluster c({});
  ASSERT_TRUE(c.Failover(1).ok());
  EXPECT_EQ(c.r(1).role(), Role::kLeader);
  for (int i = 0; i < 200; i++) {
    ASSERT_EQ(c.Put(1, i % 2, "k" + std::to_string(i), "v" + std::to_string(i)), Cluster::Ack::kAcked) << i;
  }
  EXPECT_TRUE(c.WaitReplicated(1));
  EXPECT_EQ(c.Dump(2).size(), 200u);
  EXPECT_EQ(c.r(2).leader_client_address(), "member-1");
  EXPECT_EQ(c.r(2).GetStatus().epoch, 1u);
}

// top -H, perf and gdb show what each thread is: the engine's epoch thread
// and every Replica's loops carry their names.
TEST(Cluster, EveryBackgroundThreadIsNamed) {
  Cluster c({});
  ASSERT_TRUE(c.Failover(1).ok());
  std::multiset<std::string> names;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(task.path() / "comm");
    std::string name;
    if (std::getline(comm, name)) names.insert(name);
  }
  // Three members, each with its own engine.
  for (const char* name : {"rolis-epochs", "rolis-lead", "rolis-replay", "rolis-catch-up"}) {
    EXPECT_EQ(names.count(name), 3u) << name;
  }
}

TEST(Cluster, AnIdleStreamDoesNotHoldBackTheWatermark) {
  Cluster c({});
  ASSERT_TRUE(c.Failover(1).ok());
  // Only stream 0 commits; stream 1's empty batches keep G moving.
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 50; i++) ASSERT_EQ(c.Put(1, 0, "k" + std::to_string(i), "v"), Cluster::Ack::kAcked);
  auto per_txn = (std::chrono::steady_clock::now() - start) / 50;
  EXPECT_LT(per_txn, 50ms);
}

TEST(Cluster, PartitionedLeaderAcknowledgesNothingUntilAMajorityAccepts) {
  Cluster c({});
  ASSERT_TRUE(c.Failover(1).ok());
  ASSERT_EQ(c.Put(1, 0, "before", "1"), Cluster::Ack::kAcked);
  c.net().Partition({1});
  EXPECT_EQ(c.Put(1, 0, "during", "1", 300ms), Cluster::Ack::kTimeout);
  c.net().Heal();
  // The waiting transaction is acknowledged once the accepts get through.
  ASSERT_TRUE(Cluster::WaitUntil([&] { return c.Read(2, "during").has_value(); }, 5000ms));
  EXPECT_EQ(c.Put(1, 0, "after", "1"), Cluster::Ack::kAcked);
}

// Flow control: with the leader cut off, its stream's ring of closed
// batches fills and the worker waits; the wait is counted (rolisd exports
// it as rolis_replication_flow_control_wait_seconds_total).
TEST(Cluster, AWorkerBlockedByFlowControlIsCounted) {
  ClusterOptions o;
  o.batch_size = 1;
  o.max_inflight = 2;
  Cluster c(o);
  ASSERT_TRUE(c.Failover(1).ok());
  ASSERT_EQ(c.Put(1, 0, "before", "1"), Cluster::Ack::kAcked);
  const uint64_t before = c.r(1).flow_control_wait_nanos();
  c.net().Partition({1});
  std::atomic<int> committed{0};
  std::thread writer([&] {
    Table* table = c.m(1).table;
    for (int i = 0; i < 5000 && committed.load() < 5000; i++) {
      if (c.Run(1, 0, [&](Transaction* x) { return x->Put(table, "k" + std::to_string(i), "v"); }) != 0) {
        committed.fetch_add(1);
      }
    }
  });
  std::this_thread::sleep_for(400ms);
  const int during = committed.load();
  c.net().Heal();
  writer.join();
  EXPECT_LT(during, 5000) << "the worker never waited while no majority took its batches";
  EXPECT_GE(c.r(1).flow_control_wait_nanos() - before, uint64_t{100'000'000}) << c.Describe();
}

TEST(Cluster, FollowersNeverReplayPastTheLeadersWatermark) {
  Cluster c({});
  ASSERT_TRUE(c.Failover(1).ok());
  ASSERT_EQ(c.Put(1, 0, "a", "1"), Cluster::Ack::kAcked);
  ASSERT_TRUE(c.WaitReplicated(1));
  // Followers receive the accepts but their answers are lost: the leader's G
  // cannot pass the new batch, so no follower may apply it.
  c.net().Cut(2, 1, true);
  c.net().Cut(3, 1, true);
  EXPECT_EQ(c.Put(1, 0, "b", "1", 300ms), Cluster::Ack::kTimeout);
  std::this_thread::sleep_for(100ms);
  EXPECT_FALSE(c.Read(2, "b").has_value());
  EXPECT_FALSE(c.Read(3, "b").has_value());
  ReplicaStatus st = c.r(2).GetStatus();
  EXPECT_LE(st.replayed, st.watermark);
}

TEST(Cluster, LeaderCrashThenFailoverKeepsEveryAcknowledgedTransaction) {
  Cluster c({});
  ASSERT_TRUE(c.Failover(1).ok());
  std::set<std::string> acked;
  for (int i = 0; i < 300; i++) {
    std::string k = "k" + std::to_string(i);
    if (c.Put(1, i % 2, k, "v") == Cluster::Ack::kAcked) acked.insert(k);
  }
  c.Crash(1);
  ASSERT_TRUE(c.Failover(2).ok());
  for (const auto& k : acked) EXPECT_TRUE(c.Read(2, k).has_value()) << k;
  ASSERT_EQ(c.Put(2, 0, "new", "1"), Cluster::Ack::kAcked);
  EXPECT_TRUE(c.WaitReplicated(2));
  for (const auto& k : acked) EXPECT_TRUE(c.Read(3, k).has_value()) << k;
}

// Two built-in elections may prepare the same epoch at once (CI saw it).
// Ballots are unique per proposer: the second candidate of an epoch is
// refused by every member that promised it to the first (ABORTED), stays a
// follower, and follows the winner once it opens.
TEST(Cluster, ASecondCandidateOfOneEpochIsRefusedAndFollowsTheWinner) {
  Cluster c({});
  ASSERT_TRUE(c.Failover(1).ok());
  ASSERT_EQ(c.Put(1, 0, "before", "1"), Cluster::Ack::kAcked);
  c.Crash(1);
  const Decided prev = *c.r(2).GetStatus().decided;
  const uint64_t e = prev.record.epoch + 1;
  PrepareResult p2, p3;
  ASSERT_TRUE(c.r(2).PrepareFailover(e, prev, &p2).ok()) << c.Describe();
  Status s3 = c.r(3).PrepareFailover(e, prev, &p3);
  EXPECT_EQ(s3.code(), StatusCode::kAborted) << s3.ToString();
  EXPECT_NE(s3.message().find("promised to member 2"), std::string::npos) << s3.ToString();
  EXPECT_NE(c.r(3).role(), Role::kCandidate);
  bool decided = false;
  DecidedPtr current;
  ASSERT_TRUE(c.r(2).DecideEpoch(p2.proposed, prev.record.epoch, &decided, &current).ok());
  ASSERT_TRUE(decided);
  LogKey g;
  ASSERT_TRUE(c.r(2).OpenEpoch(p2.proposed, &g).ok()) << c.Describe();
  ASSERT_TRUE(Cluster::WaitUntil([&] { return c.r(3).role() == Role::kFollower; }, 5000ms)) << c.Describe();
  ASSERT_EQ(c.Put(2, 0, "after", "1"), Cluster::Ack::kAcked);
  ASSERT_TRUE(c.WaitReplicated(2)) << c.Describe();
  EXPECT_TRUE(c.Read(3, "before").has_value());
  EXPECT_TRUE(c.Read(3, "after").has_value());
}

// One decider per cluster, control stream: a record that was not decided
// on the control stream (the operator's path: Prepare, then OpenEpoch) is
// refused, by OpenEpoch and by AnnounceLeader, and nothing opens.
TEST(Cluster, UnderTheControlStreamARecordItDidNotDecideIsRefused) {
  Cluster c({});
  PrepareResult p;
  ASSERT_TRUE(c.r(1).PrepareFailover(1, Decided{}, &p).ok()) << c.Describe();
  LogKey g;
  Status open = c.r(1).OpenEpoch(p.proposed, &g);
  EXPECT_EQ(open.code(), StatusCode::kFailedPrecondition) << open.ToString();
  EXPECT_NE(open.message().find("control stream"), std::string::npos) << open.ToString();
  EXPECT_EQ(c.r(1).role(), Role::kCandidate) << "the candidacy waits for the decision";
  Status announce = c.r(2).AnnounceLeader(p.proposed, "member-1");
  EXPECT_EQ(announce.code(), StatusCode::kFailedPrecondition) << announce.ToString();
  EXPECT_FALSE(c.r(2).GetStatus().decided) << "nothing was learned";
  // Decided on the control stream, the same record opens.
  bool decided = false;
  DecidedPtr current;
  ASSERT_TRUE(c.r(1).DecideEpoch(p.proposed, 0, &decided, &current).ok());
  ASSERT_TRUE(decided);
  ASSERT_TRUE(c.r(1).OpenEpoch(p.proposed, &g).ok()) << c.Describe();
  EXPECT_TRUE(c.r(2).AnnounceLeader(p.proposed, "member-1").ok());
  ASSERT_EQ(c.Put(1, 0, "k", "v"), Cluster::Ack::kAcked);
}

// One decider per cluster, operator: DecideEpoch is refused on every
// member, and no member votes for a new epoch's record on the control
// stream; the operator's path (Prepare, its compare-and-set, OpenEpoch)
// opens.
TEST(Cluster, UnderTheOperatorDecideEpochIsRefused) {
  ClusterOptions o;
  o.decider = Decider::kOperator;
  Cluster c(o);
  PrepareResult p;
  ASSERT_TRUE(c.r(1).PrepareFailover(1, Decided{}, &p).ok()) << c.Describe();
  for (uint32_t id : c.ids()) {
    bool decided = true;
    DecidedPtr current;
    Status s = c.r(id).DecideEpoch(p.proposed, 0, &decided, &current);
    EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
    EXPECT_NE(s.message().find("operator"), std::string::npos) << s.ToString();
    EXPECT_FALSE(decided);
  }
  // A control-stream vote for a new epoch's record is refused too.
  ControlMsg vote;
  vote.kind = ControlMsg::Kind::kAccept;
  vote.from = 2;
  vote.instance = 0;
  vote.ballot = (1 << 8) | 2;
  vote.value = std::make_shared<const Decided>(p.proposed);
  for (uint32_t id : c.ids()) EXPECT_FALSE(c.r(id).HandleControl(vote).ok) << id;
  EXPECT_FALSE(c.r(1).GetStatus().decided);
  LogKey g;
  ASSERT_TRUE(c.r(1).OpenEpoch(p.proposed, &g).ok()) << c.Describe();
  ASSERT_EQ(c.Put(1, 0, "k", "v"), Cluster::Ack::kAcked);
}

TEST(Cluster, DeposedLeaderIsFencedAndCatchesUpByStateTransfer) {
  Cluster c({});
  ASSERT_TRUE(c.Failover(1).ok());
  ASSERT_EQ(c.Put(1, 0, "x", "old"), Cluster::Ack::kAcked);
  c.net().Partition({1});
  // The old leader commits locally; nothing may acknowledge it.
  std::atomic<int> acked_during{0};
  std::thread stale([&] {
    for (int i = 0; i < 20; i++) {
      if (c.Put(1, i % 2, "stale" + std::to_string(i), "v", 100ms) == Cluster::Ack::kAcked) acked_during++;
    }
  });
  ASSERT_TRUE(c.Failover(2).ok());
  ASSERT_EQ(c.Put(2, 0, "x", "new"), Cluster::Ack::kAcked);
  stale.join();
  EXPECT_EQ(acked_during.load(), 0);
  c.net().Heal();
  // It learns the new epoch, steps down, and (holding commits the new cut
  // discards) replaces its store by a state transfer.
  ASSERT_TRUE(Cluster::WaitUntil([&] { return c.r(1).role() == Role::kFollower; }, 10s))
      << RoleName(c.r(1).role());
  ASSERT_EQ(c.Put(2, 1, "y", "1"), Cluster::Ack::kAcked);
  EXPECT_TRUE(c.WaitReplicated(2));
  EXPECT_EQ(c.Read(1, "x"), "new");
  EXPECT_FALSE(c.Read(1, "stale0").has_value());
}

TEST(Cluster, FollowerRestartedEmptyRejoinsByStateTransfer) {
  Cluster c({});
  ASSERT_TRUE(c.Failover(1).ok());
  for (int i = 0; i < 100; i++) ASSERT_EQ(c.Put(1, i % 2, "k" + std::to_string(i), "v"), Cluster::Ack::kAcked);
  c.Restart(3);
  for (int i = 100; i < 150; i++) ASSERT_EQ(c.Put(1, i % 2, "k" + std::to_string(i), "v"), Cluster::Ack::kAcked);
  ASSERT_TRUE(Cluster::WaitUntil([&] { return c.r(3).role() == Role::kFollower; }, 10s));
  EXPECT_TRUE(c.WaitReplicated(1));
  EXPECT_EQ(c.Dump(3).size(), 150u);
  EXPECT_EQ(c.r(3).GetStatus().state_transfers, 1u);
  // Its votes count again: with the other follower down, 1 and 3 are a majority.
  c.Crash(2);
  EXPECT_EQ(c.Put(1, 0, "after", "1"), Cluster::Ack::kAcked);
}

TEST(Cluster, TheLeadersRetainedLogIsBoundedInBytesNotOnlyInSlots) {
  // 300 slots of ~4 KB each, far below min_retained's 4096 slots: only the
  // byte bound (64 KB, ~16 slots) lets the leader compact what every
  // follower replayed.
  ClusterOptions o;
  o.min_retained_bytes = 64 << 10;
  Cluster c(o);
  ASSERT_TRUE(c.Failover(1).ok());
  const std::string value(4000, 'v');
  for (int i = 0; i < 300; i++) ASSERT_EQ(c.Put(1, 0, "k" + std::to_string(i), value), Cluster::Ack::kAcked) << i;
  ASSERT_TRUE(c.WaitReplicated(1));
  // Once every follower has replayed everything (it reports so on its next
  // replies) each stream keeps its newest 64 KB (heartbeats count in it)
  // and fewer than compact_every slots more, which the leader compacts in
  // one go once that many can go. Keeping every slot would be ~1.2 MB.
  const uint64_t bound = o.streams * (64u << 10) + ReplicaOptions{}.compact_every * 4096u + (32u << 10);
  ASSERT_TRUE(Cluster::WaitUntil([&] { return c.r(1).GetStatus().log_bytes <= bound; }, 10s))
      << "the leader keeps " << c.r(1).GetStatus().log_bytes << " bytes of log, its first slot is "
      << c.r(1).GetStatus().streams[0].first_slot;
  EXPECT_EQ(c.Dump(2).size(), 300u);
  EXPECT_EQ(c.Dump(3).size(), 300u);
}

TEST(Cluster, ABusyWorkersBatchClosesAtTheTimeoutNotOnlyAtItsSize) {
  ClusterOptions o;
  o.batch_size = 1000000;  // never reached here
  Cluster c(o);
  ASSERT_TRUE(c.Failover(1).ok());
  Member& m = c.m(1);
  // The worker holds its stream's mutex throughout, as one that never
  // idles: the leader's loop cannot close the batch for it.
  std::lock_guard<std::mutex> g(*m.mu[0]);
  uint64_t first = 0;
  bool covered = false;
  const auto deadline = std::chrono::steady_clock::now() + 2s;
  for (int i = 0; !covered && std::chrono::steady_clock::now() < deadline; i++) {
    auto txn = m.workers[0]->Begin();
    ASSERT_TRUE(txn->Put(m.table, "k" + std::to_string(i), "v").ok());
    ASSERT_TRUE(txn->Commit().ok());
    if (first == 0) first = txn->commit_ts();
    covered = m.replica->WatermarkCovers(first);
    std::this_thread::sleep_for(100us);
  }
  EXPECT_TRUE(covered) << "the first commit was still not acknowledged after 2 s of a busy worker";
}

TEST(Cluster, TheLeaderKeepsItsLogForAMemberInALongStateTransferUnderLoad) {
  // The leader keeps almost nothing whatever the peers say, and forgets a
  // silent member after 1 s; the restarted member's snapshot takes 3 s to
  // come back while commits go on. The slots after the snapshot must still
  // be there when it arrives: one transfer, not one after another. (The
  // window is long against the member's replies, which say it is catching
  // up: a shared VM can hold a thread hundreds of milliseconds.)
  ClusterOptions o;
  o.min_retained_bytes = 1024;
  o.live_window = 1000ms;
  Cluster c(o);
  ASSERT_TRUE(c.Failover(1).ok());
  for (int i = 0; i < 100; i++) ASSERT_EQ(c.Put(1, i % 2, "k" + std::to_string(i), "v"), Cluster::Ack::kAcked);
  ASSERT_TRUE(c.WaitReplicated(1));
  c.net().SetFaults(2, 3, std::nullopt, LinkFaults{0, 0, 3000ms, 3000ms});  // member 2's answers to 3
  c.Restart(3);
  int n = 100;
  const auto until = std::chrono::steady_clock::now() + 4000ms;
  for (; std::chrono::steady_clock::now() < until && n < 5000; n++) {
    ASSERT_EQ(c.Put(1, n % 2, "k" + std::to_string(n), "v"), Cluster::Ack::kAcked) << n;
  }
  c.net().SetFaults(2, 3, std::nullopt, LinkFaults{});
  ASSERT_TRUE(Cluster::WaitUntil([&] { return c.r(3).role() == Role::kFollower; }, 20s));
  EXPECT_TRUE(c.WaitReplicated(1));
  EXPECT_EQ(c.Dump(3).size(), static_cast<size_t>(n));
  EXPECT_EQ(c.r(3).GetStatus().state_transfers, 1u);
}

// A follower cut off while the leader compacted past it keeps voting but
// must catch up by state transfer; until that is done it says so
// (catching_up), so that neither the operator nor a reader takes it for a
// caught-up follower: the operator picked it as the most advanced candidate
// again and again, and it refused each time ("choose another candidate").
TEST(Cluster, AFollowerLeftBehindTheLeadersLogSaysItIsCatchingUp) {
  ClusterOptions o;
  o.min_retained_bytes = 1024;
  o.live_window = 300ms;
  Cluster c(o);
  ASSERT_TRUE(c.Failover(1).ok());
  for (int i = 0; i < 20; i++) ASSERT_EQ(c.Put(1, i % 2, "k" + std::to_string(i), "v"), Cluster::Ack::kAcked);
  ASSERT_TRUE(c.WaitReplicated(1));
  c.net().Partition({3});
  int n = 20;
  const auto until = std::chrono::steady_clock::now() + 1500ms;  // past live_window: 3 no longer holds the log
  for (; std::chrono::steady_clock::now() < until && n < 3000; n++) {
    ASSERT_EQ(c.Put(1, n % 2, "k" + std::to_string(n), "v"), Cluster::Ack::kAcked) << n;
  }
  // Member 2's snapshot reaches 3 only after 3 s: the transfer is pending meanwhile.
  c.net().SetFaults(2, 3, std::nullopt, LinkFaults{0, 0, 3000ms, 3000ms});
  c.net().Heal();
  ASSERT_EQ(c.Put(1, 0, "after", "v"), Cluster::Ack::kAcked);
  EXPECT_TRUE(Cluster::WaitUntil([&] { return c.r(3).role() == Role::kCatchingUp; }, 2500ms))
      << "member 3 is behind the leader's log but says " << static_cast<int>(c.r(3).role());
  c.net().SetFaults(2, 3, std::nullopt, LinkFaults{});
  ASSERT_TRUE(Cluster::WaitUntil([&] { return c.r(3).role() == Role::kFollower; }, 20s));
  EXPECT_GE(c.r(3).GetStatus().state_transfers, 1u);
  EXPECT_TRUE(c.WaitReplicated(1));
  EXPECT_EQ(c.Dump(3).size(), static_cast<size_t>(n + 1));
}

TEST(Cluster, BadInputOnTheReplicationPortIsRefusedAndChangesNothing) {
  Cluster c({});
  ASSERT_TRUE(c.Failover(1).ok());
  auto good = std::make_shared<Batch>();
  good->epoch = 1;
  auto send = [&](AcceptMsg m) { return c.r(2).HandleAccept(m); };
  AcceptMsg m;
  m.from = 1;
  m.epoch = 1;
  m.stream = 7;  // unknown stream
  m.slot = Slot{1000, 1, good};
  EXPECT_FALSE(send(m).ok);
  EXPECT_FALSE(send(m).error.empty());
  m.stream = 0;
  auto corrupt = std::make_shared<Batch>();
  corrupt->epoch = 1;
  corrupt->txn_count = 1;
  corrupt->last_ts = 5;
  corrupt->payload = "garbage";
  corrupt->crc = Crc32c(corrupt->payload);
  m.slot.value = corrupt;
  EXPECT_FALSE(send(m).ok);
  m.slot.value = good;
  m.from = 9;  // not a member
  EXPECT_FALSE(send(m).ok);
  m.from = 1;
  m.epoch = 0;
  EXPECT_FALSE(send(m).ok);
  Slot s;
  EXPECT_FALSE(c.m(2).replica->GetStatus().dirty);
  // Nothing was stored at slot 1000.
  ReplicaStatus st = c.r(2).GetStatus();
  EXPECT_LT(st.streams[0].next_slot, 1000u);
  ASSERT_EQ(c.Put(1, 0, "still", "fine"), Cluster::Ack::kAcked);
}

TEST(Cluster, AStaleEpochIsRejectedAfterAFailover) {
  Cluster c({});
  ASSERT_TRUE(c.Failover(1).ok());
  ASSERT_TRUE(c.Failover(2).ok());
  auto v = std::make_shared<Batch>();
  v->epoch = 1;
  AcceptMsg m;
  m.from = 1;
  m.epoch = 1;
  m.stream = 0;
  m.slot = Slot{50, 1, v};
  AcceptReply r = c.r(3).HandleAccept(m);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.promised_epoch, 2u);
}

}  // namespace
}  // namespace rolis::replication::testing
