// Membership changes, one member at a time (docs/replication.md,
// "Membership"), asked of the open leader. A new member first catches up
// (it is sent the log as a learner); then the leader counts a majority of
// the old and the new configuration together (joint), the next
// configuration is decided on the control stream, and the change settles
// once a majority of the new configuration holds the whole log.
//
// Invariant kept here: every majority that acknowledged a transaction
// intersects every majority a later failover can find. Configurations k and
// k+1 differ by one member (CheckMembershipChange), and while a change is
// not known to have settled the leader counts both; a change whose
// decision was left unknown is decided again, never replaced by another.
//
// Lock order: change_mu_ (one change at a time) first; the calls it makes
// take the control stream's, then the leader's locks, one at a time.
#pragma once

#include <chrono>
#include <mutex>
#include <vector>

#include "control_stream.h"
#include "leader_streams.h"
#include "member_state.h"
#include "membership.h"

namespace rolis::replication {

class MembershipChanges {
 public:
  MembershipChanges(MemberState* member, LeaderStreams* leader, ControlStream* control_stream,
                    const ControlAcceptor* control)
      : member_(member), leader_(leader), control_stream_(control_stream), control_(control) {}

  // See Replica::ChangeMembership.
  Status Change(const std::vector<MemberAddr>& target, std::chrono::milliseconds timeout, DecidedPtr* now);

 private:
  using Deadline = SteadyClock::time_point;
  // Waits (until `deadline`) for a majority of every counted configuration
  // to hold the log up to `mark`; then only the newest one is counted.
  Status Settle(uint64_t e, const std::vector<uint64_t>& mark, Deadline deadline);
  // A change left joint (its decision unknown): OK and *resume if it is
  // this one, FailedPrecondition if another.
  Status CheckNoOtherChange(const MembershipChange& ch, bool* resume) const;
  // The new member is sent the log until it holds all of it as it was now.
  Status CatchUpNewMember(uint64_t e, const MemberAddr& m, std::chrono::milliseconds timeout, Deadline deadline);
  // Best effort (1 s): the removed member learns the record that removes it
  // (slot `told` of stream 0 carries it) before it is no longer sent to.
  void TellRemovedMember(uint32_t id, uint64_t told, Deadline deadline);

  MemberState* const member_;
  LeaderStreams* const leader_;
  ControlStream* const control_stream_;
  const ControlAcceptor* const control_;
  std::mutex change_mu_;
};

}  // namespace rolis::replication
