// The recovery reader over a data directory after each injected fault.
#include <gtest/gtest.h>

#include "checkpoint.h"
#include "fault_env.h"
#include "recovery.h"
#include "state_journal.h"
#include "stream_log.h"
#include "test_dir.h"

namespace rolis::durability {
namespace {

using replication::SteadyClock;
using std::chrono::seconds;

Status RecoverInto(Env* env, const std::string& dir, uint32_t streams, RecoveredState* r, bool truncate = true) {
  RecoveryOptions o;
  o.streams = streams;
  o.truncate = truncate;
  return Recover(env, dir, o, r);
}

// Writes `n` slots of 300 bytes to stream 0 (segments of `seg` bytes), all durable.
std::vector<SegmentInfo> WriteSlots(Env* env, const std::string& dir, uint64_t n, uint64_t seg = 64 << 20) {
  std::unique_ptr<StreamLogSet> log;
  EXPECT_TRUE(StreamLogSet::Open(env, dir, 1, StreamLogOptions{seg}, nullptr, &log).ok());
  uint64_t pos = 0;
  for (uint64_t i = 0; i < n; i++) EXPECT_TRUE(log->Append(0, TestSlot(i, 2, 300), &pos).ok());
  EXPECT_TRUE(log->WaitDurable(0, pos, SteadyClock::now() + seconds(10)).ok());
  return log->Segments(0);
}

TEST(Recovery, AnEmptyOrMissingDirectoryIsEmpty) {
  TestDir d;
  FaultEnv env;
  RecoveredState r;
  ASSERT_TRUE(RecoverInto(&env, d.path() + "/absent", 2, &r).ok());
  EXPECT_TRUE(r.empty);
  ASSERT_TRUE(RecoverInto(&env, d.path(), 2, &r).ok());
  EXPECT_TRUE(r.empty);
  EXPECT_NE(r.Summary().find("empty"), std::string::npos);
  // Opened logs and a journal with nothing in them are still empty.
  std::unique_ptr<StreamLogSet> log;
  ASSERT_TRUE(StreamLogSet::Open(&env, d.path(), 2, StreamLogOptions{}, nullptr, &log).ok());
  std::unique_ptr<StateJournal> j;
  ASSERT_TRUE(StateJournal::Open(&env, d.path(), AcceptorState{}, 1 << 20, &j).ok());
  ASSERT_TRUE(RecoverInto(&env, d.path(), 2, &r).ok());
  EXPECT_TRUE(r.empty);
  // One promise is state.
  ASSERT_TRUE(j->RecordPromise(1).ok());
  ASSERT_TRUE(RecoverInto(&env, d.path(), 2, &r).ok());
  EXPECT_FALSE(r.empty);
}

TEST(Recovery, CheckpointJournalAndLogsTogether) {
  TestDir d;
  FaultEnv env;
  {
    std::unique_ptr<StreamLogSet> log;
    ASSERT_TRUE(StreamLogSet::Open(&env, d.path(), 2, StreamLogOptions{}, nullptr, &log).ok());
    uint64_t pos = 0;
    for (uint64_t i = 0; i < 10; i++) ASSERT_TRUE(log->Append(0, TestSlot(i, 2), &pos).ok());
    ASSERT_TRUE(log->Append(0, TestSlot(7, 3), &pos).ok());  // re-proposed under a higher ballot
    ASSERT_TRUE(log->Append(0, TestSlot(8, 2), &pos).ok());  // an old copy arriving late: the higher ballot stays
    ASSERT_TRUE(log->Append(1, TestSlot(0, 3), &pos).ok());
    ASSERT_TRUE(log->WaitDurable(0, 12, SteadyClock::now() + seconds(10)).ok());
    ASSERT_TRUE(log->WaitDurable(1, 1, SteadyClock::now() + seconds(10)).ok());
  }
  replication::SnapshotReply snap;
  snap.at = {2, 4};
  snap.next_slot = {4, 0};
  snap.skip = {0, 0};
  snap.stream_key = {{2, 4}, {0, 0}};
  snap.stream_barrier = {2, 0};
  snap.leader_epoch = 2;
  snap.writes = {{0, "a", "1"}, {0, "b", "2"}};
  ASSERT_TRUE(WriteCheckpoint(&env, d.path(), snap).ok());
  {
    std::unique_ptr<StateJournal> j;
    ASSERT_TRUE(StateJournal::Open(&env, d.path(), AcceptorState{}, 1 << 20, &j).ok());
    ASSERT_TRUE(j->RecordPromise(4).ok());
  }
  std::vector<replication::SnapshotWrite> writes;
  RecoveryOptions o;
  o.streams = 2;
  o.on_writes = [&](std::vector<replication::SnapshotWrite>& c) {
    for (auto& w : c) writes.push_back(std::move(w));
    return Status::OK();
  };
  RecoveredState r;
  ASSERT_TRUE(Recover(&env, d.path(), o, &r).ok());
  EXPECT_FALSE(r.empty);
  EXPECT_EQ(writes.size(), 2u);
  EXPECT_EQ(r.checkpoint.at, snap.at);
  EXPECT_EQ(r.promised, 4u);
  EXPECT_EQ(r.streams[0].first_slot, 4u);
  EXPECT_EQ(r.streams[0].base_key, (replication::LogKey{2, 4}));
  ASSERT_EQ(r.streams[0].slots.size(), 6u);  // 4..9
  EXPECT_EQ(r.streams[0].slots.front().index, 4u);
  EXPECT_EQ(r.streams[0].slots[3].ballot, 3u);  // slot 7
  EXPECT_EQ(r.streams[0].slots[4].ballot, 2u);  // slot 8: the later frame of the same ballot
  EXPECT_EQ(r.stats.ballot_regressions, 0u);
  ASSERT_EQ(r.streams[1].slots.size(), 1u);
  EXPECT_NE(r.Summary().find("checkpoint"), std::string::npos) << r.Summary();
}

// A crash keeps some unsynced bytes of the last frame: the torn frame is
// cut off, reported, and the file truncated so the next start is clean.
TEST(Recovery, ATornLastFrameIsCutAndReported) {
  TestDir d;
  FaultEnv env;
  WriteSlots(&env, d.path(), 5);
  {
    std::unique_ptr<StreamLogSet> log;
    RecoveredState r0;
    ASSERT_TRUE(RecoverInto(&env, d.path(), 1, &r0).ok());
    ASSERT_TRUE(StreamLogSet::Open(&env, d.path(), 1, StreamLogOptions{}, &r0.segments, &log).ok());
    env.HoldSyncs(true);
    uint64_t pos = 0;
    ASSERT_TRUE(log->Append(0, TestSlot(5, 2, 300), &pos).ok());
    ASSERT_TRUE(env.Crash(/*keep=*/100).ok());  // power lost mid-frame
    env.HoldSyncs(false);
    log.reset();
    ASSERT_TRUE(env.Crash(100).ok());
  }
  RecoveredState r;
  ASSERT_TRUE(RecoverInto(&env, d.path(), 1, &r).ok());
  ASSERT_EQ(r.stats.cut.size(), 1u);
  EXPECT_EQ(r.stats.cut[0].bytes, 100u - 31u) << r.stats.cut[0].reason;  // the new segment's header survived
  EXPECT_EQ(r.streams[0].slots.size(), 5u);
  RecoveredState again;
  ASSERT_TRUE(RecoverInto(&env, d.path(), 1, &again).ok());
  EXPECT_TRUE(again.stats.cut.empty());
  EXPECT_EQ(again.streams[0].slots.size(), 5u);
}

TEST(Recovery, ATornTailReadWithoutTruncateIsOnlyReported) {
  TestDir d;
  FaultEnv env;
  auto segs = WriteSlots(&env, d.path(), 3);
  ASSERT_TRUE(env.TruncateFile(segs.back().path, segs.back().bytes - 10).ok());
  RecoveredState r;
  ASSERT_TRUE(RecoverInto(&env, d.path(), 1, &r, /*truncate=*/false).ok());
  ASSERT_EQ(r.stats.cut.size(), 1u);
  EXPECT_EQ(r.streams[0].slots.size(), 2u);
  uint64_t size = 0;
  ASSERT_TRUE(env.FileSize(segs.back().path, &size).ok());
  EXPECT_EQ(size, segs.back().bytes - 10);
}

// A flipped bit in the middle of a segment is corruption: an error naming
// the file and the offset of the bad frame.
TEST(Recovery, AFlippedBitInTheMiddleOfASegmentRefusesToStart) {
  TestDir d;
  FaultEnv env;
  auto segs = WriteSlots(&env, d.path(), 10);
  const uint64_t frame = 9 + 50 + 300;  // header, slot meta, payload
  const uint64_t off = 31 + 4 * frame + 100;  // inside slot 4's frame
  ASSERT_TRUE(env.FlipByte(segs[0].path, off).ok());
  RecoveredState r;
  Status s = RecoverInto(&env, d.path(), 1, &r);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find(segs[0].path + " at byte " + std::to_string(31 + 4 * frame)), std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("checksum"), std::string::npos) << s.message();
  uint64_t size = 0;
  ASSERT_TRUE(env.FileSize(segs[0].path, &size).ok());
  EXPECT_EQ(size, segs[0].bytes) << "nothing is cut on corruption";
}

TEST(Recovery, AFlippedBitInTheLastFrameOfTheNewestSegmentIsATornTail) {
  TestDir d;
  FaultEnv env;
  auto segs = WriteSlots(&env, d.path(), 10);
  ASSERT_TRUE(env.FlipByte(segs[0].path, segs[0].bytes - 5).ok());
  RecoveredState r;
  ASSERT_TRUE(RecoverInto(&env, d.path(), 1, &r).ok());
  EXPECT_EQ(r.stats.cut.size(), 1u);
  EXPECT_EQ(r.streams[0].slots.size(), 9u);
}

TEST(Recovery, ATornTailOfAnOlderSegmentIsCorruption) {
  TestDir d;
  FaultEnv env;
  auto segs = WriteSlots(&env, d.path(), 20, 2000);
  ASSERT_GE(segs.size(), 3u);
  ASSERT_TRUE(env.TruncateFile(segs[1].path, segs[1].bytes - 7).ok());
  RecoveredState r;
  Status s = RecoverInto(&env, d.path(), 1, &r);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find(segs[1].path), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("not the newest segment"), std::string::npos) << s.message();
}

