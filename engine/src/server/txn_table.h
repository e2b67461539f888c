// Open interactive transactions by id. Sharded hash map; an entry's engine
// transaction and its bookkeeping are guarded by the mutex of the Worker it is
// bound to (lock order: worker, then table shard).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "rolis/db.h"
#include "server/worker_pool.h"

namespace rolis::server {

using Clock = std::chrono::steady_clock;

struct OpenTxn {
  uint64_t id = 0;
  WorkerPool::Slot* slot = nullptr;
  bool read_only = false;
  Clock::time_point begin_time;
  Clock::duration idle_timeout{};

  // Guarded by slot->mu.
  std::unique_ptr<Transaction> txn;
  bool finished = false;
  uint32_t ops = 0;
  bool adds_data = false;  // a Put succeeded (its Commit is refused under memory pressure)

  // Last activity + idle timeout, in steady-clock nanoseconds. Written under
  // slot->mu, read by the reaper without it (then rechecked under it).
  std::atomic<int64_t> deadline_ns{0};

  void Touch(Clock::time_point now) {
    deadline_ns.store((now + idle_timeout).time_since_epoch().count(), std::memory_order_relaxed);
  }
  bool Expired(Clock::time_point now) const {
    return now.time_since_epoch().count() > deadline_ns.load(std::memory_order_relaxed);
  }
};

class TxnTable {
 public:
  explicit TxnTable(uint64_t id_seed);

  // A fresh id: never 0, never repeated in this process, hard to guess
  // (a bijective mix of a counter), unlikely to match ids of a previous run.
  uint64_t NewId();

  // Reserves room for one more open transaction; false at `limit`.
  bool TryReserve(uint32_t limit);
  void Unreserve();

  void Insert(std::shared_ptr<OpenTxn> txn);
  std::shared_ptr<OpenTxn> Find(uint64_t id) const;
  // Removes the entry and releases its reservation; false if absent.
  bool Erase(uint64_t id);

  int64_t size() const { return open_.load(std::memory_order_relaxed); }
  // Entries whose deadline passed at `now` (to be rechecked under the worker lock).
  std::vector<std::shared_ptr<OpenTxn>> CollectExpired(Clock::time_point now) const;
  std::vector<std::shared_ptr<OpenTxn>> All() const;

 private:
  static constexpr size_t kShards = 64;
  struct alignas(64) Shard {
    mutable std::mutex mu;
    std::unordered_map<uint64_t, std::shared_ptr<OpenTxn>> map;
  };
  Shard& ShardOf(uint64_t id) const { return shards_[(id >> 7) % kShards]; }

  uint64_t key_;
  std::atomic<uint64_t> counter_{0};
  std::atomic<int64_t> open_{0};
  std::unique_ptr<Shard[]> shards_;
};

}  // namespace rolis::server
