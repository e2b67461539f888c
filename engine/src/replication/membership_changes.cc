#include "membership_changes.h"

#include <algorithm>
#include <thread>

#include "replica_common.h"
#include "rolis/log.h"

namespace rolis::replication {

Status MembershipChanges::Settle(uint64_t e, const std::vector<uint64_t>& mark, Deadline deadline) {
  while (!leader_->LogHeldSince(mark)) {
    if (member_->stopping.load() || SteadyClock::now() > deadline) {
      return Unavailable("configuration " + std::to_string(control_->latest()->config) +
                         " is decided; a majority of it does not hold the log yet: send the same request again");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return leader_->CountOnly(e, MemberIds(member_->ConfigOf(control_->latest())));
}

Status MembershipChanges::CheckNoOtherChange(const MembershipChange& ch, bool* resume) const {
  *resume = false;
  const std::vector<uint32_t> joining = leader_->JoiningConfig();
  if (joining.empty()) return Status::OK();
  if (joining != MemberIds(ch.members)) {
    std::vector<MemberAddr> pending;
    for (uint32_t id : joining) pending.push_back(MemberAddr{id, ""});
    return Status::FailedPrecondition("the change to " + MembersString(pending) +
                                      " is not known to be decided yet: send that request again first");
  }
  *resume = true;
  return Status::OK();
}

Status MembershipChanges::CatchUpNewMember(uint64_t e, const MemberAddr& m, std::chrono::milliseconds timeout,
                                           Deadline deadline) {
  // It is sent the log (it catches up by state transfer if the log no
  // longer reaches back to what it holds) and must hold all of it as it was
  // when we started.
  member_->Know({m});
  const std::vector<uint64_t> want = leader_->AddLearner(m.id);
  std::string behind;
  for (;;) {
    if (Status ls = leader_->LearnerProgress(e, m.id, want, &behind); !ls.ok()) return ls;
    if (behind.empty()) return Status::OK();
    if (member_->stopping.load() || SteadyClock::now() > deadline) {
      leader_->DropLearner(m.id);
      return Unavailable("new member " + std::to_string(m.id) + " at " + m.address + " did not catch up within " +
                         std::to_string(timeout.count()) + " ms (" + behind +
                         "; is it running, started with --peers listing the new membership?): nothing changed");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

void MembershipChanges::TellRemovedMember(uint32_t id, uint64_t told, Deadline deadline) {
  // Else it would still run for leader, and learn that it no longer votes
  // only from the promises it asks for.
  auto until = std::min(deadline, SteadyClock::now() + std::chrono::seconds(1));
  while (SteadyClock::now() < until) {
    if (leader_->PeerHolds(id, told)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

Status MembershipChanges::Change(const std::vector<MemberAddr>& target, std::chrono::milliseconds timeout,
                                 DecidedPtr* now) {
  std::lock_guard<std::mutex> one(change_mu_);
  const auto deadline = SteadyClock::now() + timeout;
  const uint64_t e = leader_->open_epoch();
  DecidedPtr cur = control_->latest();
  if (e == 0 || !cur || cur->record.epoch != e) {
    std::string who = member_->leader().client_address;
    return Status::FailedPrecondition("this member is not the open leader" +
                                      (who.empty() ? std::string() : " (the leader serves clients at " + who + ")") +
                                      ": ask the leader");
  }
  const std::vector<MemberAddr> from = member_->ConfigOf(cur);
  MembershipChange ch;
  if (Status s = CheckMembershipChange(from, target, member_->self(), &ch); !s.ok()) return s;

  if (ch.same) {
    // An idempotent retry: wait for the change in force to settle, if it has not.
    if (!leader_->JoiningConfig().empty()) {
      if (Status ss = Settle(e, leader_->NextSlots(), deadline); !ss.ok()) return ss;
    }
    *now = cur;
    return Status::OK();
  }
  bool resume = false;  // a change whose decision was left unknown: decide it again
  if (Status s = CheckNoOtherChange(ch, &resume); !s.ok()) return s;

  // 1. A new member catches up before it counts.
  if (ch.add && !resume) {
    if (Status s = CatchUpNewMember(e, ch.member, timeout, deadline); !s.ok()) return s;
  }

  // 2. From here on the leader counts a majority of both configurations
  //    (joint), so whichever one a later failover finds, it intersects
  //    every majority that acknowledged; then the next configuration is
  //    decided in the control-stream instance after the record in force.
  const std::vector<uint64_t> mark = leader_->CountJoint(MemberIds(from), MemberIds(ch.members));
  auto next = std::make_shared<Decided>(*cur);
  next->config = cur->config + 1;
  next->members = ch.members;
  DecidedPtr chosen;
  if (Status s = control_stream_->Propose(cur, next, &chosen); !s.ok()) {
    // It may or may not have been chosen: keep counting both (safe either
    // way); the same request again finishes it.
    return Status(s.code(), s.message() + " (the change may or may not be decided: send the same request again)");
  }
  if (chosen->record.epoch != e) {
    return Status::Aborted("epoch " + std::to_string(chosen->record.epoch) + " was decided: this member no longer leads");
  }
  // A slot of stream 0 sent with the new record (0: no longer leading).
  const uint64_t told = leader_->CarryRecord(e, chosen, MemberIds(from), MemberIds(member_->ConfigOf(chosen)));
  if (!ch.add) TellRemovedMember(ch.member.id, told, deadline);
  // 3. Settled: a majority of the new configuration holds the whole log
  //    (what a majority of the old one held is copied onto it), so the
  //    next change may go, and the old configuration is no longer counted.
  if (Status ss = Settle(e, mark, deadline); !ss.ok()) return ss;
  *now = chosen;
  if (*chosen != *next) {
    return Status::Aborted("another membership change was decided first: the membership is now " +
                           MembersString(member_->ConfigOf(chosen)) + "; send the request again if it still applies");
  }
  log::Printf(log::Level::kInfo, "replication", "rolis-repl %u: configuration %lu: %s", member_->self(),
              static_cast<unsigned long>(chosen->config), MembersString(member_->ConfigOf(chosen)).c_str());
  return Status::OK();
}

}  // namespace rolis::replication
