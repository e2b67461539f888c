// Helpers for parallel loading.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "rolis/db.h"
#include "rolis/status.h"

namespace rolis::workloads {

// Runs fn(thread_index, worker) on `threads` threads, each with its own
// registered Worker, and returns the first error any of them returned.
Status RunOnThreads(Database* db, uint32_t threads, const std::function<Status(uint32_t, Worker*)>& fn);

// The table `name`, created when it does not exist yet.
Status CreateOrGetTable(Database* db, std::string_view name, Table** table);

// A workload's table name with a prefix ("" for none): the names a server's
// procedures use (server/procedures.h, kBenchmarkTablePrefix).
inline std::string TableName(std::string_view prefix, std::string_view name) {
  std::string out(prefix);
  out += name;
  return out;
}

// Commits a batch built by fill(txn); retries kAborted a bounded number of
// times (loading has no conflicts unless the caller shares keys).
Status CommitBatch(Worker* worker, const std::function<Status(Transaction&)>& fill);

}  // namespace rolis::workloads
