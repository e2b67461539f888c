#include "control_stream.h"

#include <algorithm>
#include <random>
#include <thread>

#include "membership.h"
#include "replica_common.h"

namespace rolis::replication {

Status ControlStream::DecideEpoch(const Decided& record, uint64_t expected_previous, bool* decided, DecidedPtr* current) {
  std::lock_guard<std::mutex> one(mu_);
  *decided = false;
  if (!member_->voting.load()) return Status::FailedPrecondition("this member is catching up: ask another member");
  if (record.record.epoch <= expected_previous) {
    return Status::InvalidArgument("the record's epoch must be above the expected previous epoch");
  }
  DecidedPtr latest = control_->latest();
  if (!latest || latest->record.epoch < expected_previous) {
    ControlMsg q;
    q.kind = ControlMsg::Kind::kQuery;
    q.from = member_->self();
    const size_t maj = MajorityOf(member_->ConfigOf(latest).size());
    for (auto& [id, r] : calls_->ControlAll(q, [maj](const auto& rs) { return rs.size() >= maj; })) learn_(r.latest);
    latest = control_->latest();
  }
  if (latest && latest->record.epoch > expected_previous) {
    *current = latest;
    return Status::OK();
  }
  if (expected_previous > 0 && (!latest || latest->record.epoch != expected_previous)) {
    return Status::FailedPrecondition("the record of epoch " + std::to_string(expected_previous) +
                                      " is not known to be decided");
  }
  // The record follows the newest record of epoch expected_previous (the
  // epoch's record, or its latest membership change).
  DecidedPtr prev = expected_previous > 0 ? latest : nullptr;
  Status s = ProposeLocked(prev, std::make_shared<const Decided>(record), current);
  if (!s.ok()) return s;
  *decided = **current == record;
  return Status::OK();
}

Status ControlStream::CheckDecided(const Decided& record) {
  auto known = [&] {
    DecidedPtr latest = control_->latest();
    return latest && *latest == record;
  };
  if (known()) return Status::OK();
  DecidedPtr latest = control_->latest();
  if (!latest || NewerRecord(record, *latest)) {
    // Not learned here yet (the proposer's announcement may be on its way):
    // ask the others.
    ControlMsg q;
    q.kind = ControlMsg::Kind::kQuery;
    q.from = member_->self();
    // Enough once one shows it (or a newer record); otherwise every member
    // answers or its call times out.
    auto enough = [&record](const std::vector<std::pair<uint32_t, ControlReply>>& rs) {
      for (const auto& [id, r] : rs) {
        if (r.latest && !NewerRecord(record, *r.latest)) return true;
      }
      return false;
    };
    for (auto& [id, r] : calls_->ControlAll(q, enough)) {
      if (r.latest) learn_(r.latest);
    }
    if (known()) return Status::OK();
    latest = control_->latest();
  }
  if (latest && NewerRecord(*latest, record)) {
    return Status::FailedPrecondition("a newer record than that of epoch " + std::to_string(record.record.epoch) +
                                      " is decided (epoch " + std::to_string(latest->record.epoch) + ", config " +
                                      std::to_string(latest->config) + ")");
  }
  return Status::FailedPrecondition(
      "the record of epoch " + std::to_string(record.record.epoch) + " (leader " + std::to_string(record.leader_id) +
      ") was not decided on the control stream, which decides this cluster's epoch records "
      "(--decider=control-stream): decide it with DecideEpoch first");
}

Status ControlStream::ProposeLocked(const DecidedPtr& prev, const DecidedPtr& mine, DecidedPtr* current) {
  const uint64_t instance = InstanceAfter(prev.get());
  const std::vector<uint32_t> acceptors = MemberIds(member_->ConfigOf(prev));
  auto newer = [&prev](const DecidedPtr& d) { return d && (!prev || NewerRecord(*d, *prev)); };
  // The first record newer than prev that a reply shows; null when none does.
  auto newer_in = [&newer](const std::vector<std::pair<uint32_t, ControlReply>>& rs) -> DecidedPtr {
    for (const auto& [id, r] : rs) {
      if (newer(r.latest)) return r.latest;
    }
    return nullptr;
  };
  auto quorum = [&acceptors](const std::vector<std::pair<uint32_t, ControlReply>>& rs) {
    std::vector<uint32_t> ok;
    for (const auto& [id, r] : rs) {
      if (r.ok) ok.push_back(id);
    }
    return HasMajority(acceptors, ok);
  };
  auto settled = [&](const std::vector<std::pair<uint32_t, ControlReply>>& rs) {
    return newer_in(rs) != nullptr || quorum(rs);
  };
  DecidedPtr chosen;
  uint64_t round = 1;
  std::mt19937_64 rng(member_->self() * 7919 + mine->record.epoch + mine->config);
  for (int attempt = 0; attempt < 20 && !chosen && !member_->stopping.load(); attempt++) {
    const uint64_t ballot = (round << 8) | (member_->self() & 0xFF);
    ControlMsg pm;
    pm.kind = ControlMsg::Kind::kPrepare;
    pm.from = member_->self();
    pm.instance = instance;
    pm.ballot = ballot;
    pm.prev = prev;
    uint64_t best_ballot = 0;
    DecidedPtr value = mine;
    uint64_t highest = 0;
    // A newer record decided meanwhile is adopted (learned and returned).
    auto promises = calls_->ControlAll(pm, settled);
    if (DecidedPtr d = newer_in(promises)) {
      learn_(d);
      *current = d;
      return Status::OK();
    }
    for (auto& [id, r] : promises) {
      highest = std::max(highest, r.promised);
      if (r.ok && r.accepted && r.accepted_ballot > best_ballot) {
        best_ballot = r.accepted_ballot;
        value = r.accepted;  // Paxos: propose the value of the highest ballot accepted
      }
    }
    if (quorum(promises)) {
      ControlMsg am = pm;
      am.kind = ControlMsg::Kind::kAccept;
      am.value = value;
      auto accepts = calls_->ControlAll(am, settled);
      if (DecidedPtr d = newer_in(accepts)) {
        learn_(d);
        *current = d;
        return Status::OK();
      }
      for (auto& [id, r] : accepts) highest = std::max(highest, r.promised);
      if (quorum(accepts)) chosen = value;
    }
    if (!chosen) {
      round = std::max(round, highest >> 8) + 1;
      std::this_thread::sleep_for(std::chrono::milliseconds(2 + rng() % 20));
    }
  }
  if (!chosen) {
    return Unavailable("no majority of " + MembersString(member_->ConfigOf(prev)) + " answered the control stream");
  }
  learn_(chosen);
  ControlMsg lm;
  lm.kind = ControlMsg::Kind::kLearn;
  lm.from = member_->self();
  lm.instance = instance;
  lm.value = chosen;
  calls_->ControlAll(lm, [](const auto&) { return true; });  // tell the others; do not wait
  *current = chosen;
  return Status::OK();
}

}  // namespace rolis::replication
