// YCSB++: after a concurrent run every loaded key is still there with an
// 8-byte value, and no read-modify-write was lost.
#include "workloads/ycsb.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "driver.h"
#include "rolis/db.h"

namespace rolis::workloads {
namespace {

TEST(Ycsbpp, KeysAreBigEndianRecordNumbers) {
  char a[8], b[8];
  EXPECT_EQ(YcsbKey(0x0102030405060708ULL, a), std::string_view("\x01\x02\x03\x04\x05\x06\x07\x08", 8));
  EXPECT_LT(YcsbKey(255, a), YcsbKey(256, b));
}

TEST(Ycsbpp, EveryKeySurvivesATwoThreadRunAndNoIncrementIsLost) {
  constexpr uint64_t kKeys = 20000;
  Options options;
  options.epoch_period_ms = 10;
  std::unique_ptr<Database> db = Database::Open(options);
  ASSERT_TRUE(db);
  YcsbConfig config;
  config.keys = kKeys;
  config.load_batch = 700;  // not a divisor of the per-thread share
  Ycsbpp ycsb(config);
  Status s = ycsb.Load(db.get(), 2);
  ASSERT_TRUE(s.ok()) << s.ToString();
  bench::WaitForSnapshot(db.get(), 2000);

  bench::DriverOptions run;
  run.threads = 2;
  run.txns_per_thread = 20000;
  bench::RunResult result;
  s = bench::RunWorkload(db.get(), &ycsb, run, &result);
  ASSERT_TRUE(s.ok()) << s.ToString();
  ASSERT_EQ(result.types.size(), 2u);
  EXPECT_EQ(result.commits, 2u * 20000);
  EXPECT_EQ(result.rollbacks, 0u);
  EXPECT_GT(result.types[kYcsbReadOnly].commits, 15000u);
  EXPECT_GT(result.types[kYcsbReadModifyWrite].commits, 15000u);

  // Scan the table: keys 0..kKeys-1 in order, each with an 8-byte value.
  // Loaded value = record number; each committed read-modify-write added 1
  // to 4 distinct records, so the sum grew by exactly 4 per commit.
  std::unique_ptr<Worker> worker = db->RegisterWorker();
  std::unique_ptr<Transaction> txn = worker->Begin();
  uint64_t expected = 0, bad_values = 0, sum = 0;
  bool in_order = true;
  s = txn->Scan(ycsb.table(), std::string_view(), std::string_view(), 0, [&](std::string_view k, std::string_view v) {
    char key[8];
    in_order = in_order && k == YcsbKey(expected, key);
    if (v.size() != 8) {
      ++bad_values;
    } else {
      uint64_t value;
      std::memcpy(&value, v.data(), 8);
      sum += value;
    }
    ++expected;
    return true;
  });
  ASSERT_TRUE(s.ok()) << s.ToString();
  txn->Abort();
  EXPECT_EQ(expected, kKeys);
  EXPECT_TRUE(in_order);
  EXPECT_EQ(bad_values, 0u);
  EXPECT_EQ(sum, kKeys * (kKeys - 1) / 2 + 4 * result.types[kYcsbReadModifyWrite].commits);
}

}  // namespace
}  // namespace rolis::workloads
