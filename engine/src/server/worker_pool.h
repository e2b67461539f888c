// The engine Workers of the server. A rolis::Worker may be used by any thread
// but by one thread at a time: each is guarded by its own mutex. One-shot
// transactions take any free Worker (try-lock round robin, then block on one);
// an interactive transaction is bound to one Worker for its life and each of
// its RPCs locks that Worker.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "rolis/db.h"

namespace rolis::server {

class WorkerPool {
 public:
  struct alignas(64) Slot {
    std::mutex mu;
    std::unique_ptr<Worker> worker;
    uint32_t index = 0;
    // Open interactive transactions bound to this worker. Written under mu.
    std::atomic<uint32_t> interactive{0};
    // Engines that allow one open transaction per Worker: an interactive
    // transaction owns the whole worker and one-shots skip it.
    std::atomic<bool> reserved{false};
  };

  explicit WorkerPool(std::vector<std::unique_ptr<Worker>> workers);

  size_t size() const { return n_; }
  Slot& slot(size_t i) { return slots_[i]; }

  // Locks a worker that is not reserved and returns it (unlock with
  // slot->mu.unlock()). Tries each worker once without blocking, starting at
  // a per-thread position, then blocks on one. nullptr when every worker is
  // reserved.
  Slot* LockAny();

  // Round-robin choice of a worker for a new interactive transaction (not
  // locked). In single-transaction mode, an unreserved worker is chosen and
  // marked reserved, keeping at least one worker free for one-shots when
  // there are several; nullptr when none can be had.
  Slot* PickForInteractive(bool single_txn_mode);
  void Release(Slot* slot, bool single_txn_mode);

 private:
  size_t n_;
  std::unique_ptr<Slot[]> slots_;
  std::atomic<uint32_t> next_interactive_{0};
  std::atomic<uint32_t> next_thread_{0};
  std::mutex reserve_mu_;  // single-transaction mode only
};

}  // namespace rolis::server
