// The Calvin baseline of the Rolis paper (docs/benchmarks.md, "Suite"): a
// sequencer collects the transactions submitted during an epoch (~10 ms),
// replicates the batch of their inputs (type and parameters, in order)
// through `replicate`, and then a deterministic lock manager queues each
// transaction's declared read and write locks in batch order; a transaction
// runs once it holds them all, and releases them when it commits. Every
// member holding the batch reaches the same state by the same schedule.
//
// Worker threads are clients and executors at once: RunOne keeps some of the
// thread's transactions submitted (Calvin's throughput needs many in flight
// per epoch) and runs one of its own granted transactions; the outcome's
// latency starts at its submission. How many: twice what the thread
// completed in its last epoch, at least 16 and at most
// `outstanding_per_thread` (a fixed number is either too few for YCSB++ or,
// for the bank's audits of every account, more than an epoch can run).
//
// Transactions must declare their sets (Workload::declares_sets). One whose
// set depends on what it reads (TPC-C's) computed it with a reconnaissance
// read when it was generated (Calvin's OLLP); the batch carries that set.
// When its execution finds the set changed (TxnOutcome::set_changed) it has
// written nothing: its locks go, it reconnoitres again and is resubmitted
// to a later batch, and its outcome counts each restart as a conflict abort.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "workloads/workload.h"

namespace rolis::baselines {

struct CalvinOptions {
  uint32_t threads = 1;
  std::chrono::microseconds epoch{10000};
  uint32_t outstanding_per_thread = 2048;
  std::function<uint64_t()> now;  // the driver's clock, for TxnOutcome::submitted_at (may be empty)
};

class Calvin : public workloads::TxnRunner {
 public:
  // Blocks until a majority holds the batch (its transactions' inputs, in
  // order); empty: unreplicated. A failure stops the sequencer and the run.
  using Replicate = std::function<Status(uint64_t epoch, std::string_view batch)>;

  Calvin(CalvinOptions options, Replicate replicate);
  ~Calvin() override;

  void Start();
  void Stop();  // after every worker thread's ThreadEnd

  workloads::TxnOutcome RunOne(workloads::WorkerContext& ctx, workloads::Workload* workload) override;
  Status ThreadEnd(workloads::WorkerContext& ctx, workloads::Workload* workload) override;

  uint64_t epochs() const { return epochs_.load(); }
  uint64_t sequenced() const { return sequenced_.load(); }
  uint64_t restarts() const { return restarts_.load(); }

 private:
  struct Txn {
    workloads::TxnRequest req;
    uint32_t owner = 0;
    uint64_t submitted_at = 0;
    uint32_t missing = 0;  // locks not yet granted (lock manager's mutex)
    uint32_t restarts = 0;  // resubmissions after a changed set
  };
  struct Entry {
    Txn* txn;
    bool write;
  };
  // One key's requests in batch order; the first `granted` hold the lock.
  // Mostly one or two long: a vector (a deque allocated ~600 bytes per key).
  struct KeyQueue {
    std::vector<Entry> q;
    uint32_t granted = 0;
    bool writer_granted = false;
  };
  struct PerThread {
    std::vector<std::unique_ptr<Txn>> txns;
    std::vector<Txn*> free;
    uint32_t limit = 16;  // transactions to keep submitted
    uint32_t done_in_window = 0;
    std::chrono::steady_clock::time_point window_start{};
    std::mutex mu;
    std::vector<Txn*> granted;  // under mu
    std::atomic<uint32_t> granted_count{0};
  };

  void SequencerLoop();
  static void Encode(const std::vector<Txn*>& batch, std::string* out);
  void Schedule(const std::vector<Txn*>& batch);  // queue the locks in batch order
  void Release(Txn* txn);
  // After set_changed: reconnoitre and queue it for the next batch.
  void Resubmit(workloads::WorkerContext& ctx, workloads::Workload* workload, Txn* t);
  void GrantMore(KeyQueue& kq);
  void Grant(Txn* txn);
  Txn* PopGranted(PerThread& me);
  Status WaitError() const;

  CalvinOptions o_;
  Replicate replicate_;
  std::vector<std::unique_ptr<PerThread>> per_;

  std::mutex pending_mu_;
  std::vector<Txn*> pending_;

  std::mutex locks_mu_;
  std::unordered_map<uint64_t, KeyQueue> locks_;

  std::thread sequencer_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> failed_{false};
  mutable std::mutex error_mu_;
  Status error_;
  std::atomic<uint64_t> epochs_{0};
  std::atomic<uint64_t> sequenced_{0};
  std::atomic<uint64_t> restarts_{0};
};

}  // namespace rolis::baselines
