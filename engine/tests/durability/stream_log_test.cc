// The per-stream segmented log: appends, group commit, rolls, truncation,
// and the faults of a disk (short writes, a full disk, a failing sync).
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "fault_env.h"
#include "recovery.h"
#include "stream_log.h"
#include "test_dir.h"

namespace rolis::durability {
namespace {

using replication::SteadyClock;
using std::chrono::seconds;

std::unique_ptr<StreamLogSet> OpenLog(Env* env, const std::string& dir, uint32_t streams, uint64_t segment_bytes = 64 << 20) {
  std::unique_ptr<StreamLogSet> log;
  StreamLogOptions opts;
  opts.segment_bytes = segment_bytes;
  EXPECT_TRUE(StreamLogSet::Open(env, dir, streams, opts, nullptr, &log).ok());
  return log;
}

RecoveredState RecoverOk(Env* env, const std::string& dir, uint32_t streams) {
  RecoveredState r;
  RecoveryOptions o;
  o.streams = streams;
  Status s = Recover(env, dir, o, &r);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return r;
}

TEST(StreamLog, AppendsBecomeDurableAndComeBack) {
  TestDir d;
  FaultEnv env;
  {
    auto log = OpenLog(&env, d.path(), 2);
    uint64_t pos = 0;
    for (uint64_t i = 0; i < 10; i++) {
      ASSERT_TRUE(log->Append(i % 2, TestSlot(i / 2, 1), &pos).ok());
      EXPECT_EQ(pos, i / 2 + 1);
    }
    ASSERT_TRUE(log->WaitDurable(0, 5, SteadyClock::now() + seconds(10)).ok());
    ASSERT_TRUE(log->WaitDurable(1, 5, SteadyClock::now() + seconds(10)).ok());
    EXPECT_EQ(log->DurableThrough(0), 5u);
  }
  RecoveredState r = RecoverOk(&env, d.path(), 2);
  EXPECT_FALSE(r.empty);
  ASSERT_EQ(r.streams[1].slots.size(), 5u);
  EXPECT_EQ(r.streams[1].slots[4].index, 4u);
  EXPECT_EQ(r.streams[1].slots[4].value->payload, TestSlot(4, 1).value->payload);
  EXPECT_EQ(r.promised, 1u);
}

// One sync covers every slot appended meanwhile: many appending threads,
// far fewer fdatasyncs than appends.
TEST(StreamLog, GroupCommitCoversManyAppendsWithOneSync) {
  TestDir d;
  FaultEnv env;
  auto log = OpenLog(&env, d.path(), 4);
  std::vector<std::thread> threads;
  for (uint32_t t = 0; t < 4; t++) {
    threads.emplace_back([&, t] {
      for (uint64_t i = 0; i < 200; i++) {
        uint64_t pos = 0;
        ASSERT_TRUE(log->Append(t, TestSlot(i, 1, 1000), &pos).ok());
        if (i % 50 == 49) {
          ASSERT_TRUE(log->WaitDurable(t, pos, SteadyClock::now() + seconds(20)).ok());
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  StreamLogStats st = log->stats();
  EXPECT_EQ(st.appends, 800u);
  EXPECT_LT(st.fdatasyncs, st.appends / 2) << "syncs " << st.fdatasyncs;
  std::printf("800 appends on 4 streams: %llu fdatasyncs in %llu rounds\n",
              static_cast<unsigned long long>(st.fdatasyncs), static_cast<unsigned long long>(st.sync_rounds));
}

// The wait and the listener: held syncs keep a position from being durable.
TEST(StreamLog, NothingIsDurableBeforeItsSyncAndTheListenerSaysWhen) {
  TestDir d;
  FaultEnv env;
  auto log = OpenLog(&env, d.path(), 1);
  std::atomic<int> calls{0};
  log->SetListener([&](uint32_t) { calls++; });
  env.HoldSyncs(true);
  uint64_t pos = 0;
  ASSERT_TRUE(log->Append(0, TestSlot(0, 1), &pos).ok());
  Status s = log->WaitDurable(0, pos, SteadyClock::now() + std::chrono::milliseconds(100));
  EXPECT_TRUE(s.IsAborted()) << s.ToString();
  EXPECT_EQ(log->DurableThrough(0), 0u);
  env.HoldSyncs(false);
  ASSERT_TRUE(log->WaitDurable(0, pos, SteadyClock::now() + seconds(10)).ok());
  for (int i = 0; i < 1000 && calls == 0; i++) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_GE(calls.load(), 1);
}

TEST(StreamLog, RollsAtTheSizeBoundAndRemovesWholeSegmentsBelowASlot) {
  TestDir d;
  FaultEnv env;
  auto log = OpenLog(&env, d.path(), 1, 4096);
  uint64_t pos = 0;
  for (uint64_t i = 0; i < 40; i++) ASSERT_TRUE(log->Append(0, TestSlot(i, 1, 500), &pos).ok());
  ASSERT_TRUE(log->WaitDurable(0, pos, SteadyClock::now() + seconds(10)).ok());
  std::vector<SegmentInfo> segs = log->Segments(0);
  ASSERT_GE(segs.size(), 5u);
  EXPECT_EQ(segs[0].name, 0u);
  for (size_t i = 1; i < segs.size(); i++) {
    EXPECT_EQ(segs[i].name, segs[i - 1].max_slot + 1) << "a segment is named by its first slot";
    EXPECT_LE(segs[i - 1].bytes, 4096u);
  }
  size_t removed = 0;
  ASSERT_TRUE(log->RemoveBelow(0, segs[2].name + 1, &removed).ok());
  EXPECT_EQ(removed, 2u);  // the third holds its first slot still needed
  EXPECT_FALSE(env.Exists(segs[0].path));
  EXPECT_TRUE(env.Exists(segs[2].path));
  log.reset();
  RecoveredState r = RecoverOk(&env, d.path(), 1);
  ASSERT_FALSE(r.streams[0].slots.empty());
  EXPECT_EQ(r.streams[0].slots.front().index, segs[2].name);
  EXPECT_EQ(r.streams[0].slots.back().index, 39u);
}

// A re-sent lower slot opening a segment still gets a name above the last.
TEST(StreamLog, SegmentNamesGrowEvenWhenALowerSlotOpensOne) {
  TestDir d;
  FaultEnv env;
  auto log = OpenLog(&env, d.path(), 1, 1500);
  uint64_t pos = 0;
  for (uint64_t i : {0, 1, 2, 3, 1, 2, 3, 4, 5}) ASSERT_TRUE(log->Append(0, TestSlot(i, 1 + (i < 4 ? 0 : 1), 600), &pos).ok());
  std::vector<SegmentInfo> segs = log->Segments(0);
  for (size_t i = 1; i < segs.size(); i++) EXPECT_GT(segs[i].name, segs[i - 1].name);
  ASSERT_TRUE(log->WaitDurable(0, pos, SteadyClock::now() + seconds(10)).ok());
  log.reset();
  RecoveredState r = RecoverOk(&env, d.path(), 1);
  EXPECT_EQ(r.streams[0].slots.size(), 6u);
  // A reopened log continues after the recovered segments.
  std::unique_ptr<StreamLogSet> again;
  ASSERT_TRUE(StreamLogSet::Open(&env, d.path(), 1, StreamLogOptions{1500}, &r.segments, &again).ok());
  ASSERT_TRUE(again->Append(0, TestSlot(6, 2, 10), &pos).ok());
  EXPECT_GT(again->Segments(0).back().name, segs.back().name);
}

TEST(StreamLog, ShortWritesStillWriteEveryFrame) {
  TestDir d;
  FaultEnv env;
  env.set_max_write(7);
  {
    auto log = OpenLog(&env, d.path(), 1);
    uint64_t pos = 0;
    for (uint64_t i = 0; i < 20; i++) ASSERT_TRUE(log->Append(0, TestSlot(i, 3, 250), &pos).ok());
    ASSERT_TRUE(log->WaitDurable(0, pos, SteadyClock::now() + seconds(10)).ok());
  }
  EXPECT_GT(env.writes(), 20u * 250 / 7);
  RecoveredState r = RecoverOk(&env, d.path(), 1);
  ASSERT_EQ(r.streams[0].slots.size(), 20u);
  EXPECT_TRUE(r.stats.cut.empty());
}

// A full disk refuses the append that does not fit and leaves no partial
// frame behind; what was durable stays, and appends go on once space is back.
TEST(StreamLog, AFullDiskRefusesTheAppendAndLeavesTheLogWhole) {
  TestDir d;
  FaultEnv env;
  auto log = OpenLog(&env, d.path(), 1);
  uint64_t pos = 0;
  for (uint64_t i = 0; i < 5; i++) ASSERT_TRUE(log->Append(0, TestSlot(i, 1, 200), &pos).ok());
  env.set_space(300);
  ASSERT_TRUE(log->Append(0, TestSlot(5, 1, 200), &pos).ok());
  Status s = log->Append(0, TestSlot(6, 1, 200), &pos);
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted) << s.ToString();
  EXPECT_NE(s.message().find("No space"), std::string::npos);
  EXPECT_TRUE(log->Health().ok());
  env.set_space(-1);
  ASSERT_TRUE(log->Append(0, TestSlot(7, 1, 200), &pos).ok());
  ASSERT_TRUE(log->WaitDurable(0, pos, SteadyClock::now() + seconds(10)).ok());
  log.reset();
  RecoveredState r = RecoverOk(&env, d.path(), 1);
  EXPECT_TRUE(r.stats.cut.empty());
  std::vector<uint64_t> idx;
  for (auto& sl : r.streams[0].slots) idx.push_back(sl.index);
  EXPECT_EQ(idx, (std::vector<uint64_t>{0, 1, 2, 3, 4, 5, 7}));
}

// A failing fdatasync fails the log for good: the waits fail, nothing more
// becomes durable, later appends are refused, the listener hears of it.
TEST(StreamLog, AFailingSyncFailsTheLogForGood) {
  TestDir d;
  FaultEnv env;
  auto log = OpenLog(&env, d.path(), 2);
  std::atomic<int> told{0};
  log->SetListener([&](uint32_t) { told++; });
  uint64_t pos = 0;
  ASSERT_TRUE(log->Append(0, TestSlot(0, 1), &pos).ok());
  ASSERT_TRUE(log->WaitDurable(0, pos, SteadyClock::now() + seconds(10)).ok());
  env.set_fail_sync(true);
  ASSERT_TRUE(log->Append(0, TestSlot(1, 1), &pos).ok());
  Status s = log->WaitDurable(0, pos, SteadyClock::now() + seconds(10));
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("fdatasync"), std::string::npos) << s.ToString();
  EXPECT_EQ(log->DurableThrough(0), 1u);
  env.set_fail_sync(false);  // a later sync that works changes nothing
  EXPECT_FALSE(log->Append(0, TestSlot(2, 1), &pos).ok());
  EXPECT_FALSE(log->WaitDurable(1, 0, SteadyClock::now() + seconds(1)).ok());
  EXPECT_FALSE(log->Health().ok());
  for (int i = 0; i < 1000 && told < 2; i++) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_GE(told.load(), 2);  // every stream
}

}  // namespace
}  // namespace rolis::durability
