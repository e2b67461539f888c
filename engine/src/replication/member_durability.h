// What a Replica keeps on its data directory (docs/replication.md,
// "Durability"): the acceptors' journal, and checkpoints of the store that
// the log is truncated behind. rolis_durability implements it
// (engine/src/durability/durable_member.h); without one a member keeps
// everything in memory, as the paper's members do.
#pragma once

#include <cstdint>
#include <string>

#include "acceptor_journal.h"
#include "rolis/status.h"
#include "types.h"

namespace rolis::replication {

class MemberDurability {
 public:
  virtual ~MemberDurability() = default;

  // Where the acceptors make their votes durable (set on them before any
  // Accept or Promise).
  virtual AcceptorJournal* journal() = 0;

  // Makes `snap` (its header and writes: a follower's snapshot, or the one a
  // state transfer installed) the newest complete checkpoint, then removes
  // the log segments whose slots are all below its next slots.
  virtual Status WriteCheckpoint(const SnapshotReply& snap) = 0;

  // Bytes appended to the log since the newest checkpoint (or the start):
  // a follower takes the next checkpoint once this passes a bound.
  virtual uint64_t LogBytesSinceCheckpoint() const = 0;
  virtual uint64_t checkpoint_every_bytes() const = 0;

  // One line for the status: the start-up recovery and the newest checkpoint.
  virtual std::string Describe() const = 0;
};

}  // namespace rolis::replication
