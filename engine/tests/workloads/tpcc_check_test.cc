// CheckTpccConsistency (the check rolis-bench makes after a TPC-C run): it
// holds after a two-thread run, and names condition 1 when a warehouse's
// W_YTD is changed alone.
#include "workloads/tpcc_check.h"

#include <gtest/gtest.h>

#include <string>

#include "small_workload_run.h"
#include "workloads/tpcc_schema.h"

namespace rolis::workloads {
namespace {

TEST(TpccCheck, HoldsAfterARunAndCatchesAChangedYtd) {
  TpccConfig c;
  c.warehouses = 2;
  c.items = 2000;
  c.customers_per_district = 100;
  c.new_orders_per_district = 30;
  Tpcc tpcc(c);
  auto db = OpenAndLoad(tpcc);
  bench::RunResult r = RunFixed(db.get(), tpcc, 2000);
  EXPECT_GT(r.commits, 3000u);
  bench::WaitForSnapshot(db.get(), 2000);
  Status s = CheckTpccConsistency(db.get(), tpcc);
  EXPECT_TRUE(s.ok()) << s.ToString();

  std::unique_ptr<Worker> w = db->RegisterWorker();
  std::unique_ptr<Transaction> txn = w->Begin();
  auto wk = tpcc::WarehouseKey(2);
  std::string v;
  ASSERT_TRUE(txn->Get(tpcc.tables().warehouse, wk.view(), &v).ok());
  tpcc::Warehouse wh{};
  ASSERT_TRUE(tpcc::DecodeRow(v, &wh));
  wh.ytd += 1;
  ASSERT_TRUE(txn->Put(tpcc.tables().warehouse, wk.view(),
                       tpcc::RowBytes(wh)).ok());
  ASSERT_TRUE(txn->Commit().ok());
  w.reset();
  bench::WaitForSnapshot(db.get(), 2000);
  s = CheckTpccConsistency(db.get(), tpcc);
  EXPECT_EQ(s.code(), StatusCode::kInternal) << s.ToString();
  EXPECT_NE(s.message().find("warehouse 2: condition 1"), std::string::npos) << s.ToString();
}

}  // namespace
}  // namespace rolis::workloads
