// Snapshots handed to a sink as the store's scan produces them
// (docs/replication.md, "Members that lose their memory"; snapshot_sink.h):
// the order of the calls, the order of the writes, and a sink that fails
// part-way (a peer that went away).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

#include "cluster_harness.h"

namespace rolis::replication::testing {
namespace {

// Records what a producer did to it; fails its Add number `fail_at` (from 1;
// 0: never).
class RecordingSink final : public SnapshotSink {
 public:
  explicit RecordingSink(uint64_t fail_at = 0) : fail_at_(fail_at) {}
  Status Begin(const SnapshotReply& header) override {
    calls += "B";
    this->header = header;
    return Status::OK();
  }
  Status Add(uint32_t table, std::string_view key, std::string_view value) override {
    if (calls.empty() || calls.back() != 'A') calls += "A";
    adds++;
    if (fail_at_ != 0 && adds == fail_at_) return Status::Internal("unavailable: the reader went away");
    writes.push_back(SnapshotWrite{table, std::string(key), std::string(value)});
    return Status::OK();
  }
  Status End() override {
    calls += "E";
    return Status::OK();
  }

  std::string calls;  // "B", "A" for a run of Adds, "E"
  SnapshotReply header;
  std::vector<SnapshotWrite> writes;
  uint64_t adds = 0;

 private:
  const uint64_t fail_at_;
};

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

bool InScanOrder(const std::vector<SnapshotWrite>& w) {
  for (size_t i = 1; i < w.size(); i++) {
    if (w[i - 1].table > w[i].table || (w[i - 1].table == w[i].table && !(w[i - 1].key < w[i].key))) return false;
  }
  return true;
}

// Keys committed in descending order (and over two streams) come out of a
// caught-up follower's snapshot once each, in (table, key) order, after its
// position and before its end: what the receiver's merge walk relies on.
TEST(SnapshotStream, AFollowerHandsItsStoreToTheSinkInScanOrderBetweenBeginAndEnd) {
  Cluster c({});
  ASSERT_TRUE(c.Failover(1).ok());
  for (int i = 99; i >= 0; i--) {
    ASSERT_EQ(c.Put(1, i % 2, "k" + std::to_string(i), "v" + std::to_string(i)), Cluster::Ack::kAcked);
  }
  ASSERT_TRUE(c.WaitReplicated(1)) << c.Describe();
  RecordingSink sink;
  ASSERT_TRUE(c.r(2).HandleSnapshot(SnapshotMsg{3}, &sink).ok());
  EXPECT_EQ(sink.calls, "BAE");
  EXPECT_TRUE(sink.header.ok);
  EXPECT_TRUE(sink.header.writes.empty());
  EXPECT_EQ(sink.header.next_slot.size(), 2u);
  EXPECT_GT(sink.header.at.epoch, 0u);
  EXPECT_TRUE(InScanOrder(sink.writes));
  std::map<std::string, std::string> got;
  for (const SnapshotWrite& w : sink.writes) got.emplace(w.key, w.value);
  EXPECT_EQ(got, c.Dump(2));
  EXPECT_EQ(got.size(), 100u);
}

// Fault: the sink fails at its 10th write (the peer's stream broke).
// Invariants: the scan stops there with that error and no End; the
// follower's snapshot worker is released (replay goes on, and the next
// snapshot is whole).
TEST(SnapshotStream, ASinkThatFailsPartWayEndsTheScanAndTheNextSnapshotIsWhole) {
  Cluster c({});
  ASSERT_TRUE(c.Failover(1).ok());
  for (int i = 0; i < 50; i++) ASSERT_EQ(c.Put(1, i % 2, "k" + std::to_string(i), "v"), Cluster::Ack::kAcked);
  ASSERT_TRUE(c.WaitReplicated(1)) << c.Describe();
  RecordingSink broken(10);
  const Status s = c.r(2).HandleSnapshot(SnapshotMsg{3}, &broken);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("the reader went away"), std::string::npos) << s.message();
  EXPECT_EQ(broken.calls, "BA");
  EXPECT_EQ(broken.adds, 10u);

