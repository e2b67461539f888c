#include "replay_apply.h"

#include <atomic>

#include "rolis/log.h"

namespace rolis::replication {

void ReplayApplier::Flush() {
  if (queued_.empty()) return;
  Status s = db_->ApplyReplicatedBatch(worker_, queued_);
  if (!s.ok()) {
    failed_flushes_++;
    if (s.code() == StatusCode::kFailedPrecondition) diverged_ = true;
    static std::atomic<int> logged{0};
    if (logged.fetch_add(1) < 10) {
      log::Printf(log::Level::kError, "replication",
                  "rolis-repl %u: replay of a group of %zu writes (from %lu.%lu) had a failed write: %s",
                  log_id_, queued_.size(), static_cast<unsigned long>(queued_.front().order_epoch),
                  static_cast<unsigned long>(queued_.front().order_ts), s.ToString().c_str());
    }
  }
  queued_.clear();
}

}  // namespace rolis::replication
