// TPC-C's consistency conditions 1-4 (clause 3.3.2) as a check after a run,
// the one rolis-bench makes on every mode TPC-C runs on (docs/benchmarks.md,
// "Suite"):
//   1. W_YTD = sum(D_YTD) of the warehouse's districts;
//   2. D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID) of the district;
//   3. max(NO_O_ID) - min(NO_O_ID) + 1 = the district's NEW-ORDER rows;
//   4. sum(O_OL_CNT) = the district's ORDER-LINE rows.
#pragma once

#include "rolis/db.h"
#include "rolis/status.h"
#include "workloads/tpcc.h"

namespace rolis::workloads {

// Reads one snapshot (a read-only transaction: the caller first waits for the
// snapshot to cover the run, bench::WaitForSnapshot). kInternal naming the
// first condition that fails, its warehouse and district.
Status CheckTpccConsistency(Database* db, const Tpcc& tpcc);

}  // namespace rolis::workloads
