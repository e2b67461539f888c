// Bank: transfers keep the total, the audits see it, and the check fails
// when money appears from nowhere.
#include "workloads/bank.h"

#include <gtest/gtest.h>

#include "small_workload_run.h"
#include "workloads/u64_table.h"

namespace rolis::workloads {
namespace {

TEST(Bank, TransfersKeepTheTotalAndAuditsSeeIt) {
  BankConfig c;
  c.accounts = 50;  // many conflicts between the two threads
  c.read_only_percent = 10;
  Bank bank(c);
  auto db = OpenAndLoad(bank);
  bench::RunResult r = RunFixed(db.get(), bank, 5000);
  EXPECT_EQ(r.commits, 10000u);
  EXPECT_GT(r.types[kBankAudit].commits, 500u);
  EXPECT_GT(r.types[kBankTransfer].commits, 8000u);
  Status s = bank.CheckTotal(db.get());
  EXPECT_TRUE(s.ok()) << s.ToString();

  // One account gains 1 outside any transfer: the check says so.
  std::unique_ptr<Worker> w = db->RegisterWorker();
  std::unique_ptr<Transaction> txn = w->Begin();
  Table* table = nullptr;
  ASSERT_TRUE(db->GetTable("bank", &table).ok());
  int64_t v = 0;
  ASSERT_TRUE(GetU64(*txn, table, 7, &v).ok());
  ASSERT_TRUE(PutU64(*txn, table, 7, v + 1).ok());
  ASSERT_TRUE(txn->Commit().ok());
  s = bank.CheckTotal(db.get());
  EXPECT_EQ(s.code(), StatusCode::kInternal) << s.ToString();
}

}  // namespace
}  // namespace rolis::workloads
