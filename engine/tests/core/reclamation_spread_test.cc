// Reclamation is spread over transactions: once the reclaim epoch passes a
// backlog of retired versions, the next transaction frees only a share of
// it (so no transaction stalls for milliseconds at an epoch change), and
// the transactions that follow free the rest without waiting for another
// epoch change.
#include <gtest/gtest.h>

#include "database_impl.h"
#include "test_util.h"

namespace rolis {
namespace {

constexpr uint64_t kKeys = 20000;

void OverwriteAll(Worker* w, Table* t, const std::string& value) {
  for (uint64_t k = 0; k < kKeys; k += 100) {
    ASSERT_TRUE(testing::RunRw(w, [&](Transaction* txn) {
                  for (uint64_t i = k; i < k + 100; i++) {
                    Status s = txn->Put(t, testing::KeyU64(i), value);
                    if (!s.ok()) return s;
                  }
                  return Status::OK();
                }).ok());
  }
}

void ReadOne(Worker* w, Table* t) {
  auto txn = w->Begin();
  std::string v;
  ASSERT_TRUE(txn->Get(t, testing::KeyU64(0), &v).ok());
  ASSERT_TRUE(txn->Commit().ok());
}

TEST(ReclamationSpreadTest, ABacklogIsFreedAShareAtATimeByTheFollowingTransactions) {
  auto db = testing::OpenDb(/*epoch_ms=*/100000);  // epochs advance only when the test says
  auto* impl = static_cast<core::DatabaseImpl*>(db.get());
  Table* t = testing::MakeTable(db.get(), "t");
  auto w = db->RegisterWorker();
  auto advance = [&](int n) {
    for (int i = 0; i < n; i++) impl->AdvanceEpochForTest();
  };

  // Closes the epoch of what was just written: the worker publishes a newer
  // epoch and the advancer's next pass moves the snapshots past it.
  auto settle = [&] {
    advance(1);
    ReadOne(w.get(), t);
    advance(1);
  };
  OverwriteAll(w.get(), t, "a");  // inserts
  settle();
  OverwriteAll(w.get(), t, "b");  // each key keeps "a" as a version
  settle();
  OverwriteAll(w.get(), t, "c");  // keeps "b"; "a" is trimmed and retired
  settle();                       // the reclaim epoch passes the retired "a" versions
  const uint64_t backlog = db->Stats().live_versions;
  ASSERT_EQ(backlog, 2 * kKeys);
  const uint64_t epoch = db->Stats().current_epoch;

  ReadOne(w.get(), t);  // frees a share of the backlog, not all of it
  const uint64_t after_one = db->Stats().live_versions;
  EXPECT_LT(after_one, backlog) << "a transaction after the reclaim epoch moved frees something";
  EXPECT_GE(after_one, backlog - kKeys / 16) << "one transaction freed more than a share of the backlog";

  for (int i = 0; i < 5000 && db->Stats().live_versions > kKeys; i++) ReadOne(w.get(), t);
  EXPECT_EQ(db->Stats().live_versions, kKeys) << "the following transactions free the whole backlog";
  EXPECT_EQ(db->Stats().current_epoch, epoch) << "without another epoch change";
}

}  // namespace
}  // namespace rolis
