#include "workloads/u64_table.h"

#include <algorithm>

#include "workloads/load_util.h"

namespace rolis::workloads {

Status CreateU64Table(Database* db, const char* name, uint64_t n, int64_t initial, uint32_t threads, Table** table) {
  if (n == 0) return Status::InvalidArgument(std::string(name) + ": want at least one record");
  Status s = db->CreateTable(name, table);
  if (!s.ok()) return s;
  Table* t = *table;
  if (threads == 0) threads = 1;
  return RunOnThreads(db, threads, [&](uint32_t i, Worker* worker) -> Status {
    const uint64_t begin = n * i / threads, end = n * (i + 1) / threads;
    for (uint64_t lo = begin; lo < end; lo += 1000) {
      const uint64_t hi = std::min(end, lo + 1000);
      Status st = CommitBatch(worker, [&](Transaction& txn) -> Status {
        for (uint64_t r = lo; r < hi; ++r) {
          Status ps = PutU64(txn, t, r, initial);
          if (!ps.ok()) return ps;
        }
        return Status::OK();
      });
      if (!st.ok()) return st;
    }
    return Status::OK();
  });
}

Status LoadU64Range(Worker* worker, Table* table, uint64_t lo, uint64_t hi, int64_t initial) {
  return CommitBatch(worker, [&](Transaction& txn) -> Status {
    for (uint64_t r = lo; r < hi; ++r) {
      Status ps = PutU64(txn, table, r, initial);
      if (!ps.ok()) return ps;
    }
    return Status::OK();
  });
}

Status SumU64Table(Database* db, Table* table, uint64_t n, int64_t* sum) {
  std::unique_ptr<Worker> worker = db->RegisterWorker();
  if (!worker) return Status::ResourceExhausted("RegisterWorker failed");
  Status s;
  for (int attempt = 0; attempt < 100; ++attempt) {
    std::unique_ptr<Transaction> txn = worker->Begin();
    *sum = 0;
    s = Status::OK();
    for (uint64_t r = 0; r < n && s.ok(); ++r) {
      int64_t v = 0;
      s = GetU64(*txn, table, r, &v);
      *sum += v;
    }
    if (s.ok()) s = txn->Commit();
    else txn->Abort();
    if (!s.IsAborted()) return s;
  }
  return s;
}

}  // namespace rolis::workloads
