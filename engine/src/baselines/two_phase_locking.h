// The 2PL+Paxos baseline of the Rolis paper (docs/benchmarks.md, "Suite"):
// a transaction takes shared locks on its declared reads and exclusive
// locks on its declared writes (wait-die, wait_die_lock_table.h) before it
// runs, runs on the engine, and releases its locks only once its writes are
// replicated to a majority (hooks.wait_replicated). The engine's OCC then
// finds no conflict among locked transactions; what 2PL costs is the time
// the locks are held across replication.
//
// A transaction whose set came from a reconnaissance (Workload::Reconnoiter)
// and whose execution finds it changed (TxnOutcome::set_changed) releases
// its locks, reconnoitres again and restarts with the same timestamp; each
// restart counts as a conflict abort.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "baselines/wait_die_lock_table.h"
#include "workloads/workload.h"

namespace rolis::baselines {

struct TwoPhaseLockingHooks {
  // Before thread t may block (on a lock or a backoff) and after: the
  // replicated mode lets go of the worker's mutex meanwhile. May be empty.
  std::function<void(uint32_t t)> pause;
  std::function<void(uint32_t t)> resume;
  // Blocks until a majority holds the transaction committed at commit_ts.
  // Empty: unreplicated (locks go at commit).
  std::function<Status(uint32_t t, uint64_t commit_ts)> wait_replicated;
};

class TwoPhaseLocking : public workloads::TxnRunner {
 public:
  TwoPhaseLocking(uint32_t threads, TwoPhaseLockingHooks hooks);

  workloads::TxnOutcome RunOne(workloads::WorkerContext& ctx, workloads::Workload* workload) override;

  uint64_t deaths() const { return deaths_.load(std::memory_order_relaxed); }
  uint64_t restarts() const { return restarts_.load(std::memory_order_relaxed); }

 private:
  struct PerThread {
    workloads::TxnRequest req;
    std::vector<std::pair<uint32_t, bool>> slots;  // (slot, write), sorted, one per slot
  };

  void LockSlots(PerThread& me);  // me.slots from me.req.keys

  TwoPhaseLockingHooks hooks_;
  WaitDieLockTable locks_;
  std::vector<std::unique_ptr<PerThread>> per_;
  std::atomic<uint64_t> next_ts_{1};
  std::atomic<uint64_t> deaths_{0};
  std::atomic<uint64_t> restarts_{0};
};

}  // namespace rolis::baselines
