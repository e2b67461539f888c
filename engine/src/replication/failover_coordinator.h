// The failover steps the admin API (or the built-in election) drives on
// the candidate (docs/replication.md, "Failover to epoch e'" and "Failover
// details"): PrepareFailover (promises of a majority, merge, walk, G' and
// the cut V'), then, once the record is decided on the control stream,
// OpenEpoch (re-propose what was found with the new ballot, replay up to
// G', open when every stream's re-proposals and barrier are on a majority).
//
// Invariants kept here:
//   - I2 (chosen values are never replaced): the re-proposals keep every
//     value found (the highest ballot per slot); no-ops fill only slots no
//     promise holds; each stream ends with a barrier of the new epoch.
//   - I3/I4: G' is the failover walk's reach over a majority's promises
//     (failover_plan.h), so every acknowledged transaction is valid under
//     the new record and in the new leader's state; a candidate that cannot
//     hold that state (it replayed less than was compacted, or it led an
//     epoch whose commits the cut discards) refuses to lead.
//   - A pending candidacy is dropped as soon as another member leads its
//     epoch or a newer one, or promises a newer one.
//
// Lock order: step_mu_ (one failover step at a time) first, before the
// leader's and the replayer's locks; pending_mu_ is a leaf.
#pragma once

#include <memory>
#include <mutex>
#include <vector>

#include "acceptor.h"
#include "leader_streams.h"
#include "member_calls.h"
#include "member_state.h"
#include "replayer.h"
#include "replica_options.h"
#include "state_transfer.h"

namespace rolis::replication {

struct PrepareResult {
  Decided proposed;                 // (new epoch, V') with leader and G'
  std::vector<uint32_t> promised_by;
};

class FailoverCoordinator {
 public:
  // `learn` takes a record found decided (Replica::LearnRecord).
  FailoverCoordinator(const ReplicaOptions& opts, MemberState* member, MemberCalls* calls, Acceptor* acceptor,
                      const ControlAcceptor* control, Replayer* replayer, LeaderStreams* leader,
                      StateTransfer* transfer, std::function<void(const DecidedPtr&)> learn)
      : opts_(opts),
        member_(member),
        calls_(calls),
        acceptor_(acceptor),
        control_(control),
        replayer_(replayer),
        leader_(leader),
        transfer_(transfer),
        learn_(std::move(learn)) {}

  // See Replica.
  Status PrepareFailover(uint64_t new_epoch, const Decided& last_decided, PrepareResult* out);
  Status OpenEpoch(const Decided& record, LogKey* watermark);
  void AbandonCandidacy(uint64_t epoch);

  // Another member leads `epoch` (or a newer one): a candidacy for it or an
  // older one is over. True if one was dropped.
  bool DropCandidacyUpTo(uint64_t epoch);
  // A candidate of a newer epoch than this member's pending one was
  // promised: the candidacy is dropped, and a candidate becomes a follower.
  void DropCandidacyBelow(uint64_t epoch);

 private:
  // What PrepareFailover found, for OpenEpoch.
  struct Pending {
    uint64_t epoch = 0;
    Decided proposed;
    std::vector<std::vector<Slot>> repropose;  // per stream, ballot = epoch, ends with a barrier
    std::vector<StreamBase> bases;
  };
  // The promises a Prepare gathered.
  struct Promises {
    std::vector<std::pair<uint32_t, PromiseReply>> replies;
    std::vector<const PromiseReply*> oks;  // into replies
    DecidedPtr newest;                     // the newest record they (or this member) know
  };

  Status CheckCanPrepare(uint64_t new_epoch, const Decided& last_decided) const;
  // Promise(e') on every member; a majority of the latest decided
  // configuration must grant it.
  Status GatherPromises(uint64_t new_epoch, const Decided& last_decided, Promises* p);
  // The merge, walk, G' and V' (failover_plan.h) over the promises; *bases
  // and *payloads: where each stream's walk starts, and the values found.
  FailoverPlan PlanFrom(uint64_t new_epoch, const Decided& last_decided, const std::vector<const PromiseReply*>& oks,
                        std::vector<StreamBase>* bases, std::vector<BatchPtr>* payloads) const;
  // This member can hold the new leader's state: it replayed every
  // compacted entry, and the commits of an epoch it led survive the cut.
  Status CheckCanLead(const FailoverPlan& plan, const std::vector<StreamBase>& bases, uint64_t led_epoch,
                      uint64_t led_max_ts);
  std::unique_ptr<Pending> MakePending(uint64_t new_epoch, const FailoverPlan& plan, const DecidedPtr& newest,
                                       std::vector<StreamBase> bases, const std::vector<BatchPtr>& payloads) const;
  std::unique_ptr<Pending> TakePending(const Decided& record);
  // The re-proposals on this member's own acceptor (its vote first): per
  // stream, the first slot it lacks. False if a newer epoch was promised.
  bool AcceptReproposalsLocally(const Pending& p, std::vector<uint64_t>* self_need);

  const ReplicaOptions& opts_;
  MemberState* const member_;
  MemberCalls* const calls_;
  Acceptor* const acceptor_;
  const ControlAcceptor* const control_;
  Replayer* const replayer_;
  LeaderStreams* const leader_;
  StateTransfer* const transfer_;
  const std::function<void(const DecidedPtr&)> learn_;

  std::mutex step_mu_;     // one admin failover step at a time
  std::mutex pending_mu_;  // a leaf: pending_
  std::unique_ptr<Pending> pending_;
};

}  // namespace rolis::replication
