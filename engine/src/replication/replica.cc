#include "replica.h"

#include <algorithm>

#include "replica_common.h"
#include "rolis/log.h"

namespace rolis::replication {
namespace {

// Under the operator a new epoch's record is decided by its compare-and-set
// only: a control-stream vote for one would let a second record of the
// same epoch be decided (membership changes of the epoch in force still go
// through the control stream).
bool IsNewEpochRecordVote(const ControlMsg& m) {
  if (m.kind != ControlMsg::Kind::kAccept || !m.value) return false;
  return !m.prev || m.value->record.epoch != m.prev->record.epoch;
}

ReplicaOptions WithMembers(ReplicaOptions o) {
  if (o.members.empty()) o.members.push_back(o.id);
  std::sort(o.members.begin(), o.members.end());
  return o;
}

std::vector<MemberAddr> InitialMembers(const ReplicaOptions& o) {
  std::vector<MemberAddr> out;
  for (uint32_t m : o.members) {
    auto it = o.addresses.find(m);
    out.push_back(MemberAddr{m, it == o.addresses.end() ? "" : it->second});
  }
  return out;
}

TsClock OrMonotonic(TsClock c) {
  if (c.floor) return c;
  uint64_t now = MonotonicNanos();
  return MonotonicTsClock(now, now);
}

}  // namespace

Replica::Replica(ReplicaOptions options, Transport* transport, TsClock clock)
    : opts_(WithMembers(std::move(options))),
      transport_(transport),
      member_(opts_.id, InitialMembers(opts_), transport),
      calls_(&member_, transport, this, opts_.rpc_timeout),
      acceptor_(opts_.streams),
      replayer_(opts_.streams, &member_, &acceptor_, [this] { transfer_.Request(); }),
      leader_(opts_, OrMonotonic(std::move(clock)), &member_, &acceptor_, transport, &replayer_,
              [this] { CheckDeposed(); }),
      snapshots_(&member_, &replayer_, &leader_, &control_),
      transfer_(opts_, &member_, &calls_, transport, &acceptor_, &control_, &replayer_, &leader_, &snapshots_,
                [this](const DecidedPtr& newest) {
                  if (newest && newest->leader_id != opts_.id) LearnLeader(newest->record.epoch, newest->leader_id, "");
                }),
      control_stream_(&member_, &calls_, &control_, [this](const DecidedPtr& d) { LearnRecord(d); }),
      failover_(opts_, &member_, &calls_, &acceptor_, &control_, &replayer_, &leader_, &transfer_,
                [this](const DecidedPtr& d) { LearnRecord(d); }),
      membership_(&member_, &leader_, &control_stream_, &control_) {
  if (opts_.probe_at_start && opts_.members.size() > 1) {
    member_.voting.store(false);
    member_.role.store(Role::kCatchingUp);
  }
  transport_->Bind(this);
}

Replica::~Replica() { Stop(); }

void Replica::Attach(Database* db, std::vector<std::mutex*> worker_mutexes) {
  db_ = db;
  leader_.Attach(db, std::move(worker_mutexes));
  replayer_.Attach(db_);
  snapshots_.Attach(db_);
  transfer_.Attach(db_);
}

void Replica::RegisterStream(WorkerId worker, uint32_t stream) { leader_.RegisterStream(worker, stream); }

void Replica::Start() {
  if (started_) return;
  started_ = true;
  transport_->Start();
  leader_.Start();
  replayer_.Start();
  transfer_.Start();
}

void Replica::Stop() {
  if (member_.stopping.exchange(true)) return;
  transport_->Stop();
  leader_.Wake();
  replayer_.Wake();
  transfer_.Wake();
  leader_.Join();
  replayer_.Join();
  transfer_.Join();
  calls_.Drain();  // calls still running end by their deadline
  leader_.Shutdown();
  replayer_.ReleaseWorker();
  snapshots_.ReleaseWorker();
}

uint64_t Replica::epoch() const { return member_.leader().epoch; }

std::string Replica::leader_client_address() const { return member_.leader().client_address; }

void Replica::CheckDeposed() {
  // The record that followed the epoch this member led may be known already.
  // The record of that epoch itself says nothing about its commits: a
  // leader that stepped down on hearing of a newer epoch (a promise, an
  // announcement it could not check) stays catching up until it learns the
  // next record.
  DecidedPtr d = Latest();
  if (d && d->record.epoch > leader_.Deposed().first) OnNewRecord(d);
}

// ---------------------------------------------------------------------------
// Follower: accepting and learning.

std::string Replica::Validate(const AcceptMsg& m) const {
  if (m.stream >= opts_.streams) {
    return "unknown stream " + std::to_string(m.stream) + " (this member has " + std::to_string(opts_.streams) + ")";
  }
  if (m.epoch == 0) return "epoch 0";
  if (m.from == opts_.id) return "an accept from this member itself";
  const bool known = member_.Knows(m.from);
  // A leader this member has not heard of yet (it joined by a membership
  // change) is in its epoch's configuration.
  if (!known && !(m.decided && Contains(m.decided->members, m.from))) {
    return "sender " + std::to_string(m.from) + " is not a member";
  }
  if (!m.slot.value) return "slot without a value";
  if (m.slot.index < m.log_start) return "slot below the sender's log start";
  const Batch& b = *m.slot.value;
  if (b.epoch > m.epoch) return "value of an epoch above the sender's";
  if (m.decided && m.decided->record.epoch != m.epoch) return "decided record of another epoch";
  switch (b.kind) {
    case BatchKind::kTxns: {
      Status s = CheckPayload(b.payload, b.txn_count, b.txn_count > 0 ? b.last_ts : 0, b.crc);
      if (!s.ok()) return s.message();
      break;
    }
    case BatchKind::kNoop:
    case BatchKind::kBarrier:
      if (!b.payload.empty() || b.txn_count != 0) return "no-op or barrier with transactions";
      break;
    default:
      return "unknown batch kind";
  }
  return "";
}

AcceptReply Replica::HandleAccept(const AcceptMsg& m) {
  AcceptReply r;
  r.from = opts_.id;
  r.stream = m.stream;
  r.slot_index = m.slot.index;
  if (std::string err = Validate(m); !err.empty()) {
    r.error = err;
    return r;
  }
  if (!member_.voting.load(std::memory_order_acquire)) {
    r.error = "catching up: not voting yet";
    r.catching_up = true;
    return r;
  }
  AcceptReply a = acceptor_.Accept(m);
  r.ok = a.ok;
  r.promised_epoch = a.promised_epoch;
  r.need_from = a.need_from;
  r.first_slot = a.first_slot;
  const uint32_t t = m.stream;
  if (r.ok) {
    if (m.decided) LearnRecord(m.decided);
    LearnLeader(m.epoch, m.from, m.leader_client_address);
    replayer_.OnAccepted(m);
    uint64_t replayed = replayer_.replayed_next(t);
    if (m.compact_below > r.first_slot + opts_.compact_every && replayed > r.first_slot) {
      if (DecidedPtr d = Latest()) acceptor_.Compact(t, std::min(m.compact_below, replayed), d->record);
      r.first_slot = acceptor_.first_slot(t);
    }
    // The leader compacted slots this member has not replayed and cannot
    // send them again at its ballot (a copy of an older ballot here may not
    // be the chosen value): it catches up by state transfer.
    Slot head;
    bool have = acceptor_.Get(t, replayed, &head) && head.ballot == m.epoch;
    if (m.log_start > replayed && !have && !member_.needs_transfer.exchange(true)) {
      // It keeps voting (it forgot nothing), but says it catches up: it is
      // no candidate and serves no reads until the transfer is done.
      Role follower = Role::kFollower;
      member_.role.compare_exchange_strong(follower, Role::kCatchingUp);
      log::Printf(log::Level::kInfo, "replication",
                  "rolis-repl %u: behind the leader's log on stream %u (at %lu, log starts at %lu): "
                  "state transfer", opts_.id, t, static_cast<unsigned long>(replayed),
                  static_cast<unsigned long>(m.log_start));
      transfer_.Wake();
    }
  }
  r.replayed_next = replayer_.replayed_next(t);
  return r;
}

void Replica::LearnLeader(uint64_t epoch, uint32_t leader, const std::string& addr) {
  if (!member_.FollowLeader(epoch, leader, addr)) return;
  if (leader == opts_.id) return;
  // Another member leads this member's pending epoch or a newer one. The
  // same epoch counts: ballots are unique per proposer, so another leader
  // of this member's pending epoch means its candidacy can never open, and
  // it must not stay a candidate (that member would refuse to serve as a
  // follower).
  const bool abandon = failover_.DropCandidacyUpTo(epoch);
  // Another member leads a newer epoch: a stale leader steps down (its
  // acceptor promised the newer epoch, so it could not commit anyway).
  if (leader_.LeadsBelow(epoch)) leader_.StepDown(epoch, "another member leads a newer epoch");
  if (abandon) member_.LeaveCandidateRole();
}

void Replica::LearnRecord(const DecidedPtr& d) {
  if (!d || !control_.Learn(d)) return;
  OnNewRecord(d);
}

void Replica::OnNewRecord(const DecidedPtr& d) {
  member_.Know(member_.ConfigOf(d));  // members of a new configuration can be called
  const bool dirty_now = !leader_.DeposedCommitsSurvive(d);
  if (dirty_now) member_.dirty.store(true);
  if (member_.dirty.load()) {
    transfer_.Request();
  } else if (member_.role.load() == Role::kCatchingUp && member_.voting.load() && !member_.needs_transfer.load()) {
    member_.role.store(Role::kFollower);
  }
  if (d->leader_id != opts_.id) LearnLeader(d->record.epoch, d->leader_id, "");
}


// Whether the log holds or ever held a slot (compacted ones included).
static bool HoldsAnySlot(const Acceptor& a) {
  for (uint32_t t = 0; t < a.streams(); t++) {
    if (a.next_slot(t) > 0) return true;
  }
  return false;
}

PromiseReply Replica::HandlePromise(const PromiseMsg& m) {
  PromiseReply r;
  if (!member_.voting.load(std::memory_order_acquire)) {
    // No vote while probing or catching up; say whether it holds anything
    // (members of a new cluster probe each other at start).
    r.from = opts_.id;
    r.amnesic = true;
    r.promised_epoch = acceptor_.promised();
    r.virgin = !HoldsAnySlot(acceptor_) && !control_.HasAccepted();
    r.error = "catching up: not voting yet";
    return r;
  }
  if (!m.peek) {
    DecidedPtr d = Latest();
    if (!member_.InConfig(d)) {
      // Not a voting member of the configuration in force (a new member not
      // yet added, or one removed): it promises nothing, and is not counted.
      r.from = opts_.id;
      r.amnesic = true;
      r.promised_epoch = acceptor_.promised();
      r.decided = d;
      r.error = "not a member of configuration " + std::to_string(d ? d->config : 0) + " " +
                MembersString(member_.ConfigOf(d));
      return r;
    }
  }
  r = acceptor_.Promise(m);
  r.from = opts_.id;
  r.decided = Latest();
  ControlAcceptor::Vote vote = control_.Current();
  r.ctl_instance = vote.instance;
  r.ctl_promised = vote.promised;
  r.ctl_accepted_ballot = vote.accepted_ballot;
  r.ctl_accepted = vote.accepted;
  // Nothing was ever decided or accepted here (promises of a first
  // election in progress may exist: see "Members that lose their memory").
  // Read from the log itself, not from the slots sent: a peek with
  // from_slot may carry none of them.
  r.virgin = !HoldsAnySlot(acceptor_) && !control_.HasAccepted();
  if (m.peek) return r;
  if (r.ok && m.from != opts_.id) {
    // A candidate of a newer epoch: this member's own leadership (if any)
    // is over, its acceptor will refuse its accepts.
    if (leader_.LeadsBelow(m.epoch)) leader_.StepDown(m.epoch, "promised a candidate of a newer epoch");
    // A candidate is running: the built-in election gives it a timeout to
    // finish before running its own (two candidates split the vote).
    member_.NoteLeaderContact();
    failover_.DropCandidacyBelow(m.epoch);
  }
  return r;
}

ControlReply Replica::HandleControl(const ControlMsg& m) {
  if (!member_.voting.load(std::memory_order_acquire)) {
    ControlReply r;
    r.from = opts_.id;
    r.error = "catching up: not voting yet";
    return r;
  }
  DecidedPtr before = Latest();
  if (opts_.decider == Decider::kOperator && IsNewEpochRecordVote(m)) {
    ControlReply r;
    r.from = opts_.id;
    r.latest = before;
    r.error = "the operator decides this cluster's epoch records (--decider=operator)";
    return r;
  }
  if (m.kind == ControlMsg::Kind::kPrepare || m.kind == ControlMsg::Kind::kAccept) {
    // Instance after record r: its acceptors are the members of r's
    // configuration.
    const DecidedPtr& base = m.prev ? m.prev : before;
    if (!member_.InConfig(base)) {
      ControlReply r;
      r.from = opts_.id;
      r.latest = before;
      r.error = "not a member of configuration " + std::to_string(base ? base->config : 0);
      return r;
    }
  }
  ControlReply r = control_.Handle(m, opts_.id, [this] { return acceptor_.promised(); });
  if (IsBetterDecided(r.latest, before)) OnNewRecord(r.latest);
  return r;
}

// ---------------------------------------------------------------------------
// One decider per cluster (docs/replication.md).

Status Replica::DecideEpoch(const Decided& record, uint64_t expected_previous, bool* decided, DecidedPtr* current) {
  *decided = false;
  if (opts_.decider == Decider::kOperator) {
    return Status::FailedPrecondition(
        "the operator decides this cluster's epoch records (--decider=operator): DecideEpoch on the control "
        "stream is refused; let the operator fail over (or run the cluster with --decider=control-stream)");
  }
  return control_stream_.DecideEpoch(record, expected_previous, decided, current);
}

Status Replica::OpenEpoch(const Decided& record, LogKey* watermark) {
  if (opts_.decider == Decider::kControlStream) {
    if (Status s = control_stream_.CheckDecided(record); !s.ok()) return s;
  }
  return failover_.OpenEpoch(record, watermark);
}

Status Replica::AnnounceLeader(const Decided& record, const std::string& leader_client_address) {
  if (opts_.decider == Decider::kControlStream) {
    // Only the newest record the control stream decided is learned. A
    // member that cannot check it (cut off from the others) learns nothing,
    // but if it leads an older epoch it stops: stepping down is always safe
    // (it would refuse that epoch's promise anyway), and a stale leader cut
    // off from the others hears of the new epoch no other way.
    if (Status s = control_stream_.CheckDecided(record); !s.ok()) {
      if (leader_.LeadsBelow(record.record.epoch)) leader_.StepDown(record.record.epoch, "a newer epoch was announced");
      return s;
    }
  }
  auto dec = std::make_shared<const Decided>(record);
  LearnRecord(dec);
  if (record.leader_id != opts_.id) {
    LearnLeader(record.record.epoch, record.leader_id, leader_client_address);
  } else {
    member_.AnnounceOwnAddress(record.record.epoch, leader_client_address);
  }
  return Status::OK();
}

// ---------------------------------------------------------------------------
// Status.

ReplicaStatus Replica::GetStatus() const {
  ReplicaStatus st;
  st.id = opts_.id;
  st.role = member_.role.load();
  st.promised_epoch = acceptor_.promised();
  st.decided = Latest();
  st.config = st.decided ? st.decided->config : 0;
  st.members = member_.ConfigOf(st.decided);
  st.dirty = member_.dirty.load();
  st.log_bytes = acceptor_.bytes();
  st.state_transfers = transfer_.transfers();
  st.leader_snapshots = snapshots_.leader_snapshots();
  st.checkpoint_snapshots = checkpoint_snapshots_.load();
  FillDurabilityStatus(&st);
  {
    const MemberState::Leader leader = member_.leader();
    st.epoch = leader.epoch;
    st.leader_id = leader.id;
    st.leader_address = leader.client_address;
  }
  st.streams.resize(opts_.streams);
  const bool leading = leader_.FillStatus(&st);
  if (!leading) replayer_.FillStatus(&st);
  for (uint32_t t = 0; t < opts_.streams; t++) {
    st.streams[t].first_slot = acceptor_.first_slot(t);
    st.streams[t].next_slot = acceptor_.next_slot(t);
  }
  return st;
}

}  // namespace rolis::replication
