// Follower replay's last step: turns decoded transactions into engine
// writes. The replay loop (replayer.cc) picks transactions in replication
// order and queues them here; a flush hands the queued writes to
// Database::ApplyReplicatedBatch in one call. rolis-replay-bench drives the
// same code to measure it (docs/benchmarks.md, "Follower replay cost").
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "rolis/db.h"

namespace rolis::replication {

class ReplayApplier {
 public:
  // A flush applies at most this many writes (a few lookup groups: big
  // enough to overlap misses, small enough to stay in cache).
  static constexpr size_t kGroupWrites = 64;

  // `log_id` names the member in the log lines of failed writes.
  ReplayApplier(Database* db, Worker* worker, uint32_t log_id) : db_(db), worker_(worker), log_id_(log_id) {
    queued_.reserve(kGroupWrites + 256);
  }

  // Queues the writes of one transaction, ordered (epoch, ts). Their views
  // must stay valid until the next Flush. Flushes first when the group is
  // full, so a transaction is never split across two flushes unless it alone
  // is larger than a group.
  void Add(std::span<const WriteRecord> writes, uint64_t epoch, uint64_t ts) {
    if (!queued_.empty() && queued_.size() + writes.size() > kGroupWrites) Flush();
    for (const WriteRecord& w : writes) queued_.push_back({w, epoch, ts});
  }

  // Applies what is queued. A failed write is logged (the first few) and
  // skipped; it cannot happen with payloads the leader encoded into a store
  // that replayed the log before them (a patch that does not apply marks
  // the store diverged: TakeDiverged).
  void Flush();

  size_t queued() const { return queued_.size(); }
  uint64_t failed_flushes() const { return failed_flushes_; }  // flushes with a failed write
  // A write did not apply because the store does not hold what the log
  // assumes (a patch against another value): true once, then reset.
  bool TakeDiverged() { return std::exchange(diverged_, false); }

 private:
  Database* db_;
  Worker* worker_;
  uint32_t log_id_;
  std::vector<ReplicatedWrite> queued_;  // reused: no allocation per write
  uint64_t failed_flushes_ = 0;
  bool diverged_ = false;
};

}  // namespace rolis::replication
