// ApplyReplicatedBatch gives, write for write, the state that
// ApplyReplicated of each write in order gives (random groups over several
// tables with inserts, overwrites, deletes, repeated keys, late and
// duplicate writes, heap-sized values and long keys); it skips an invalid
// write and applies the rest; tombstones it leaves are reclaimed below the
// replay horizon; and a read-only snapshot sees a whole group or none of it.
#include <gtest/gtest.h>

#include <atomic>
#include <deque>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "database_impl.h"
#include "test_util.h"

namespace rolis {
namespace {

using namespace std::chrono_literals;

// Everything replay leaves in a record, per (table, key).
using RecordState = std::tuple<uint64_t /*word*/, uint64_t /*ts*/, uint32_t /*repl_epoch*/, bool /*tombstone*/,
                               std::string /*value*/>;
using StoreState = std::map<std::pair<TableId, std::string>, RecordState>;

StoreState Dump(Database* db, uint32_t tables) {
  auto* impl = static_cast<core::DatabaseImpl*>(db);
  StoreState out;
  for (TableId id = 0; id < tables; ++id) {
    impl->TableById(id)->tree.ForEachRecordUnsafe([&](core::Record* r) {
      const bool absent = (r->word.load() & core::tid::kAbsent) != 0;
      out[{id, std::string(r->key())}] =
          RecordState{r->word.load(), r->ts, r->repl_epoch, (r->flags & core::kFlagReplTombstone) != 0,
                      absent ? std::string() : std::string(r->ValuePtr(), r->vlen)};
    });
  }
  return out;
}

struct Gen {
  std::mt19937_64 rng{42};
  std::vector<std::string> keys;
  Gen() {
    for (int i = 0; i < 300; ++i) {
      std::string k = testing::KeyU64(static_cast<uint64_t>(i) * 7919);
      if (i % 5 == 0) k += std::string(20 + i % 13, static_cast<char>('a' + i % 26));  // long keys share 16-byte prefixes
      keys.push_back(k);
    }
  }
  // A random write; `vals` keeps the bytes alive.
  ReplicatedWrite Next(std::deque<std::string>* vals, uint32_t tables) {
    ReplicatedWrite w;
    w.write.table = static_cast<TableId>(rng() % tables);
    w.write.key = keys[rng() % keys.size()];
    w.write.is_delete = rng() % 6 == 0;
    if (!w.write.is_delete) {
      size_t len = rng() % 4 == 0 ? 40 + rng() % 300 : rng() % 12;  // past the inline space too
      vals->push_back(std::string(len, static_cast<char>('A' + rng() % 26)));
      w.write.value = vals->back();
    }
    w.order_epoch = 1 + rng() % 3;
    w.order_ts = 1 + rng() % 5000;  // late and duplicate orders happen
    return w;
  }
};

class ApplyReplicatedBatchTest : public ::testing::Test {
 protected:
  static constexpr uint32_t kTables = 3;
  void SetUp() override {
    for (auto* db : {&per_write_, &batched_}) {
      *db = testing::OpenDb(1);
      for (uint32_t t = 0; t < kTables; ++t) ASSERT_NE(testing::MakeTable(db->get(), "t" + std::to_string(t)), nullptr);
    }
    pw_ = per_write_->RegisterWorker();
    bw_ = batched_->RegisterWorker();
  }
  void ApplyBoth(const std::vector<ReplicatedWrite>& group) {
    for (const ReplicatedWrite& w : group) {
      ASSERT_TRUE(per_write_->ApplyReplicated(pw_.get(), w.write, w.order_epoch, w.order_ts).ok());
    }
    ASSERT_TRUE(batched_->ApplyReplicatedBatch(bw_.get(), group).ok());
  }
  // Keys spread over the key space, for the version tests.
  static std::vector<std::string> SpreadKeys() {
    std::vector<std::string> keys;
    for (int i = 0; i < 50; ++i) keys.push_back(testing::KeyU64(static_cast<uint64_t>(i) * 1000003));
    return keys;
  }
  // One group that writes "v<g>" (kept alive in `vals`) under every key of
  // tables 0 .. tables-1, replayed into batched_.
  void ApplyEverywhere(uint64_t g, int tables, const std::vector<std::string>& keys, std::deque<std::string>* vals) {
    vals->push_back("v" + std::to_string(g));
    std::vector<ReplicatedWrite> group;
    for (int t = 0; t < tables; ++t) {
      for (const std::string& k : keys) group.push_back({{static_cast<TableId>(t), k, vals->back(), false}, 1, g});
    }
    ASSERT_TRUE(batched_->ApplyReplicatedBatch(bw_.get(), group).ok());
  }
  // Waits (up to 1 s) until batched_'s epoch moves on.
  void NextEpoch() {
    const uint64_t e = batched_->Stats().current_epoch;
    for (int i = 0; i < 1000 && batched_->Stats().current_epoch == e; ++i) std::this_thread::sleep_for(1ms);
  }
  std::unique_ptr<Database> per_write_, batched_;
  std::unique_ptr<Worker> pw_, bw_;
};

TEST_F(ApplyReplicatedBatchTest, RandomGroupsLeaveTheSameRecordsAsOneWriteAtATime) {
  Gen gen;
  std::deque<std::string> vals;
  for (int round = 0; round < 400; ++round) {
    std::vector<ReplicatedWrite> group;
    const size_t n = gen.rng() % 4 == 0 ? gen.rng() % 200 : gen.rng() % 40;  // across lookup groups too
    for (size_t i = 0; i < n; ++i) group.push_back(gen.Next(&vals, kTables));
    ApplyBoth(group);
    if (round % 50 == 0) {  // epochs move, so versions and trimming are exercised
      static_cast<core::DatabaseImpl*>(per_write_.get())->AdvanceEpochForTest();
      static_cast<core::DatabaseImpl*>(batched_.get())->AdvanceEpochForTest();
    }
  }
  StoreState a = Dump(per_write_.get(), kTables), b = Dump(batched_.get(), kTables);
  EXPECT_GT(a.size(), 500u);
  EXPECT_EQ(a.size(), b.size());
  EXPECT_TRUE(a == b);
  EXPECT_EQ(per_write_->Stats().live_records, batched_->Stats().live_records);
}

TEST_F(ApplyReplicatedBatchTest, EveryWriteOfTheGroupToOneKeyIsAppliedInOrder) {
  // The first write inserts the key after the group lookup found it absent.
  std::vector<ReplicatedWrite> group = {
      {{0, "k", "one", false}, 1, 10}, {{0, "k", "", true}, 1, 11}, {{0, "k", "three", false}, 1, 12},
      {{0, "k", "late", false}, 1, 9},  {{1, "k", "other", false}, 1, 5},
  };
  ApplyBoth(group);
  EXPECT_TRUE(Dump(per_write_.get(), kTables) == Dump(batched_.get(), kTables));
  auto txn = bw_->Begin();
  std::string v;
  ASSERT_TRUE(txn->Get(static_cast<core::DatabaseImpl*>(batched_.get())->TableById(0), "k", &v).ok());
  EXPECT_EQ(v, "three");
  ASSERT_TRUE(txn->Commit().ok());
}

TEST_F(ApplyReplicatedBatchTest, InvalidWritesAreSkippedAndTheRestApplied) {
  std::string big(batched_->limits().max_key_bytes + 1, 'x');
  std::vector<ReplicatedWrite> group = {
      {{0, "a", "1", false}, 1, 1},
      {{77, "b", "2", false}, 1, 2},    // unknown table
      {{0, "", "3", false}, 1, 3},      // empty key
      {{0, big, "4", false}, 1, 4},     // key too long
      {{0, "e", "5", false}, 1ull << 33, 5},  // epoch too large
      {{1, "f", "6", false}, 1, 6},
  };
  Status s = batched_->ApplyReplicatedBatch(bw_.get(), group);
  EXPECT_EQ(s.code(), StatusCode::kNotFound);  // the first failure
  StoreState b = Dump(batched_.get(), kTables);
  EXPECT_EQ(b.size(), 2u);
  EXPECT_EQ(b.count({0, "a"}), 1u);
  EXPECT_EQ(b.count({1, "f"}), 1u);
  EXPECT_EQ(batched_->ApplyReplicatedBatch(nullptr, group).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(batched_->ApplyReplicatedBatch(pw_.get(), group).code(), StatusCode::kInvalidArgument);  // other db
  auto open = bw_->Begin();
  EXPECT_EQ(batched_->ApplyReplicatedBatch(bw_.get(), group).code(), StatusCode::kFailedPrecondition);
  open->Abort();
  EXPECT_TRUE(batched_->ApplyReplicatedBatch(bw_.get(), {}).ok());
}

TEST_F(ApplyReplicatedBatchTest, TombstonesBelowTheReplayHorizonAreReclaimed) {
  std::vector<ReplicatedWrite> group;
  std::vector<std::string> keys;
  for (int i = 0; i < 100; ++i) keys.push_back(testing::KeyU64(i));
  for (int i = 0; i < 100; ++i) group.push_back({{0, keys[i], "v", false}, 1, 10u + i});
  for (int i = 0; i < 100; ++i) group.push_back({{0, keys[i], "", true}, 1, 1000u + i});
  ASSERT_TRUE(batched_->ApplyReplicatedBatch(bw_.get(), group).ok());
  EXPECT_EQ(batched_->Stats().live_records, 100u);
  batched_->SetReplayHorizon(1, 1049);  // covers the first 50 tombstones
  for (int i = 0; i < 200 && batched_->Stats().live_records > 50; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    bw_->Quiesce();
  }
  EXPECT_EQ(batched_->Stats().live_records, 50u);
  // A late write of a reclaimed key is a fresh insert; of a kept one, it loses.
  ASSERT_TRUE(batched_->ApplyReplicatedBatch(bw_.get(), std::vector<ReplicatedWrite>{
                                                             {{0, keys[0], "late", false}, 1, 500},
                                                             {{0, keys[99], "late", false}, 1, 500}})
                  .ok());
  StoreState b = Dump(batched_.get(), kTables);
  EXPECT_EQ(std::get<4>(b[{0, keys[0]}]), "late");
  EXPECT_TRUE(std::get<3>(b[{0, keys[99]}]));
}

// Each group sets every key of two tables to the group's number: a
// read-only snapshot must find one number everywhere. (One write at a time
// gives no such promise: a group's writes may straddle two epochs.)
TEST_F(ApplyReplicatedBatchTest, ReadOnlySnapshotsSeeAWholeGroupOrNone) {
  constexpr int kKeys = 50;  // more than one lookup group per table
  Table* tables[2];
  ASSERT_TRUE(batched_->GetTable(0, &tables[0]).ok());
  ASSERT_TRUE(batched_->GetTable(1, &tables[1]).ok());
  std::vector<std::string> keys;
  for (int i = 0; i < kKeys; ++i) keys.push_back(testing::KeyU64(static_cast<uint64_t>(i) * 1000003));
  std::atomic<bool> stop{false};
  std::atomic<int> mixed{0}, checked{0}, distinct{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < 2; ++r) {
    readers.emplace_back([&] {
      auto w = batched_->RegisterWorker();
      std::string last;
      while (!stop.load()) {
        auto ro = w->BeginReadOnly();
        std::string first;
        bool seen = false, bad = false;
        for (Table* t : tables) {
          Status s = ro->Scan(t, "", "", 0, [&](std::string_view, std::string_view v) {
            if (!seen) {
              first = std::string(v);
              seen = true;
            } else if (v != first) {
              bad = true;
            }
            return true;
          });
          EXPECT_TRUE(s.ok());
        }
        (void)ro->Commit();
        if (bad) mixed.fetch_add(1);
        if (seen) {
          checked.fetch_add(1);
          if (first != last) distinct.fetch_add(1);
          last = first;
        }
        w->Quiesce();
      }
    });
  }
  std::vector<ReplicatedWrite> group;
  std::deque<std::string> vals;
  auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(600);
  for (uint64_t g = 1; std::chrono::steady_clock::now() < until; ++g) {
    vals.push_back(std::to_string(g) + std::string(g % 3 == 0 ? 40 : 0, '.'));  // heap-sized values too
    if (vals.size() > 8) vals.pop_front();  // (a group's views are used only during its call)
    group.clear();
    for (int t = 0; t < 2; ++t) {
      for (const std::string& k : keys) group.push_back({{static_cast<TableId>(t), k, vals.back(), false}, 1, g});
    }
    ASSERT_TRUE(batched_->ApplyReplicatedBatch(bw_.get(), group).ok());
    if (g % 64 == 0) bw_->Quiesce();  // as the replay loop does when idle
  }
  stop.store(true);
  for (auto& t : readers) t.join();
  EXPECT_EQ(mixed.load(), 0);
  EXPECT_GT(checked.load(), 10);
  EXPECT_GT(distinct.load(), 2);
}

// With no reader around, replay overwrites keep no old versions; a reader
// that begins right after such an overwrite waits until its snapshot covers
// it, so it sees the whole group, never a record with its old value gone.
// While a reader holds a snapshot, replay keeps the versions it needs.
TEST_F(ApplyReplicatedBatchTest, ReplayKeepsNoOldVersionsUnreadAndALateReaderSeesTheWholeGroup) {
  Table* tables[2];
  ASSERT_TRUE(batched_->GetTable(0, &tables[0]).ok());
  ASSERT_TRUE(batched_->GetTable(1, &tables[1]).ok());
  const std::vector<std::string> keys = SpreadKeys();
  std::deque<std::string> vals;
  auto apply = [&](uint64_t g) { ApplyEverywhere(g, 2, keys, &vals); };
  auto scan = [&](Transaction* ro) {
    std::map<std::string, int> seen;  // value -> count over both tables
    for (Table* t : tables) {
      EXPECT_TRUE(ro->Scan(t, "", "", 0, [&](std::string_view, std::string_view v) {
        seen[std::string(v)]++;
        return true;
      }).ok());
    }
    return seen;
  };
  auto reader = batched_->RegisterWorker();
  apply(1);
  bw_->Quiesce();
  NextEpoch();
  apply(2);  // no reader ever: the values of group 1 are not kept
  bw_->Quiesce();  // as the replay loop does when idle (else the reader waits for its next group)
  EXPECT_EQ(batched_->Stats().live_versions, 0u);
  {
    auto ro = reader->BeginReadOnly();  // at once, in the epoch of group 2
    EXPECT_EQ(scan(ro.get()), (std::map<std::string, int>{{"v2", 100}}));
    // An open snapshot: the next overwrites keep what it reads.
    bw_->Quiesce();
    NextEpoch();
    apply(3);
    EXPECT_GE(batched_->Stats().live_versions, 100u);
    EXPECT_EQ(scan(ro.get()), (std::map<std::string, int>{{"v2", 100}}));
    (void)ro->Commit();
  }
  reader->Quiesce();
}

// Versions kept while a reader was around go with the first overwrite after
// the readers are gone (not only the ones older than the newest a snapshot
// might read): every later install of the record would otherwise read the
// chain's cold head again.
TEST_F(ApplyReplicatedBatchTest, ReplayDropsTheVersionsKeptForAReaderOnceReadersAreGone) {
  Table* table = nullptr;
  ASSERT_TRUE(batched_->GetTable(0, &table).ok());
  const std::vector<std::string> keys = SpreadKeys();
  std::deque<std::string> vals;
  auto apply = [&](uint64_t g) {
    ApplyEverywhere(g, 1, keys, &vals);
    bw_->Quiesce();
  };
  auto reader = batched_->RegisterWorker();
  apply(1);
  const uint64_t read_epoch = batched_->Stats().current_epoch;
  {
    auto ro = reader->BeginReadOnly();
    NextEpoch();
    apply(2);  // kept for the open snapshot
    ASSERT_GE(batched_->Stats().live_versions, keys.size());
    (void)ro->Commit();
  }
  reader->Quiesce();
  // Past the quiet time that follows the last read-only begin (the fixture's epochs are 1 ms).
  const uint64_t quiet_until = read_epoch + core::DatabaseImpl::kReadersQuietMs + 20;
  for (int i = 0; i < 3000 && batched_->Stats().current_epoch <= quiet_until; ++i) {
    std::this_thread::sleep_for(1ms);
  }
  ASSERT_GT(batched_->Stats().current_epoch, quiet_until);
  apply(3);
  for (int i = 0; i < 100 && batched_->Stats().live_versions > 0; ++i) {
    NextEpoch();
    bw_->Quiesce();
  }
  EXPECT_EQ(batched_->Stats().live_versions, 0u) << "every record's chain is reclaimed";
  auto ro = reader->BeginReadOnly();
  std::string v;
  for (const std::string& k : keys) {
    ASSERT_TRUE(ro->Get(table, k, &v).ok());
    EXPECT_EQ(v, "v3");
  }
  (void)ro->Commit();
  reader->Quiesce();
}

}  // namespace
}  // namespace rolis
