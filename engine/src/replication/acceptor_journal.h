// Where an acceptor makes its state durable (docs/replication.md,
// "Durability"). Acceptor and ControlAcceptor call it when one is set; with
// none they keep everything in memory only, as before. rolis_durability
// implements it on a data directory (engine/src/durability/disk_journal.h).
//
// What the acceptors promise with one set:
//   - a promise, a control-stream vote and a learned decided record are
//     durable before the call that made them returns (they are rare:
//     failovers and membership changes);
//   - an accepted slot is written at once and made durable by a group
//     commit later: the acceptor keeps its position and counts the slot in
//     need_from (the prefix a leader counts as held) only once the journal
//     says it is durable. The caller is not blocked by the sync; the journal's
//     listener says when a stream's durable position moved, and the caller
//     then asks the acceptor for the new prefix (Acceptor::DurableNeedFrom);
//   - once a write or a sync failed (Health() not OK) nothing more is counted
//     as durable: accepts and promises fail with the error, so the member
//     stops acknowledging instead of carrying on.
#pragma once

#include <cstdint>
#include <functional>

#include "rolis/status.h"
#include "types.h"

namespace rolis::replication {

// One member's vote in an instance of the control stream.
struct ControlVote {
  uint64_t instance = 0;
  uint64_t promised = 0;
  uint64_t accepted_ballot = 0;
  DecidedPtr accepted;
};

class AcceptorJournal {
 public:
  virtual ~AcceptorJournal() = default;

  // The acceptor promised `epoch` (no ballot below it will be accepted).
  // Durable when it returns OK.
  virtual Status RecordPromise(uint64_t epoch) = 0;

  // Stream `stream` accepted `slot` (its ballot is the epoch it was
  // accepted under). Written, not yet durable: *position orders it in the
  // stream's log, and it is durable once DurableThrough(stream) >= *position.
  virtual Status AppendSlot(uint32_t stream, const Slot& slot, uint64_t* position) = 0;
  // Every slot of `stream` appended at a position <= the result is durable.
  virtual uint64_t DurableThrough(uint32_t stream) const = 0;
  // Blocks until `position` of `stream` is durable (OK), the journal failed
  // (its error) or `deadline` passed (ABORTED).
  virtual Status WaitDurable(uint32_t stream, uint64_t position, SteadyClock::time_point deadline) = 0;
  // Called on the journal's sync thread after DurableThrough(stream) moved,
  // and for every stream once the journal failed. Must not block long.
  virtual void SetDurableListener(std::function<void(uint32_t stream)> listener) = 0;

  // The control acceptor's vote in an instance changed to `vote`. Durable
  // when it returns OK.
  virtual Status RecordControlVote(const ControlVote& vote) = 0;
  // A decided record (with its configuration) was learned. Durable when it
  // returns OK.
  virtual Status RecordDecided(const DecidedPtr& decided) = 0;

  // OK while every write and sync succeeded; afterwards the first error.
  virtual Status Health() const = 0;
};

}  // namespace rolis::replication
