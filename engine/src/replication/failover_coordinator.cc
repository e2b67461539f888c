#include "failover_coordinator.h"

#include <algorithm>

#include "membership.h"
#include "replica_common.h"
#include "rolis/log.h"

namespace rolis::replication {

// ---------------------------------------------------------------------------
// PrepareFailover.

Status FailoverCoordinator::CheckCanPrepare(uint64_t new_epoch, const Decided& last_decided) const {
  if (!member_->voting.load() || member_->needs_transfer.load()) {
    return Status::FailedPrecondition("this member is catching up (state transfer): choose another candidate");
  }
  if (member_->dirty.load()) {
    return Status::FailedPrecondition(
        "this member holds commits that a failover discarded and needs a state transfer: choose another candidate");
  }
  if (last_decided.record.epoch >= new_epoch) {
    return Status::InvalidArgument("the new epoch must be above the last decided one");
  }
  if (DecidedPtr d = control_->latest(); !member_->InConfig(d)) {
    return Status::FailedPrecondition("this member is not in configuration " + std::to_string(d ? d->config : 0) +
                                      " " + MembersString(member_->ConfigOf(d)) +
                                      ": it does not vote; choose another candidate");
  }
  if (new_epoch < acceptor_->promised()) {
    return Status::Aborted("epoch " + std::to_string(acceptor_->promised()) + " was already promised here");
  }
  return Status::OK();
}

// A member refused Promise(new_epoch) because it promised a newer epoch,
// or the same epoch to another proposer (ballots are unique per proposer:
// acceptor.h); a refusal for a failed journal says "durability".
static bool RefusedForNewerBallot(const PromiseReply& r, uint64_t new_epoch) {
  if (r.ok || r.amnesic) return false;
  if (r.promised_epoch > new_epoch) return true;
  return r.promised_epoch == new_epoch && r.error.rfind("durability", 0) != 0;
}

Status FailoverCoordinator::GatherPromises(uint64_t new_epoch, const Decided& last_decided, Promises* p) {
  // A majority of the latest decided configuration must grant it
  // (CheckPrepareQuorum: the configuration may be newer than the one this
  // member knows).
  PromiseMsg pm;
  pm.from = opts_.id;
  pm.epoch = new_epoch;
  DecidedPtr known = control_->latest();
  if (last_decided.record.epoch > 0) {
    auto ld = std::make_shared<const Decided>(last_decided);
    if (IsBetterDecided(ld, known)) known = ld;
  }
  const std::vector<MemberAddr> initial = member_->initial();
  p->replies = calls_->PromiseAll(
      pm, true, [&known, &initial, new_epoch](const std::vector<std::pair<uint32_t, PromiseReply>>& rs) {
        for (const auto& [id, r] : rs) {
          if (RefusedForNewerBallot(r, new_epoch)) return true;
        }
        return CheckPrepareQuorum(known, initial, rs).ok;
      });
  for (auto& [id, r] : p->replies) {
    if (r.ok && !r.amnesic) {
      p->oks.push_back(&r);
    } else if (RefusedForNewerBallot(r, new_epoch)) {
      return Status::Aborted("member " + std::to_string(id) + " promised epoch " + std::to_string(r.promised_epoch) +
                             " already" + (r.error.empty() ? "" : " (" + r.error + ")"));
    }
  }
  PrepareQuorum quorum_check = CheckPrepareQuorum(known, initial, p->replies);
  if (!quorum_check.ok) {
    return Unavailable("epoch " + std::to_string(new_epoch) + " needs " + quorum_check.Describe());
  }
  DecidedPtr newest = quorum_check.newest;
  if (IsBetterDecided(control_->latest(), newest)) newest = control_->latest();
  p->newest = newest;
  if (!member_->InConfig(newest)) {
    learn_(newest);
    return Status::FailedPrecondition("this member is not in configuration " +
                                      std::to_string(newest ? newest->config : 0) + " " +
                                      MembersString(member_->ConfigOf(newest)) + ": choose another candidate");
  }
  if (newest && newest->record.epoch > last_decided.record.epoch) {
    learn_(newest);
    return Status::FailedPrecondition("the record of epoch " + std::to_string(newest->record.epoch) +
                                      " is decided: start the failover from it");
  }
  return Status::OK();
}

FailoverPlan FailoverCoordinator::PlanFrom(uint64_t new_epoch, const Decided& last_decided,
                                           const std::vector<const PromiseReply*>& oks,
                                           std::vector<StreamBase>* bases, std::vector<BatchPtr>* payloads) const {
  std::vector<std::vector<std::vector<AcceptedSlot>>> quorum(oks.size());
  bases->assign(opts_.streams, StreamBase{});
  for (size_t i = 0; i < oks.size(); i++) {
    const PromiseReply& r = *oks[i];
    quorum[i].resize(opts_.streams);
    for (uint32_t t = 0; t < opts_.streams && t < r.streams.size(); t++) {
      const StreamSlots& ss = r.streams[t];
      StreamBase& base = (*bases)[t];
      // The walk starts where the member that compacted most stopped.
      if (ss.first_slot > base.first_slot) {
        base = StreamBase{ss.first_slot, ss.base_key, ss.base_barrier};
      } else if (ss.first_slot == base.first_slot) {
        base.base_key = std::max(base.base_key, ss.base_key);
        base.base_barrier = std::max(base.base_barrier, ss.base_barrier);
      }
      for (const Slot& s : ss.slots) {
        if (!s.value) continue;
        payloads->push_back(s.value);
        quorum[i][t].push_back(AcceptedSlot{
            s.index, s.ballot, SlotValue{s.value->kind, s.value->epoch, s.value->last_ts, payloads->size()}});
      }
    }
  }
  return PlanFailoverFrom(new_epoch, last_decided.record, quorum, *bases);
}

Status FailoverCoordinator::CheckCanLead(const FailoverPlan& plan, const std::vector<StreamBase>& bases,
                                         uint64_t led_epoch, uint64_t led_max_ts) {
  // This member's store must hold every compacted entry (it replays the rest).
  for (uint32_t t = 0; t < opts_.streams; t++) {
    if (replayer_->replayed_next(t) < bases[t].first_slot) {
      return Status::FailedPrecondition("this member has replayed stream " + std::to_string(t) + " up to slot " +
                                        std::to_string(replayer_->replayed_next(t)) +
                                        " but a member compacted up to " + std::to_string(bases[t].first_slot) +
                                        ": choose another candidate");
    }
  }
  // A member that led an epoch keeps its commits in its store: they must all
  // survive the new cut, or it cannot lead.
  if (led_epoch != 0 && led_max_ts != 0) {
    auto it = plan.record.cut.find(led_epoch);
    if (it == plan.record.cut.end() || it->second < led_max_ts) {
      member_->dirty.store(true);
      member_->needs_transfer.store(true);
      transfer_->Wake();
      return Status::FailedPrecondition("this member led epoch " + std::to_string(led_epoch) +
                                        " and holds commits beyond the new cut: choose another candidate");
    }
  }
  return Status::OK();
}

std::unique_ptr<FailoverCoordinator::Pending> FailoverCoordinator::MakePending(
    uint64_t new_epoch, const FailoverPlan& plan, const DecidedPtr& newest, std::vector<StreamBase> bases,
    const std::vector<BatchPtr>& payloads) const {
  auto pending = std::make_unique<Pending>();
  pending->epoch = new_epoch;
  // The new epoch keeps the configuration in force.
  pending->proposed =
      Decided{plan.record, opts_.id, plan.watermark, newest ? newest->config : 0, member_->ConfigOf(newest)};
  pending->bases = std::move(bases);
  pending->repropose.resize(opts_.streams);
  for (uint32_t t = 0; t < opts_.streams; t++) {
    for (const AcceptedSlot& a : plan.repropose[t]) {
      BatchPtr v;
      if (a.value.payload_id > 0) {
        v = payloads[a.value.payload_id - 1];  // as found
      } else {
        auto b = std::make_shared<Batch>();
        b->kind = a.value.kind;
        b->epoch = new_epoch;
        v = std::move(b);
      }
      pending->repropose[t].push_back(Slot{a.index, new_epoch, std::move(v)});
    }
  }
  return pending;
}

Status FailoverCoordinator::PrepareFailover(uint64_t new_epoch, const Decided& last_decided, PrepareResult* out) {
  std::lock_guard<std::mutex> step(step_mu_);
  if (Status s = CheckCanPrepare(new_epoch, last_decided); !s.ok()) return s;
  // The current leader hands over: what it committed gets on a majority
  // first, so that it stays a valid candidate with nothing to lose.
  if (leader_->IsOpen()) leader_->Drain(opts_.rpc_timeout);
  leader_->StepDown(new_epoch, "failover to a new epoch");
  const auto [led_epoch, led_max_ts] = leader_->Deposed();
  const Role before = member_->role.load();
  member_->role.store(Role::kCandidate);
  auto fail = [&](Status s) {
    const Role settled = member_->FollowerRole();
    member_->role.store(settled == Role::kCatchingUp ? settled
                                                     : (before == Role::kCandidate ? Role::kFollower : before));
    if (member_->role.load() == Role::kCandidate || member_->role.load() == Role::kLeader) {
      member_->role.store(Role::kFollower);
    }
    return s;
  };

  // 1. Promise(e') on every member.
  Promises promises;
  if (Status s = GatherPromises(new_epoch, last_decided, &promises); !s.ok()) return fail(s);
  // 2-4. Merge, walk, G' and V'.
  std::vector<StreamBase> bases;
  std::vector<BatchPtr> payloads;
  FailoverPlan plan = PlanFrom(new_epoch, last_decided, promises.oks, &bases, &payloads);
  if (Status s = CheckCanLead(plan, bases, led_epoch, led_max_ts); !s.ok()) return fail(s);

  std::unique_ptr<Pending> pending = MakePending(new_epoch, plan, promises.newest, std::move(bases), payloads);
  out->proposed = pending->proposed;
  out->promised_by.clear();
  for (const PromiseReply* r : promises.oks) out->promised_by.push_back(r->from);
  {
    std::lock_guard<std::mutex> g(pending_mu_);
    pending_ = std::move(pending);
  }
  log::Printf(log::Level::kInfo, "replication", "rolis-repl %u: prepared epoch %lu: G' = %s", opts_.id,
              static_cast<unsigned long>(new_epoch), KeyStr(plan.watermark).c_str());
  return Status::OK();
}

// ---------------------------------------------------------------------------
// OpenEpoch.

std::unique_ptr<FailoverCoordinator::Pending> FailoverCoordinator::TakePending(const Decided& record) {
  std::lock_guard<std::mutex> g(pending_mu_);
  const uint64_t e = record.record.epoch;
  if (!pending_ || pending_->epoch != e || pending_->proposed.record != record.record ||
      record.leader_id != opts_.id) {
    return nullptr;
  }
  return std::move(pending_);
}

bool FailoverCoordinator::AcceptReproposalsLocally(const Pending& p, std::vector<uint64_t>* self_need) {
  self_need->assign(opts_.streams, 0);
  for (uint32_t t = 0; t < opts_.streams; t++) {
    for (const Slot& s : p.repropose[t]) {
      if (!acceptor_->AcceptLocal(t, s, p.epoch, p.bases[t].first_slot, &(*self_need)[t])) return false;
    }
  }
  return true;
}

Status FailoverCoordinator::OpenEpoch(const Decided& record, LogKey* watermark) {
  std::lock_guard<std::mutex> step(step_mu_);
  const uint64_t e = record.record.epoch;
  {
    // The same record again, while this member opens it or leads it: the
    // operator retries after UNAVAILABLE ("not on a majority yet") or after
    // losing the answer. Wait for the opening like the first call instead
    // of refusing a request that is already being carried out.
    Status st;
    if (leader_->AwaitReopen(record, watermark, &st)) return st;
  }
  std::unique_ptr<Pending> pending = TakePending(record);
  if (!pending) {
    return Status::FailedPrecondition("OpenEpoch must follow this member's PrepareFailover of epoch " +
                                      std::to_string(e) + ", with the record it proposed");
  }
  if (member_->role.load() != Role::kCandidate) {
    return Status::FailedPrecondition("this member is no longer the candidate");
  }
  if (acceptor_->promised() > e) {
    member_->role.store(Role::kFollower);
    return Status::Aborted("epoch " + std::to_string(acceptor_->promised()) + " was promised since");
  }
  auto dec = std::make_shared<const Decided>(record);
  // Decided (by DecideEpoch or by the operator's compare-and-set).
  learn_(dec);

  // The re-proposals, as found, with ballot e; this member's own vote first.
  std::vector<uint64_t> self_need;
  if (!AcceptReproposalsLocally(*pending, &self_need)) {
    member_->role.store(Role::kFollower);
    return Status::Aborted("a newer epoch was promised here");
  }
  // The new leader's state: replay of the valid entries at or below G'.
  std::vector<Slot> barriers;
  for (uint32_t t = 0; t < opts_.streams; t++) barriers.push_back(pending->repropose[t].back());
  replayer_->ReplayForOpening(dec, barriers);
  member_->Know(member_->ConfigOf(dec));
  LeaderStreams::Opening opening;
  opening.record = dec;
  opening.bases = std::move(pending->bases);
  opening.repropose = std::move(pending->repropose);
  opening.self_need = std::move(self_need);
  leader_->BeginOpening(opening);
  Status st = leader_->AwaitOpen(e, watermark);
  if (st.ok()) {
    log::Printf(log::Level::kInfo, "replication",
                "rolis-repl %u: leading epoch %lu (G' %s)", opts_.id, static_cast<unsigned long>(e),
                KeyStr(record.watermark).c_str());
  }
  return st;
}

// ---------------------------------------------------------------------------
// Candidacy.

void FailoverCoordinator::AbandonCandidacy(uint64_t epoch) {
  std::lock_guard<std::mutex> step(step_mu_);  // not while an OpenEpoch runs
  {
    std::lock_guard<std::mutex> g(pending_mu_);
    if (!pending_ || pending_->epoch != epoch) return;
    pending_.reset();
  }
  member_->LeaveCandidateRole();
}

bool FailoverCoordinator::DropCandidacyUpTo(uint64_t epoch) {
  std::lock_guard<std::mutex> g(pending_mu_);
  if (!pending_ || pending_->epoch > epoch) return false;
  pending_.reset();
  return true;
}

void FailoverCoordinator::DropCandidacyBelow(uint64_t epoch) {
  std::lock_guard<std::mutex> g(pending_mu_);
  if (pending_ && pending_->epoch < epoch) {
    pending_.reset();
    if (member_->role.load() == Role::kCandidate) member_->role.store(Role::kFollower);
  }
}

}  // namespace rolis::replication