  for (int i = 50; i < 60; i++) ASSERT_EQ(c.Put(1, i % 2, "k" + std::to_string(i), "v"), Cluster::Ack::kAcked);
  ASSERT_TRUE(c.WaitReplicated(1)) << c.Describe();
  RecordingSink whole;
  const Status again = c.r(2).HandleSnapshot(SnapshotMsg{3}, &whole);
  ASSERT_TRUE(again.ok()) << again.message();
  EXPECT_EQ(whole.calls, "BAE");
  EXPECT_EQ(whole.writes.size(), 60u);
}

// Fault: the leader is cut off from both followers and its worker keeps
// committing, so its batches fill the ring and the worker waits in flow
// control, holding its mutex, for a majority that does not come (a member
// catching up by state transfer and another down, as a follower asking the
// leader for its snapshot may find). Invariant: the leader refuses its
// snapshot at once, saying why, rather than wait on that mutex; once the
// majority is back the worker goes on.
TEST(SnapshotStream, ALeaderWhoseWritesWaitForAMajorityRefusesItsSnapshotAtOnce) {
  ClusterOptions o;
  o.max_inflight = 2;
  o.live_window = 300ms;
  Cluster c(o);
  ASSERT_TRUE(c.Failover(1).ok());
  ASSERT_EQ(c.Put(1, 0, "k", "v"), Cluster::Ack::kAcked);
  c.net().Partition({1});
  std::atomic<bool> stop{false};
  std::atomic<int64_t> last_return_ms{NowMs()};
  std::thread writer([&] {
    for (int i = 0; i < 100000 && !stop.load(); i++) {
      c.Put(1, 0, "w" + std::to_string(i), std::string(100, 'v'), 20ms);
      last_return_ms.store(NowMs());
    }
  });
  // The writer is blocked once a Put has not returned for a second.
  const bool blocked = Cluster::WaitUntil([&] { return NowMs() - last_return_ms.load() > 1000; }, 20s);
  RecordingSink sink;
  Status s = Status::OK();
  const auto asked = std::chrono::steady_clock::now();
  std::future<Status> served = std::async(std::launch::async, [&] { return c.r(1).HandleSnapshot(SnapshotMsg{2}, &sink); });
  const bool answered = served.wait_for(5s) == std::future_status::ready;
  const auto took = std::chrono::steady_clock::now() - asked;
  c.net().Heal();
  if (answered) s = served.get();
  stop.store(true);
  writer.join();
  if (!answered) served.wait();  // the majority is back: the hold ends
  ASSERT_TRUE(blocked) << "the writer never waited in flow control";
  ASSERT_TRUE(answered) << "the leader's snapshot waited on its worker's mutex";
  EXPECT_LT(took, 1s);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("needs a majority up"), std::string::npos) << s.message();
  EXPECT_EQ(sink.calls, "");
  // The majority back, writes are acknowledged again.
  EXPECT_EQ(c.Put(1, 0, "after", "1"), Cluster::Ack::kAcked);
}

// A member that is not a caught-up follower (restarted empty and cut off,
// so it cannot catch up) refuses before it begins: the sink sees nothing,
// and the caller can ask another member.
TEST(SnapshotStream, ARefusalComesBeforeAnyCallOfTheSink) {
  Cluster c({});
  ASSERT_TRUE(c.Failover(1).ok());
  ASSERT_EQ(c.Put(1, 0, "k", "v"), Cluster::Ack::kAcked);
  c.Crash(3);
  c.net().Partition({3});
  c.Restart(3);
  RecordingSink sink;
  const Status s = c.r(3).HandleSnapshot(SnapshotMsg{2}, &sink);
  c.net().Heal();
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("not a caught-up follower"), std::string::npos) << s.message();
  EXPECT_EQ(sink.calls, "");
}

// Fault: a partitioned leader commits keys locally that the next epoch
// discards: before every key of the snapshot, between two of them, and
// after the last. Invariant: its state transfer (the merge walk of its
// store against the snapshot's writes) deletes exactly those, wherever
// they fall in the key order.
TEST(SnapshotStream, AStateTransferDeletesTheLocalKeysTheSnapshotLacksWhereverTheyFall) {
  Cluster c({});
  ASSERT_TRUE(c.Failover(1).ok());
  for (int i = 10; i < 40; i++) ASSERT_EQ(c.Put(1, i % 2, "k" + std::to_string(i), "v1"), Cluster::Ack::kAcked);
  c.net().Partition({1});
  for (const char* k : {"a-stale", "k25x-stale", "z-stale"}) {
    EXPECT_NE(c.Put(1, 0, k, "v", 100ms), Cluster::Ack::kAcked);
  }
  ASSERT_TRUE(c.FailoverRetrying(2).ok()) << c.Describe();
  ASSERT_EQ(c.Put(2, 1, "k30", "v2"), Cluster::Ack::kAcked);
  c.net().Heal();
  ASSERT_TRUE(Cluster::WaitUntil([&] { return c.r(1).role() == Role::kFollower && c.r(1).GetStatus().state_transfers == 1; },
                                 15s))
      << c.Describe();
  ASSERT_EQ(c.Put(2, 0, "after", "1"), Cluster::Ack::kAcked);
  ASSERT_TRUE(c.WaitReplicated(2)) << c.Describe();
  auto dump = c.Dump(1);
  EXPECT_EQ(dump, c.Dump(2));
  EXPECT_EQ(dump.count("a-stale") + dump.count("k25x-stale") + dump.count("z-stale"), 0u);
  EXPECT_EQ(dump.size(), 31u);
  EXPECT_EQ(dump["k30"], "v2");
}

}  // namespace
}  // namespace rolis::replication::testing
