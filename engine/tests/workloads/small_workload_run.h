// A fresh engine, a workload loaded into it, and a fixed-work run of it on
// two threads (driver.h): what the small workloads' tests share.
#pragma once

#include <gtest/gtest.h>

#include <memory>

#include "driver.h"
#include "rolis/db.h"
#include "workloads/workload.h"

namespace rolis::workloads {

inline std::unique_ptr<Database> OpenAndLoad(Workload& w, uint32_t threads = 2) {
  Options options;
  options.epoch_period_ms = 10;
  std::unique_ptr<Database> db = Database::Open(options);
  EXPECT_TRUE(db);
  Status s = w.Load(db.get(), threads);
  EXPECT_TRUE(s.ok()) << s.ToString();
  bench::WaitForSnapshot(db.get(), 2000);
  return db;
}

inline bench::RunResult RunFixed(Database* db, Workload& w, uint64_t txns_per_thread, uint32_t threads = 2,
                                 TxnRunner* runner = nullptr) {
  bench::DriverOptions run;
  run.threads = threads;
  run.txns_per_thread = txns_per_thread;
  run.runner = runner;
  bench::RunResult result;
  Status s = bench::RunWorkload(db, &w, run, &result);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return result;
}

}  // namespace rolis::workloads
