// The acceptor-state journal and checkpoints.
#include <gtest/gtest.h>

#include "checkpoint.h"
#include "fault_env.h"
#include "membership.h"
#include "state_journal.h"
#include "test_dir.h"

namespace rolis::durability {
namespace {

using replication::ControlVote;
using replication::Decided;
using replication::DecidedPtr;
using replication::SnapshotReply;

DecidedPtr Record(uint64_t epoch, uint64_t config = 0) {
  auto d = std::make_shared<Decided>();
  d->record.epoch = epoch;
  if (epoch > 1) d->record.cut[epoch - 1] = 10 * epoch;
  d->config = config;
  d->members = {{1, "a:1"}, {2, "b:1"}, {3, "c:1"}};
  return d;
}

AcceptorState LoadOk(Env* env, const std::string& dir, JournalLoad* load = nullptr) {
  AcceptorState st;
  JournalLoad l;
  Status s = StateJournal::Load(env, dir, true, &st, &l);
  EXPECT_TRUE(s.ok()) << s.ToString();
  if (load) *load = l;
  return st;
}

TEST(StateJournal, EveryChangeIsOnDiskWhenTheCallReturns) {
  TestDir d;
  FaultEnv env;
  std::unique_ptr<StateJournal> j;
  ASSERT_TRUE(StateJournal::Open(&env, d.path(), AcceptorState{}, 1 << 20, &j).ok());
  ASSERT_TRUE(j->RecordPromise(3).ok());
  ASSERT_TRUE(j->RecordDecided(Record(3)).ok());
  ControlVote v{replication::InstanceAfter(Record(3).get()), 0x0102, 0x0102, Record(4)};
  ASSERT_TRUE(j->RecordControlVote(v).ok());
  ASSERT_TRUE(j->RecordPromise(2).ok());  // lower: nothing to write
  // A crash loses nothing that a call returned for.
  ASSERT_TRUE(env.Crash().ok());
  AcceptorState st = LoadOk(&env, d.path());
  EXPECT_EQ(st.promised, 3u);
  ASSERT_TRUE(st.decided);
  EXPECT_EQ(*st.decided, *Record(3));
  ASSERT_EQ(st.votes.size(), 1u);
  EXPECT_EQ(st.votes.begin()->second.promised, 0x0102u);
  EXPECT_EQ(*st.votes.begin()->second.accepted, *Record(4));
  // A newer record settles the instance of the vote.
  ASSERT_TRUE(j->RecordDecided(Record(4)).ok());
  st = LoadOk(&env, d.path());
  EXPECT_TRUE(st.votes.empty());
  EXPECT_EQ(st.decided->record.epoch, 4u);
}

TEST(StateJournal, CompactsByRewritingTheCurrentState) {
  TestDir d;
  FaultEnv env;
  std::unique_ptr<StateJournal> j;
  ASSERT_TRUE(StateJournal::Open(&env, d.path(), AcceptorState{}, 2048, &j).ok());
  for (uint64_t e = 1; e <= 200; e++) ASSERT_TRUE(j->RecordPromise(e).ok());
  for (uint64_t e = 1; e <= 30; e++) ASSERT_TRUE(j->RecordDecided(Record(e, e)).ok());
  EXPECT_GT(j->compactions(), 2u);
  uint64_t size = 0;
  ASSERT_TRUE(env.FileSize(d.path() + "/acceptor.journal", &size).ok());
  EXPECT_LE(size, 2048u);
  EXPECT_FALSE(env.Exists(d.path() + "/acceptor.journal.tmp"));
  AcceptorState st = LoadOk(&env, d.path());
  EXPECT_EQ(st.promised, 200u);
  EXPECT_EQ(*st.decided, *Record(30, 30));
}

TEST(StateJournal, ATornTailIsCutAndCorruptionElsewhereNamesTheOffset) {
  TestDir d;
  FaultEnv env;
  std::unique_ptr<StateJournal> j;
  ASSERT_TRUE(StateJournal::Open(&env, d.path(), AcceptorState{}, 1 << 20, &j).ok());
  ASSERT_TRUE(j->RecordPromise(5).ok());
  ASSERT_TRUE(j->RecordDecided(Record(5)).ok());
  j.reset();
  const std::string path = d.path() + "/acceptor.journal";
  uint64_t size = 0;
  ASSERT_TRUE(env.FileSize(path, &size).ok());
  ASSERT_TRUE(env.TruncateFile(path, size - 4).ok());  // the decided record is torn
  JournalLoad load;
  AcceptorState st = LoadOk(&env, d.path(), &load);
  EXPECT_TRUE(load.cut);
  EXPECT_EQ(st.promised, 5u);
  EXPECT_FALSE(st.decided);
  ASSERT_TRUE(env.FileSize(path, &size).ok());
  EXPECT_EQ(size, load.bytes);

  ASSERT_TRUE(StateJournal::Open(&env, d.path(), st, 1 << 20, &j).ok());
  ASSERT_TRUE(j->RecordDecided(Record(5)).ok());
  ASSERT_TRUE(j->RecordPromise(6).ok());
  j.reset();
  ASSERT_TRUE(env.FlipByte(path, 45).ok());  // inside the promise frame, with frames after it
  AcceptorState bad;
  Status s = StateJournal::Load(&env, d.path(), true, &bad, &load);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("acceptor.journal at byte"), std::string::npos) << s.message();
}

TEST(StateJournal, AFailingSyncRefusesTheChangeAndEveryLaterOne) {
  TestDir d;
  FaultEnv env;
  std::unique_ptr<StateJournal> j;
  ASSERT_TRUE(StateJournal::Open(&env, d.path(), AcceptorState{}, 1 << 20, &j).ok());
  env.set_fail_sync(true);
  EXPECT_FALSE(j->RecordPromise(2).ok());
  EXPECT_EQ(j->state().promised, 0u);
  env.set_fail_sync(false);
  EXPECT_FALSE(j->RecordPromise(3).ok());
  EXPECT_FALSE(j->Health().ok());
}

SnapshotReply Snapshot(uint64_t epoch, uint64_t ts, int keys) {
  SnapshotReply s;
  s.at = {epoch, ts};
  s.next_slot = {5, 6};
  s.skip = {0, 1};
  s.stream_key = {{epoch, ts - 1}, {epoch, ts}};
  s.stream_barrier = {epoch, epoch};
  s.decided = Record(epoch);
  s.leader_epoch = epoch;
  for (int i = 0; i < keys; i++) s.writes.push_back({static_cast<uint32_t>(i % 3), "key" + std::to_string(i), std::string(i % 50, 'v')});
  return s;
}

TEST(Checkpoint, RoundTripsInChunksAndKeepsOnlyTheNewest) {
  TestDir d;
  FaultEnv env;
  SnapshotReply a = Snapshot(2, 100, 10), b = Snapshot(3, 50, 20000);
  std::string pa, pb;
  ASSERT_TRUE(WriteCheckpoint(&env, d.path(), a, &pa).ok());
  // A leftover temporary of a checkpoint that never finished.
  std::unique_ptr<CheckpointWriter> unfinished;
  ASSERT_TRUE(CheckpointWriter::Begin(&env, d.path(), Snapshot(9, 9, 0), &unfinished).ok());
  ASSERT_TRUE(unfinished->Add(1, "x", "y").ok());
  // The streamed writer of a larger one, in small chunks.
  std::unique_ptr<CheckpointWriter> w;
  ASSERT_TRUE(CheckpointWriter::Begin(&env, d.path(), b, &w, 4096).ok());
  for (const auto& x : b.writes) ASSERT_TRUE(w->Add(x.table, x.key, x.value).ok());
  ASSERT_TRUE(w->Commit(&pb).ok());
  EXPECT_FALSE(env.Exists(pa));
  std::string newest;
  ASSERT_TRUE(FindNewestCheckpoint(&env, d.path(), &newest).ok());
  EXPECT_EQ(newest, pb);
  EXPECT_FALSE(env.Exists(CheckpointWriter::DirOf(d.path()) + "/" + CheckpointWriter::FileName({9, 9}) + ".tmp"));
  unfinished.reset();

  std::unique_ptr<CheckpointReader> r;
  ASSERT_TRUE(CheckpointReader::Open(&env, pb, &r).ok());
  EXPECT_EQ(r->header().at, b.at);
  EXPECT_EQ(r->header().next_slot, b.next_slot);
  std::vector<replication::SnapshotWrite> chunk;
  size_t n = 0, chunks = 0;
  for (bool done = false; !done;) {
    ASSERT_TRUE(r->Next(&chunk, &done).ok());
    for (const auto& x : chunk) {
      EXPECT_EQ(x.key, b.writes[n].key);
      EXPECT_EQ(x.value, b.writes[n].value);
      n++;
    }
    chunks += chunk.empty() ? 0 : 1;
  }
  EXPECT_EQ(n, b.writes.size());
  EXPECT_GT(chunks, 10u);
}

TEST(Checkpoint, ATruncatedOrFlippedCheckpointIsAnErrorNamingTheOffset) {
  TestDir d;
  FaultEnv env;
  std::string path;
  ASSERT_TRUE(WriteCheckpoint(&env, d.path(), Snapshot(2, 100, 500), &path).ok());
  uint64_t size = 0;
  ASSERT_TRUE(env.FileSize(path, &size).ok());
  SnapshotReply out;
  ASSERT_TRUE(ReadCheckpoint(&env, path, &out).ok());
  EXPECT_EQ(out.writes.size(), 500u);
  ASSERT_TRUE(env.FlipByte(path, size / 2).ok());
  Status s = ReadCheckpoint(&env, path, &out);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find(" at byte "), std::string::npos) << s.message();
  ASSERT_TRUE(env.FlipByte(path, size / 2).ok());
  ASSERT_TRUE(env.TruncateFile(path, size - 3).ok());
  s = ReadCheckpoint(&env, path, &out);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("incomplete"), std::string::npos) << s.message();
}

TEST(Checkpoint, AFailedSyncLeavesNoCheckpointAndTheOldOneStays) {
  TestDir d;
  FaultEnv env;
  std::string old;
  ASSERT_TRUE(WriteCheckpoint(&env, d.path(), Snapshot(2, 100, 5), &old).ok());
  env.set_fail_sync(true);
  EXPECT_FALSE(WriteCheckpoint(&env, d.path(), Snapshot(3, 100, 5)).ok());
  env.set_fail_sync(false);
  std::string newest;
  ASSERT_TRUE(FindNewestCheckpoint(&env, d.path(), &newest).ok());
  EXPECT_EQ(newest, old);
  std::vector<std::string> names;
  ASSERT_TRUE(env.ListDir(CheckpointWriter::DirOf(d.path()), &names).ok());
  EXPECT_EQ(names.size(), 1u);
}

}  // namespace
}  // namespace rolis::durability
