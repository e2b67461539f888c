// The acceptor side of every stream of one member (Paxos phase 1 across all
// streams at once, phase 2 per slot), and the acceptor of the control
// stream's instances. Thread-safe: Accept runs on the transport's threads,
// one stream per caller; Promise excludes every Accept while it promises and
// reads, so no slot is accepted under a lower ballot after a promise.
//
// Rules (docs/replication.md):
//   - Promise(e) from proposer p: granted when e > promised, or when
//     e == promised and this acceptor promised e to p itself (a retry of the
//     same candidate). A ballot is (epoch, proposer): an equal epoch from
//     another proposer, or one whose proposer this acceptor no longer knows
//     (the promise came from an accept, a restart or a catch-up), is
//     refused, so at most one proposer gathers a majority for an epoch.
//     Returns every slot held.
//   - Accept(e, slot): granted when e >= promised; promised becomes e. A slot
//     takes the value of the latest accepted ballot (the proposer of a ballot
//     never changes its value: re-proposals keep what they found).
//   - Slots below a stream's first_slot are compacted: they were replayed by
//     this member and are reflected in its store (see Compact).
//
// With a journal (acceptor_journal.h; none: memory only, as before), what an
// answer promises is durable first: a promise before Promise returns, and
// an accepted slot counts in need_from (what a leader counts as held) only
// once the journal says it is durable. Accept reports the prefix held in
// memory separately (held_from), and DurableNeedFrom gives the durable one
// again after the journal's listener said a stream's durable position moved;
// so neither a follower's transport thread nor the leader's loop waits for an
// fdatasync. Once the journal failed, accepts and promises fail with its
// error (docs/replication.md, "Durability").
#pragma once

#include <atomic>
#include <deque>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "acceptor_journal.h"
#include "membership.h"
#include "types.h"

namespace rolis::replication {

class Acceptor {
 public:
  explicit Acceptor(uint32_t streams);

  // Makes every later change durable through `journal` (which outlives this
  // acceptor). Set it before the first Accept or Promise, after restoring
  // what the journal holds (Reset with the recovered slots and promise).
  void SetJournal(AcceptorJournal* journal) { journal_ = journal; }
  // OK without a journal.
  Status JournalHealth() const { return journal_ ? journal_->Health() : Status::OK(); }

  uint32_t streams() const { return static_cast<uint32_t>(streams_.size()); }
  uint64_t promised() const { return promised_.load(std::memory_order_acquire); }

  // Phase 2. `m` is validated (stream in range, value well formed).
  AcceptReply Accept(const AcceptMsg& m);
  // Phase 1 (or a peek that promises nothing). A peek with from_slot gets
  // only the slots at or above it per stream (types.h, PromiseMsg).
  PromiseReply Promise(const PromiseMsg& m);
  // Raises the promise without reading (a member catching up adopts the
  // highest promise of the members it read from).
  void RaisePromise(uint64_t epoch);

  // Looks at slot `index` of stream t; false if absent.
  bool Get(uint32_t t, uint64_t index, Slot* out) const;
  uint64_t first_slot(uint32_t t) const;
  uint64_t next_slot(uint32_t t) const;  // one past the highest slot held
  size_t slot_count(uint32_t t) const;
  size_t bytes() const { return bytes_.load(std::memory_order_relaxed); }

  // Drops the slots of stream t below `below` (they were replayed); `decided`
  // judges which of them raise the base reach (as the failover walk would).
  void Compact(uint32_t t, uint64_t below, const EpochRecord& decided);

  // State transfer: every stream starts at the given first slot and base,
  // with `slots` adopted as accepted. Its own slots from the first slot on
  // stay where their ballot is higher: a member that votes while it
  // transfers must not forget a vote cast after it read the others.
  void Reset(const std::vector<StreamSlots>& streams, uint64_t promised);

  // Proposer-side convenience: the leader's own vote for its proposal.
  // Same as Accept, without a message; *need_from is the durable prefix.
  // False if a newer epoch was promised or the journal failed
  // (JournalHealth() says which).
  bool AcceptLocal(uint32_t t, const Slot& slot, uint64_t epoch, uint64_t log_start, uint64_t* need_from);

  // need_from of stream t for a leader of `epoch` counting only durable
  // slots: the first slot at or after max(first slot, log_start) not held
  // durably with ballot == epoch. Without a journal, the need_from that
  // Accept reports.
  uint64_t DurableNeedFrom(uint32_t t, uint64_t epoch, uint64_t log_start);
  // With a journal: blocks until every slot of stream t written so far is
  // durable (OK), the journal failed (its error) or `deadline` passed
  // (ABORTED). OK at once without one.
  Status AwaitDurable(uint32_t t, SteadyClock::time_point deadline);

