// TPC-A: under heavy skew (most deposits on branch 0) branches, tellers and
// accounts still each sum to the history, and the check catches a change
// to one of them alone.
#include "workloads/tpca.h"

#include <gtest/gtest.h>

#include "small_workload_run.h"
#include "workloads/u64_table.h"

namespace rolis::workloads {
namespace {

TEST(Tpca, SkewedRunKeepsTheSums) {
  TpcaConfig c;
  c.branches = 20;
  c.accounts_per_branch = 100;
  c.zipf_theta = 0.95;
  Tpca tpca(c);
  auto db = OpenAndLoad(tpca);
  bench::RunResult r = RunFixed(db.get(), tpca, 5000);
  EXPECT_EQ(r.commits, 10000u);
  // The skew makes the two threads collide when they run at once; on a
  // loaded machine they may not overlap, so collisions are not asserted.
  RecordProperty("conflict_aborts", static_cast<int>(r.conflict_aborts));
  bench::WaitForSnapshot(db.get(), 2000);
  Status s = tpca.CheckConsistency(db.get());
  EXPECT_TRUE(s.ok()) << s.ToString();

  std::unique_ptr<Worker> w = db->RegisterWorker();
  std::unique_ptr<Transaction> txn = w->Begin();
  Table* teller = nullptr;
  ASSERT_TRUE(db->GetTable("tpca_teller", &teller).ok());
  ASSERT_TRUE(PutU64(*txn, teller, 3, 12345).ok());
  ASSERT_TRUE(txn->Commit().ok());
  w.reset();
  bench::WaitForSnapshot(db.get(), 2000);
  s = tpca.CheckConsistency(db.get());
  EXPECT_EQ(s.code(), StatusCode::kInternal) << s.ToString();
}

}  // namespace
}  // namespace rolis::workloads
