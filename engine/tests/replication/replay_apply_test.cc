// ReplayApplier queues whole transactions and applies them through
// Database::ApplyReplicatedBatch: a flush never splits a transaction (a
// group closes before a transaction that would overflow it; one larger
// than a group goes alone), and what it applies is what was queued.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "replay_apply.h"
#include "rolis/db.h"

namespace rolis::replication {
namespace {

// A database with one table and the worker replay uses.
class ReplayDb {
 public:
  ReplayDb() {
    Options o;
    o.epoch_period_ms = 2;
    db_ = Database::Open(o);
    EXPECT_TRUE(db_->CreateTable("t", &table_).ok());
    worker_ = db_->RegisterWorker();
  }
  std::unique_ptr<Database> db_;
  Table* table_ = nullptr;
  std::unique_ptr<Worker> worker_;
};

std::string Key(int i) { return "k" + std::to_string(i); }

TEST(ReplayApplier, FlushesWholeTransactionsAndAppliesThemInOrder) {
  ReplayDb c;
  ReplayApplier applier(c.db_.get(), c.worker_.get(), 1);
  std::vector<std::string> keys, values;
  for (int i = 0; i < 400; i++) {
    keys.push_back(Key(i % 150));  // repeated keys: the later write wins
    values.push_back("v" + std::to_string(i));
  }
  std::vector<WriteRecord> writes;
  for (int i = 0; i < 400; i++) writes.push_back({c.table_->id(), keys[i], values[i], false});
  // Transactions of 3 writes: 64 is not a multiple, so a group closes early.
  uint64_t ts = 1;
  size_t at = 0;
  for (; at + 3 <= 300; at += 3) {
    const size_t before = applier.queued();
    applier.Add(std::span<const WriteRecord>(writes.data() + at, 3), 1, ts++);
    EXPECT_LE(applier.queued(), ReplayApplier::kGroupWrites);
    EXPECT_EQ(applier.queued() % 3, 0u) << "a transaction was split";
    if (applier.queued() < before) {
      EXPECT_EQ(applier.queued(), 3u);  // flushed, then this one queued
    }
  }
  // A transaction larger than a group is queued whole, alone.
  applier.Add(std::span<const WriteRecord>(writes.data() + at, 100), 1, ts++);
  EXPECT_EQ(applier.queued(), 100u);
  applier.Flush();
  EXPECT_EQ(applier.queued(), 0u);
  EXPECT_EQ(applier.failed_flushes(), 0u);

  auto txn = c.worker_->Begin();
  for (int k = 0; k < 150; k++) {
    int last = -1;
    for (int i = 0; i < 400; i++) {
      if (i % 150 == k) last = i;
    }
    std::string v;
    ASSERT_TRUE(txn->Get(c.table_, Key(k), &v).ok()) << k;
    EXPECT_EQ(v, values[static_cast<size_t>(last)]) << k;
  }
  ASSERT_TRUE(txn->Commit().ok());
}

TEST(ReplayApplier, AFailedWriteIsCountedAndTheOthersApplied) {
  ReplayDb c;
  ReplayApplier applier(c.db_.get(), c.worker_.get(), 1);
  WriteRecord w[] = {{c.table_->id(), "a", "1", false}, {999, "b", "2", false}, {c.table_->id(), "c", "3", false}};
  applier.Add(w, 1, 5);
  applier.Flush();
  EXPECT_EQ(applier.failed_flushes(), 1u);
  auto txn = c.worker_->Begin();
  std::string v;
  EXPECT_TRUE(txn->Get(c.table_, "a", &v).ok());
  EXPECT_TRUE(txn->Get(c.table_, "c", &v).ok());
  ASSERT_TRUE(txn->Commit().ok());
}

}  // namespace
}  // namespace rolis::replication