 private:
  struct StreamLog {
    mutable std::mutex mu;
    uint64_t first_slot = 0;
    LogKey base_key{};
    uint64_t base_barrier = 0;
    std::map<uint64_t, Slot> slots;
    // need_from cache: slots [.., contig) are held with ballot contig_epoch.
    uint64_t contig_epoch = 0;
    uint64_t contig = 0;
    // With a journal: slots written but not yet durable (index -> journal
    // position), and the same in append order (position, index).
    std::map<uint64_t, uint64_t> pending;
    std::deque<std::pair<uint64_t, uint64_t>> pending_order;
    // The durable prefix [.., dcontig) of ballot dcontig_epoch.
    uint64_t dcontig_epoch = 0;
    uint64_t dcontig = 0;
  };
  // Under s.mu.
  bool AcceptLocked(StreamLog& s, uint32_t t, const Slot& slot, uint64_t epoch, uint64_t log_start,
                    uint64_t* need_from, std::string* error);
  uint64_t DurableNeedFromLocked(StreamLog& s, uint32_t t, uint64_t epoch, uint64_t log_start);
  bool RaisePromiseLocked(uint64_t epoch);
  // Makes a promise of `epoch` durable before it is raised (nothing to do
  // without a journal, or when it is not above the promise held). Under
  // every stream lock.
  Status RecordPromiseLocked(uint64_t epoch);

  std::vector<std::unique_ptr<StreamLog>> streams_;
  std::mutex promise_mu_;  // serializes Promise/Reset (which take every stream lock)
  std::atomic<uint64_t> promised_{0};
  // Under promise_mu_: the ballot of the last promise granted by Promise,
  // (epoch, proposer). Only that proposer gets an equal epoch again; memory
  // only (a restarted acceptor refuses every equal epoch).
  uint64_t granted_epoch_ = 0;
  uint32_t granted_to_ = 0;
  std::atomic<size_t> bytes_{0};
  AcceptorJournal* journal_ = nullptr;
};

// One member's acceptor of the control stream: instance InstanceAfter(r)
// decides the record that follows record r (a failover's new epoch, or a
// membership change of the same epoch).
class ControlAcceptor {
 public:
  // As Acceptor::SetJournal: every vote and learned record is durable
  // before the call returns; a failed write refuses the vote and changes
  // nothing.
  void SetJournal(AcceptorJournal* journal) { journal_ = journal; }

  // `promised` (if given) reads the member's promised epoch: a membership
  // record of an older epoch is refused once a newer epoch was promised.
  ControlReply Handle(const ControlMsg& m, uint32_t self, const std::function<uint64_t()>& promised = nullptr);

  DecidedPtr latest() const;
  // Learns a decided record (from an announcement, a stream, a reply).
  // Returns true if it is newer than what was known.
  bool Learn(const DecidedPtr& d);
  // The instance this acceptor votes in (the successor of its latest
  // record) and its vote there.
  using Vote = ControlVote;
  Vote Current() const;
  // A member that restarted empty adopts the votes of a majority of the
  // others in the current instance (the highest promise, the value of the
  // highest ballot accepted): whatever it promised or accepted before it
  // forgot is covered, since every majority it voted with intersects them.
  void Adopt(const Vote& v);
  bool HasState() const;     // promised or accepted anything, or knows a record
  bool HasAccepted() const;  // accepted a value, or knows a record

 private:
  struct Instance {
    uint64_t promised = 0;
    uint64_t accepted_ballot = 0;
    DecidedPtr accepted;
  };
  // Under mu_: false (and *error set) if the journal refused.
  bool LearnLocked(const DecidedPtr& d, std::string* error);
  bool RecordVoteLocked(uint64_t instance, const Instance& in, std::string* error);

  mutable std::mutex mu_;
  std::map<uint64_t, Instance> instances_;
  DecidedPtr latest_;
  AcceptorJournal* journal_ = nullptr;
};

// Reach bookkeeping shared by compaction, replay and the failover walk:
// advances (reach, barrier epoch) over one more slot in stream order, as
// StreamReach does. Returns false where the walk would stop (stale entry).
bool AdvanceReach(const Slot& slot, const EpochRecord& decided, LogKey* reach, uint64_t* barrier);

}  // namespace rolis::replication
