// The local keys a received snapshot lacks (engine/src/replication/stale_keys.h):
// a merge walk of a real store's scan against the snapshot's packed writes,
// in scan order or not.
#include "stale_keys.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "rolis/db.h"

namespace rolis::replication {
namespace {

using Keys = std::vector<std::pair<TableId, std::string>>;

// Two tables: in each, local keys k000..k099 (even ones only in table 1).
class TwoTables {
 public:
  TwoTables() {
    Options o;
    o.epoch_period_ms = 2;
    db_ = Database::Open(o);
    EXPECT_TRUE(db_->CreateTable("a", &a_).ok());
    EXPECT_TRUE(db_->CreateTable("b", &b_).ok());
    worker_ = db_->RegisterWorker();
    auto txn = worker_->Begin();
    for (int i = 0; i < 100; i++) {
      EXPECT_TRUE(txn->Put(a_, Key(i), "v").ok());
      if (i % 2 == 0) {
        EXPECT_TRUE(txn->Put(b_, Key(i), "v").ok());
      }
    }
    EXPECT_TRUE(txn->Commit().ok());
    txn.reset();
    const uint64_t target = db_->Stats().current_epoch;
    while (db_->Stats().snapshot_epoch < target) worker_->Quiesce();
  }
  static std::string Key(int i) {
    char b[8];
    std::snprintf(b, sizeof b, "k%03d", i);
    return b;
  }
  Keys Stale(const PackedWrites& w, bool* sorted) {
    Keys out;
    auto txn = worker_->BeginReadOnly();
    EXPECT_TRUE(KeysNotInSnapshot(db_.get(), txn.get(), w, &out, sorted).ok());
    return out;
  }

 private:
  std::unique_ptr<Database> db_;
  Table* a_ = nullptr;
  Table* b_ = nullptr;
  std::unique_ptr<Worker> worker_;
};

// The snapshot: in table 0 every key but multiples of 7, plus keys the
// store lacks (below, between and above its own); in table 1 nothing
// below k050. What is stale: table 0's multiples of 7, table 1's even keys
// below k050.
std::vector<std::pair<TableId, std::string>> SnapshotWrites() {
  std::vector<std::pair<TableId, std::string>> w;
  w.push_back({0, "a-only-in-the-snapshot"});
  for (int i = 0; i < 100; i++) {
    if (i % 7 != 0) w.push_back({0, TwoTables::Key(i)});
    if (i == 50) w.push_back({0, "k050x"});
  }
  w.push_back({0, "z"});
  for (int i = 50; i < 100; i++) w.push_back({1, TwoTables::Key(i)});
  return w;
}

Keys WantStale() {
  Keys want;
  for (int i = 0; i < 100; i += 7) want.push_back({0, TwoTables::Key(i)});
  for (int i = 0; i < 50; i += 2) want.push_back({1, TwoTables::Key(i)});
  return want;
}

TEST(StaleKeys, AWalkInScanOrderFindsTheLocalKeysTheSnapshotLacksWhereverTheyFall) {
  TwoTables db;
  PackedWrites w;
  for (const auto& [t, k] : SnapshotWrites()) w.Add(t, k, "s");
  ASSERT_TRUE(w.in_scan_order());
  bool sorted = true;
  EXPECT_EQ(db.Stale(w, &sorted), WantStale());
  EXPECT_FALSE(sorted);
}

TEST(StaleKeys, WritesOutOfScanOrderAreWalkedThroughASortedIndex) {
  TwoTables db;
  auto writes = SnapshotWrites();
  std::mt19937 rng(7);
  std::shuffle(writes.begin(), writes.end(), rng);
  PackedWrites w;
  for (const auto& [t, k] : writes) w.Add(t, k, "s");
  ASSERT_FALSE(w.in_scan_order());
  bool sorted = false;
  EXPECT_EQ(db.Stale(w, &sorted), WantStale());
  EXPECT_TRUE(sorted);
}

TEST(StaleKeys, AnEmptySnapshotLeavesEveryLocalKeyStale) {
  TwoTables db;
  PackedWrites w;
  EXPECT_EQ(db.Stale(w, nullptr).size(), 150u);
}

}  // namespace
}  // namespace rolis::replication
