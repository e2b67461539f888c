// Checkpoints derived from the previous checkpoint and the log
// (derived_checkpoint.h): what goes in, where the new position stands, and
// that a derivation that cannot be right writes nothing.
#include <gtest/gtest.h>

#include <map>
#include <span>

#include "checkpoint.h"
#include "codec.h"
#include "derived_checkpoint.h"
#include "fault_env.h"
#include "rolis/value_patch.h"
#include "stream_log.h"
#include "test_dir.h"

namespace rolis::durability {
namespace {

using replication::Batch;
using replication::BatchKind;
using replication::BatchPtr;
using replication::Decided;
using replication::DecidedPtr;
using replication::LogCheckpointPosition;
using replication::LogKey;
using replication::Slot;
using replication::SnapshotReply;
using replication::SnapshotWrite;

struct Txn {
  uint64_t ts;
  std::vector<WriteRecord> writes;
};

WriteRecord Put(std::string_view key, std::string_view value) { return WriteRecord{0, key, value, false}; }
WriteRecord Del(std::string_view key) { return WriteRecord{0, key, {}, true}; }
WriteRecord Patch(std::string_view key, std::string_view runs, uint64_t base_ts) {
  WriteRecord w{0, key, runs, false};
  w.is_patch = true;
  w.base_ts = base_ts;
  return w;
}

BatchPtr Txns(uint64_t epoch, const std::vector<Txn>& txns) {
  auto b = std::make_shared<Batch>();
  b->epoch = epoch;
  for (const Txn& t : txns) {
    replication::AppendTxn(&b->payload, t.ts, std::span<const WriteRecord>(t.writes));
    b->last_ts = t.ts;
  }
  b->txn_count = static_cast<uint32_t>(txns.size());
  b->crc = replication::Crc32c(b->payload);
  return b;
}

BatchPtr Empty(BatchKind kind, uint64_t epoch, uint64_t ts) {
  auto b = std::make_shared<Batch>();
  b->kind = kind;
  b->epoch = epoch;
  b->last_ts = ts;
  b->crc = replication::Crc32c(b->payload);
  return b;
}

DecidedPtr Record(uint64_t epoch, std::map<uint64_t, uint64_t> cut) {
  auto d = std::make_shared<Decided>();
  d->record.epoch = epoch;
  d->record.cut = std::move(cut);
  return d;
}

// Appends slots (stream, index, ballot, value) to the log of `dir` and
// waits until they are durable.
void WriteLog(Env* env, const std::string& dir, uint32_t streams, const std::vector<std::pair<uint32_t, Slot>>& slots) {
  std::unique_ptr<StreamLogSet> log;
  ASSERT_TRUE(StreamLogSet::Open(env, dir, streams, StreamLogOptions{}, nullptr, &log).ok());
  std::vector<uint64_t> last(streams, 0);
  for (const auto& [t, s] : slots) ASSERT_TRUE(log->Append(t, s, &last[t]).ok());
  for (uint32_t t = 0; t < streams; t++) {
    if (last[t]) ASSERT_TRUE(log->WaitDurable(t, last[t], replication::SteadyClock::now() + std::chrono::seconds(5)).ok());
  }
}

SnapshotReply Previous(LogKey at, std::vector<uint64_t> next_slot, std::vector<SnapshotWrite> writes) {
  SnapshotReply p;
  p.at = at;
  p.next_slot = next_slot;
  p.skip.assign(next_slot.size(), 0);
  p.stream_key.assign(next_slot.size(), at);
  p.stream_barrier.assign(next_slot.size(), at.epoch);
  p.decided = Record(at.epoch, {});
  p.leader_epoch = at.epoch;
  p.writes = std::move(writes);
  return p;
}

std::map<std::string, std::string> Newest(Env* env, const std::string& dir, SnapshotReply* header = nullptr) {
  std::string path;
  EXPECT_TRUE(FindNewestCheckpoint(env, dir, &path).ok());
  SnapshotReply snap;
  EXPECT_TRUE(ReadCheckpoint(env, path, &snap).ok()) << path;
  std::map<std::string, std::string> kv;
  for (const SnapshotWrite& w : snap.writes) EXPECT_TRUE(kv.emplace(w.key, w.value).second) << "twice: " << w.key;
  if (header) *header = snap;
  return kv;
}

std::string PatchRuns(std::string_view base, std::string_view value) {
  std::string runs;
  EXPECT_TRUE(AppendPatch(base, value, value.size(), &runs));
  return runs;
}

TEST(DerivedCheckpoint, MergesThePreviousCheckpointWithTheLogUpToTheWatermark) {
  TestDir d;
  Env* env = Env::Posix();
  ASSERT_TRUE(WriteCheckpoint(env, d.path(),
                              Previous({1, 100}, {5, 3},
                                       {{0, "a", "1"}, {0, "b", "2"}, {0, "c", "cccccccccccccccccccc"}, {0, "z", "26"}}))
                  .ok());
  const std::string c2 = "cccccccccXcccccccccc";
  WriteLog(env, d.path(), 2,
           {{0, Slot{5, 2, Txns(2, {{110, {Put("a", "10")}}, {120, {Del("b")}}})}},
            // A patch's base is an earlier write of its stream in its epoch.
            {1, Slot{3, 2, Txns(2, {{112, {Put("c", "cccccccccccccccccccY")}},
                                    {115, {Patch("c", PatchRuns("cccccccccccccccccccY", c2), 112)}}})}},
            {0, Slot{6, 2, Txns(2, {{200, {Put("d", "4")}}, {300, {Put("e", "5")}}})}},
            {1, Slot{4, 2, Empty(BatchKind::kTxns, 2, 250)}},  // a heartbeat
            {1, Slot{5, 2, Empty(BatchKind::kTxns, 2, 400)}}});
  LogCheckpointPosition pos;
  pos.epoch = 2;
  pos.decided = Record(2, {{1, 100}});
  pos.watermark = {2, 250};
  pos.end = {7, 6};
  SnapshotReply h;
  DerivedCheckpointStats st;
  Status s = DeriveCheckpoint(env, d.path(), 2, pos, &h, &st);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(h.at, (LogKey{2, 250}));
  // Stream 0 stops inside slot 6 (its second transaction is above W),
  // stream 1 at its heartbeat above W.
  EXPECT_EQ(h.next_slot, (std::vector<uint64_t>{6, 5}));
  EXPECT_EQ(h.skip, (std::vector<uint64_t>{1, 0}));
  EXPECT_EQ(h.stream_key[1], (LogKey{2, 250}));
  EXPECT_EQ(st.txns, 5u);
  EXPECT_EQ(st.base_writes, 4u);
  SnapshotReply read;
  EXPECT_EQ(Newest(env, d.path(), &read),
            (std::map<std::string, std::string>{{"a", "10"}, {"c", c2}, {"d", "4"}, {"z", "26"}}));
  EXPECT_EQ(read.next_slot, h.next_slot);
  EXPECT_EQ(read.skip, h.skip);
  EXPECT_EQ(read.at, h.at);
  std::vector<std::string> names;
  ASSERT_TRUE(env->ListDir(CheckpointWriter::DirOf(d.path()), &names).ok());
  EXPECT_EQ(names, (std::vector<std::string>{CheckpointWriter::FileName({2, 250})}));  // the older one went

  // The next one goes on from inside slot 6: its first transaction is not
  // applied twice, the second goes in.
  pos.watermark = {2, 400};
  ASSERT_TRUE(DeriveCheckpoint(env, d.path(), 2, pos, &h, &st).ok());
  EXPECT_EQ(h.next_slot, (std::vector<uint64_t>{7, 6}));
  EXPECT_EQ(h.skip, (std::vector<uint64_t>{0, 0}));
  EXPECT_EQ(st.txns, 1u);
  EXPECT_EQ(Newest(env, d.path()),
            (std::map<std::string, std::string>{{"a", "10"}, {"c", c2}, {"d", "4"}, {"e", "5"}, {"z", "26"}}));
  // Nothing past it: NOT_FOUND, and nothing changes.
  EXPECT_TRUE(DeriveCheckpoint(env, d.path(), 2, pos, &h, &st).IsNotFound());
}

TEST(DerivedCheckpoint, WithoutAPreviousCheckpointStartsFromAnEmptyStoreAtSlotZero) {
  TestDir d;
  Env* env = Env::Posix();
  WriteLog(env, d.path(), 1,
           {{0, Slot{0, 1, Empty(BatchKind::kBarrier, 1, 5)}},
            {0, Slot{1, 1, Txns(1, {{10, {Put("k", "v1")}}, {11, {Put("k", "v2")}}, {12, {Put("j", "x")}}})}},
            {0, Slot{2, 1, Txns(1, {{13, {Del("j")}}})}}});
  LogCheckpointPosition pos{1, Record(1, {}), {1, 13}, {3}};
  SnapshotReply h;
  DerivedCheckpointStats st;
  ASSERT_TRUE(DeriveCheckpoint(env, d.path(), 1, pos, &h, &st).ok());
  EXPECT_EQ(Newest(env, d.path()), (std::map<std::string, std::string>{{"k", "v2"}}));
  EXPECT_EQ(h.next_slot, (std::vector<uint64_t>{3}));
  EXPECT_EQ(h.stream_barrier[0], 1u);
  EXPECT_EQ(st.delta_keys, 2u);
}

TEST(DerivedCheckpoint, SkipsEntriesTheDecidedRecordVoids) {
  TestDir d;
  Env* env = Env::Posix();
  ASSERT_TRUE(WriteCheckpoint(env, d.path(), Previous({1, 10}, {1}, {{0, "a", "0"}})).ok());
  // Slot 1 holds epoch 1's commits at 20 (kept: the cut is 20) and 30
  // (void), re-proposed at ballot 2; then the barrier and epoch 2's write.
  WriteLog(env, d.path(), 1,
           {{0, Slot{1, 2, Txns(1, {{20, {Put("a", "20")}}, {30, {Put("b", "30")}}})}},
            {0, Slot{2, 2, Empty(BatchKind::kBarrier, 2, 1)}},
            {0, Slot{3, 2, Txns(2, {{5, {Put("c", "c")}}})}}});
  LogCheckpointPosition pos{2, Record(2, {{1, 20}}), {2, 5}, {4}};
  SnapshotReply h;
  DerivedCheckpointStats st;
  ASSERT_TRUE(DeriveCheckpoint(env, d.path(), 1, pos, &h, &st).ok());
  EXPECT_EQ(Newest(env, d.path()), (std::map<std::string, std::string>{{"a", "20"}, {"c", "c"}}));
  EXPECT_EQ(h.stream_barrier[0], 2u);
}

TEST(DerivedCheckpoint, ASlotMissingOrOfAnotherBallotWritesNothing) {
  TestDir d;
  Env* env = Env::Posix();
  ASSERT_TRUE(WriteCheckpoint(env, d.path(), Previous({1, 10}, {1}, {{0, "a", "0"}})).ok());
  WriteLog(env, d.path(), 1, {{0, Slot{1, 1, Txns(1, {{20, {Put("a", "20")}}})}}, {0, Slot{3, 2, Txns(2, {{5, {Put("c", "c")}}})}}});
  SnapshotReply h;
  DerivedCheckpointStats st;
  // Slot 1 is at ballot 1, not the leader's 2.
  Status s = DeriveCheckpoint(env, d.path(), 1, LogCheckpointPosition{2, Record(2, {{1, 20}}), {2, 5}, {2}}, &h, &st);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
  EXPECT_NE(s.message().find("ballot 1"), std::string::npos) << s.ToString();
  // Slot 2 is not in the log at all.
  s = DeriveCheckpoint(env, d.path(), 1, LogCheckpointPosition{1, Record(1, {}), {1, 30}, {4}}, &h, &st);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
  EXPECT_NE(s.message().find("slot 2 is not in the log"), std::string::npos) << s.ToString();
  std::vector<std::string> names;
  ASSERT_TRUE(env->ListDir(CheckpointWriter::DirOf(d.path()), &names).ok());
  EXPECT_EQ(names, (std::vector<std::string>{CheckpointWriter::FileName({1, 10})}));  // no temporary left
  EXPECT_EQ(Newest(env, d.path()), (std::map<std::string, std::string>{{"a", "0"}}));
}

TEST(DerivedCheckpoint, APatchThatDoesNotApplyWritesNothing) {
  TestDir d;
  Env* env = Env::Posix();
  ASSERT_TRUE(WriteCheckpoint(env, d.path(), Previous({1, 10}, {1}, {{0, "short", "abc"}})).ok());
  const std::string base(20, 'x');
  std::string other = base;
  other[3] = 'y';
  // A patch of a key the store does not hold, and one whose runs pass the
  // value's end.
  WriteLog(env, d.path(), 1, {{0, Slot{1, 1, Txns(1, {{20, {Patch("absent", PatchRuns(base, other), 15)}}})}}});
  SnapshotReply h;
  DerivedCheckpointStats st;
  Status s = DeriveCheckpoint(env, d.path(), 1, LogCheckpointPosition{1, Record(1, {}), {1, 20}, {2}}, &h, &st);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
  EXPECT_EQ(Newest(env, d.path()), (std::map<std::string, std::string>{{"short", "abc"}}));
}

TEST(DerivedCheckpoint, AKillBeforeTheRenameLeavesThePreviousCheckpointNewest) {
  TestDir d;
  FaultEnv env;
  ASSERT_TRUE(WriteCheckpoint(&env, d.path(), Previous({1, 10}, {1}, {{0, "a", "0"}})).ok());
  WriteLog(&env, d.path(), 1, {{0, Slot{1, 1, Txns(1, {{20, {Put("a", "20")}}})}}});
  // The derived checkpoint's temporary is written and synced, then the
  // member dies: the crash keeps what was synced, the rename never came.
  SnapshotReply prev;
  std::string path;
  ASSERT_TRUE(FindNewestCheckpoint(&env, d.path(), &path).ok());
  ASSERT_TRUE(ReadCheckpoint(&env, path, &prev).ok());
  {
    SnapshotReply next = prev;
    next.at = {1, 20};
    std::unique_ptr<CheckpointWriter> w;
    ASSERT_TRUE(CheckpointWriter::Begin(&env, d.path(), next, &w).ok());
    ASSERT_TRUE(w->Add(0, "a", "20").ok());
    ASSERT_TRUE(env.Crash().ok());
    std::string newest;
    ASSERT_TRUE(FindNewestCheckpoint(&env, d.path(), &newest).ok());
    EXPECT_EQ(newest, path);
    w.release();  // the process is gone: its destructor never runs
  }
  // After the restart the derivation runs again from the previous one.
  SnapshotReply h;
  DerivedCheckpointStats st;
  ASSERT_TRUE(DeriveCheckpoint(&env, d.path(), 1, LogCheckpointPosition{1, Record(1, {}), {1, 20}, {2}}, &h, &st).ok());
  EXPECT_EQ(Newest(&env, d.path()), (std::map<std::string, std::string>{{"a", "20"}}));
}

}  // namespace
}  // namespace rolis::durability
