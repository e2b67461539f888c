// The control stream's proposer (docs/replication.md, "Failover" and
// "Membership"): single-decree Paxos in the instance after a decided record,
// among the members of that record's configuration. It decides the record
// of a new epoch (DecideEpoch, asked by the operator or the built-in
// election) and the next configuration of a membership change.
//
// Invariant kept here: one record per instance. A proposer proposes the
// value of the highest ballot a majority's promises report (Paxos), and
// stops as soon as any reply shows a newer record, which it learns.
//
// Lock order: mu_ (one proposal at a time) is taken before every other lock
// of the Replica and held across the fan-out; the members' replies come
// through their own handlers (this member's through Replica::HandleControl,
// which takes no lock held here).
#pragma once

#include <functional>
#include <mutex>

#include "acceptor.h"
#include "member_calls.h"
#include "member_state.h"

namespace rolis::replication {

class ControlStream {
 public:
  // `learn` takes a record that replies showed to be decided (Replica::LearnRecord).
  ControlStream(MemberState* member, MemberCalls* calls, const ControlAcceptor* control,
                std::function<void(const DecidedPtr&)> learn)
      : member_(member), calls_(calls), control_(control), learn_(std::move(learn)) {}

  // See Replica::DecideEpoch.
  Status DecideEpoch(const Decided& record, uint64_t expected_previous, bool* decided, DecidedPtr* current);
  // OK if `record` is the newest record decided on the control stream, as
  // this member knows it or, if it knows none as new, as the members'
  // control acceptors answer (all of them, within the call timeout, unless
  // one shows it or a newer one first). Otherwise (a newer record is
  // decided, or this one is not)
  // FAILED_PRECONDITION: the record came from elsewhere (under
  // --decider=control-stream, the operator's path; docs/replication.md,
  // "One decider per cluster"). Takes no lock of the proposer.
  Status CheckDecided(const Decided& record);
  // Proposes `value` in the instance after `prev`; *chosen is what the
  // instance chose (a newer record, if one is found).
  Status Propose(const DecidedPtr& prev, const DecidedPtr& value, DecidedPtr* chosen) {
    std::lock_guard<std::mutex> one(mu_);
    return ProposeLocked(prev, value, chosen);
  }

 private:
  Status ProposeLocked(const DecidedPtr& prev, const DecidedPtr& value, DecidedPtr* chosen);

  MemberState* const member_;
  MemberCalls* const calls_;
  const ControlAcceptor* const control_;
  const std::function<void(const DecidedPtr&)> learn_;
  std::mutex mu_;
};

}  // namespace rolis::replication