TEST(Recovery, AFullDiskMidAppendLeavesARecoverableLog) {
  TestDir d;
  FaultEnv env;
  std::unique_ptr<StreamLogSet> log;
  ASSERT_TRUE(StreamLogSet::Open(&env, d.path(), 1, StreamLogOptions{}, nullptr, &log).ok());
  uint64_t pos = 0;
  ASSERT_TRUE(log->Append(0, TestSlot(0, 1, 300), &pos).ok());
  env.set_space(100);
  EXPECT_FALSE(log->Append(0, TestSlot(1, 1, 300), &pos).ok());
  ASSERT_TRUE(log->WaitDurable(0, 1, SteadyClock::now() + seconds(10)).ok());
  ASSERT_TRUE(env.Crash().ok());
  log.reset();
  RecoveredState r;
  ASSERT_TRUE(RecoverInto(&env, d.path(), 1, &r).ok());
  EXPECT_TRUE(r.stats.cut.empty());
  EXPECT_EQ(r.streams[0].slots.size(), 1u);
}

TEST(Recovery, MoreStreamsOnDiskThanTheMemberRunsIsAnError) {
  TestDir d;
  FaultEnv env;
  std::unique_ptr<StreamLogSet> log;
  ASSERT_TRUE(StreamLogSet::Open(&env, d.path(), 3, StreamLogOptions{}, nullptr, &log).ok());
  log.reset();
  RecoveredState r;
  Status s = RecoverInto(&env, d.path(), 2, &r);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("stream-2"), std::string::npos) << s.message();
}

TEST(Recovery, ACorruptCheckpointRefusesToStart) {
  TestDir d;
  FaultEnv env;
  replication::SnapshotReply snap;
  snap.next_slot = {0};
  snap.skip = {0};
  snap.stream_key = {{}};
  snap.stream_barrier = {0};
  for (int i = 0; i < 100; i++) snap.writes.push_back({0, "k" + std::to_string(i), "v"});
  std::string path;
  ASSERT_TRUE(WriteCheckpoint(&env, d.path(), snap, &path).ok());
  ASSERT_TRUE(env.FlipByte(path, 200).ok());
  RecoveredState r;
  Status s = RecoverInto(&env, d.path(), 1, &r);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find(path + " at byte"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace rolis::durability
