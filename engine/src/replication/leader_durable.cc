// LeaderStreams with a journal under the acceptor (docs/replication.md,
// "Durability"): the leader's own vote counts once it is on its disk, and a
// leader whose disk failed steps down naming the failure.
#include <algorithm>

#include "leader_streams.h"
#include "rolis/log.h"

namespace rolis::replication {

void LeaderStreams::OnDurable() {
  // Only a leader (or a candidate opening its epoch) counts its own vote;
  // a follower's replies are settled by its connection threads.
  const Role r = member_->role.load(std::memory_order_acquire);
  if (r == Role::kLeader || r == Role::kCandidate) WakeLoop();
}

void LeaderStreams::RefreshOwnDurablePrefixLocked() {
  if (!durable_ || mode_ == Mode::kIdle) return;
  for (uint32_t t = 0; t < opts_.streams; t++) {
    LeaderStream& s = *streams_[t];
    s.self_prefix = std::max(s.self_prefix, acceptor_->DurableNeedFrom(t, epoch_, s.log_start));
  }
}

void LeaderStreams::OwnVoteRefusedLocked() {
  if (Status h = acceptor_->JournalHealth(); !h.ok()) {
    const std::string why = "this member's disk failed, it stops acknowledging: " + h.message();
    log::Printf(log::Level::kError, "replication", "rolis-repl %u: %s", opts_.id, why.c_str());
    StepDownLocked(acceptor_->promised(), why.c_str());
    return;
  }
  if (acceptor_->promised() > epoch_) {
    StepDownLocked(acceptor_->promised(), "this member promised a newer epoch");
    return;
  }
  // A write refused for a full disk refuses that vote only; the leader
  // cannot skip the slot, so it steps down rather than stall.
  StepDownLocked(acceptor_->promised(), "this member could not write its own vote to its log (disk full?)");
}

std::string LeaderStreams::CheckpointPosition(LogCheckpointPosition* pos) const {
  std::lock_guard<std::mutex> g(mu_);
  if (mode_ != Mode::kOpen || !record_) return "not an open leader";
  pos->epoch = epoch_;
  pos->decided = record_;
  pos->watermark = watermark_;
  pos->end.clear();
  for (uint32_t t = 0; t < opts_.streams; t++) {
    const LeaderStream& s = *streams_[t];
    uint64_t end = s.c_end;
    if (s.self_prefix < end) {
      // A majority holds more than this disk does yet: the checkpoint
      // stops at the own durable prefix, and G at the key it reaches.
      // Past the barrier every slot is of this epoch, in key order.
      end = s.self_prefix;
      if (end <= s.barrier_index || end <= s.log_start || end - s.log_start > s.log.size()) {
        return "stream " + std::to_string(t) + " is not durable on this disk past its barrier yet";
      }
      pos->watermark = std::min(pos->watermark, s.log[end - 1 - s.log_start].reach);
    }
    pos->end.push_back(end);
  }
  return "";
}

bool LeaderStreams::LogFollows(const SnapshotReply& h) const {
  std::lock_guard<std::mutex> g(mu_);
  if (mode_ != Mode::kOpen || h.at.epoch != epoch_ || h.next_slot.size() != opts_.streams) return false;
  for (uint32_t t = 0; t < opts_.streams; t++) {
    if (h.next_slot[t] < streams_[t]->log_start) return false;
  }
  return true;
}

}  // namespace rolis::replication
