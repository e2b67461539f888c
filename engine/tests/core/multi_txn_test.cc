// Several transactions open at once on one Worker (as a server interleaves
// interactive transactions): each keeps its own read and write sets, they
// conflict with each other exactly as transactions of two workers do, a
// later snapshot stays protected after an earlier one ends, and a worker
// that always has some transaction open still lets epochs, snapshots and
// reclamation advance. Also GetView: its value stays valid until the
// transaction ends, whatever other transactions do meanwhile.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "test_util.h"

namespace rolis {
namespace {

using namespace std::chrono_literals;

std::string GetOr(Transaction* txn, Table* t, std::string_view key, const char* absent = "<absent>") {
  std::string v;
  Status s = txn->Get(t, key, &v);
  if (s.IsNotFound()) return absent;
  EXPECT_TRUE(s.ok()) << s.ToString();
  return v;
}

TEST(MultiTxnTest, TwoOpenTransactionsOnOneWorkerKeepTheirOwnWritesAndConflictLikeTwoWorkers) {
  auto db = testing::OpenDb();
  Table* t = testing::MakeTable(db.get(), "t");
  auto w = db->RegisterWorker();

  auto a = w->Begin();
  auto b = w->Begin();
  ASSERT_TRUE(a->Put(t, "x", "a").ok());
  ASSERT_TRUE(b->Put(t, "y", "b").ok());
  EXPECT_EQ(GetOr(a.get(), t, "x"), "a");
  EXPECT_EQ(GetOr(a.get(), t, "y"), "<absent>") << "b's write is not committed";
  EXPECT_EQ(GetOr(b.get(), t, "y"), "b");
  ASSERT_TRUE(b->Commit().ok());
  // a read y as absent; b's commit changed it, so a must abort.
  EXPECT_EQ(a->Commit().code(), StatusCode::kAborted);

  auto c = w->Begin();
  auto d = w->Begin();
  ASSERT_TRUE(c->Put(t, "c", "1").ok());
  ASSERT_TRUE(d->Put(t, "d", "2").ok());
  ASSERT_TRUE(d->Commit().ok());
  ASSERT_TRUE(c->Commit().ok());

  auto check = w->Begin();
  EXPECT_EQ(GetOr(check.get(), t, "x"), "<absent>");
  EXPECT_EQ(GetOr(check.get(), t, "y"), "b");
  EXPECT_EQ(GetOr(check.get(), t, "c"), "1");
  EXPECT_EQ(GetOr(check.get(), t, "d"), "2");
  EXPECT_TRUE(check->Commit().ok());
}

TEST(MultiTxnTest, ALaterSnapshotStaysProtectedAfterAnEarlierOneOnTheSameWorkerEnds) {
  auto db = testing::OpenDb(/*epoch_ms=*/1);
  Table* t = testing::MakeTable(db.get(), "t");
  auto w = db->RegisterWorker();
  auto writer = db->RegisterWorker();
  ASSERT_TRUE(testing::PutOne(writer.get(), t, "k", "0").ok());
  writer->Quiesce();  // an idle writer does not hold snapshots back
  testing::WaitForSnapshot(db.get(), w.get());

  auto r1 = w->BeginReadOnly();
  EXPECT_EQ(GetOr(r1.get(), t, "k"), "0");
  ASSERT_TRUE(testing::PutOne(writer.get(), t, "k", "1").ok());
  writer->Quiesce();
  // Let snapshots move past the write (r1 holds its own, older one).
  uint64_t target = db->Stats().current_epoch;
  while (db->Stats().snapshot_epoch < target) std::this_thread::sleep_for(1ms);
  auto r2 = w->BeginReadOnly();
  EXPECT_EQ(GetOr(r2.get(), t, "k"), "1") << "a new snapshot is fresh although an older one is open";
  EXPECT_EQ(GetOr(r1.get(), t, "k"), "0");
  ASSERT_TRUE(r1->Commit().ok());

  // r2 alone now: many overwrites over many epochs must not trim what it reads.
  const auto until = std::chrono::steady_clock::now() + 300ms;
  uint64_t epochs_before = db->Stats().current_epoch;
  int i = 2;
  while (std::chrono::steady_clock::now() < until) {
    ASSERT_TRUE(testing::PutOne(writer.get(), t, "k", std::to_string(i++)).ok());
    writer->Quiesce();
  }
  EXPECT_GT(db->Stats().current_epoch, epochs_before + 10) << "epochs advanced during the overwrites";
  EXPECT_EQ(GetOr(r2.get(), t, "k"), "1");
  ASSERT_TRUE(r2->Commit().ok());
}

TEST(MultiTxnTest, AWorkerThatAlwaysHasATransactionOpenLetsSnapshotsAndReclamationAdvance) {
  auto db = testing::OpenDb(/*epoch_ms=*/1);
  Table* t = testing::MakeTable(db.get(), "t");
  auto w = db->RegisterWorker();
  const uint64_t snap_before = db->Stats().snapshot_epoch;
  uint64_t max_versions = 0, overwrites = 0;
  // Overlapping transactions: the next one begins before the previous one
  // commits, so this worker never has zero open.
  std::unique_ptr<Transaction> prev = w->Begin();
  ASSERT_TRUE(prev->Put(t, "hot", "0").ok());
  const auto until = std::chrono::steady_clock::now() + 500ms;
  while (std::chrono::steady_clock::now() < until) {
    auto next = w->Begin();
    ASSERT_TRUE(next->Put(t, "hot", std::to_string(overwrites)).ok());  // a blind write: no conflict
    ASSERT_TRUE(prev->Commit().ok());
    prev = std::move(next);
    ++overwrites;
    if (overwrites % 64 == 0) max_versions = std::max(max_versions, db->Stats().live_versions);
  }
  ASSERT_TRUE(prev->Commit().ok());
  const DatabaseStats st = db->Stats();
  EXPECT_GT(st.snapshot_epoch, snap_before + 20) << "the snapshot epoch advanced";
  EXPECT_GT(overwrites, 1000u);
  // Without re-publishing, the first transaction's epoch would stay
  // published: snapshots would stop and every epoch would leave a version.
  EXPECT_LT(max_versions, 100u) << "overwrites " << overwrites << ", epochs " << st.current_epoch;
}

TEST(MultiTxnTest, GetViewValuesStayValidUntilTheTransactionEnds) {
  auto db = testing::OpenDb(/*epoch_ms=*/1);
  Table* t = testing::MakeTable(db.get(), "t");
  auto w = db->RegisterWorker();
  auto writer = db->RegisterWorker();
  ASSERT_TRUE(testing::PutOne(writer.get(), t, "k", "first").ok());
  writer->Quiesce();
  testing::WaitForSnapshot(db.get(), w.get());

  auto rw = w->Begin();
  auto ro = w->BeginReadOnly();
  std::string_view rw_view, ro_view, own_view;
  ASSERT_TRUE(rw->GetView(t, "k", &rw_view).ok());
  ASSERT_TRUE(ro->GetView(t, "k", &ro_view).ok());
  ASSERT_TRUE(rw->Put(t, "mine", "own-1").ok());
  ASSERT_TRUE(rw->GetView(t, "mine", &own_view).ok());
  EXPECT_EQ(own_view, "own-1");
  ASSERT_TRUE(rw->Put(t, "mine", "own-2").ok());
  std::string_view own_view2;
  ASSERT_TRUE(rw->GetView(t, "mine", &own_view2).ok());
  EXPECT_EQ(own_view2, "own-2");
  std::string_view missing = "x";
  EXPECT_TRUE(rw->GetView(t, "nope", &missing).IsNotFound());
  EXPECT_TRUE(missing.empty());

  // Overwrite k many times (longer values too, so it moves to the heap)
  // while epochs pass and reclamation runs.
  const auto until = std::chrono::steady_clock::now() + 200ms;
  for (int i = 0; std::chrono::steady_clock::now() < until; ++i) {
    ASSERT_TRUE(testing::PutOne(writer.get(), t, "k", std::string(8 + i % 300, 'a' + i % 26)).ok());
    writer->Quiesce();
  }
  EXPECT_EQ(rw_view, "first");
  EXPECT_EQ(ro_view, "first");
  EXPECT_EQ(own_view, "own-1");
  std::string_view again;
  ASSERT_TRUE(ro->GetView(t, "k", &again).ok());
  EXPECT_EQ(again, "first") << "the snapshot did not move";
  ASSERT_TRUE(ro->Commit().ok());
  EXPECT_EQ(rw->Commit().code(), StatusCode::kAborted) << "k was overwritten after rw read it";
}

}  // namespace
}  // namespace rolis
