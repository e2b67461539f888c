// LeaderStreams with a journal under the acceptor (docs/replication.md,
// "Durability"): the leader's own vote counts once it is on its disk, and a
// leader whose disk failed steps down naming the failure.
#include <cstdio>

#include "leader_streams.h"

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
    std::fprintf(stderr, "rolis-repl %u: %s\n", opts_.id, why.c_str());
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

}  // namespace rolis::replication
