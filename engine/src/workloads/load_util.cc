#include "workloads/load_util.h"

#include <mutex>

#include "rolis/thread_name.h"

namespace rolis::workloads {

Status RunOnThreads(Database* db, uint32_t threads, const std::function<Status(uint32_t, Worker*)>& fn) {
  if (threads == 0) threads = 1;
  std::mutex mu;
  Status first;
  std::vector<std::thread> pool;
  pool.reserve(threads);
  for (uint32_t t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      NameThisThread("rolis-load-" + std::to_string(t));
      std::unique_ptr<Worker> worker = db->RegisterWorker();
      Status s = worker ? fn(t, worker.get()) : Status::ResourceExhausted("RegisterWorker failed");
      if (!s.ok()) {
        std::lock_guard<std::mutex> lock(mu);
        if (first.ok()) first = std::move(s);
      }
    });
  }
  for (auto& th : pool) th.join();
  return first;
}

Status CreateOrGetTable(Database* db, std::string_view name, Table** table) {
  Status s = db->CreateTable(name, table);
  if (s.code() == StatusCode::kAlreadyExists) s = db->GetTable(name, table);
  return s;
}

Status CommitBatch(Worker* worker, const std::function<Status(Transaction&)>& fill) {
  constexpr int kAttempts = 100;
  Status s;
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    std::unique_ptr<Transaction> txn = worker->Begin();
    s = fill(*txn);
    if (s.ok()) s = txn->Commit();
    else txn->Abort();
    if (!s.IsAborted()) return s;
  }
  return s;
}

}  // namespace rolis::workloads
