#include "state_transfer.h"

#include <algorithm>
#include <map>
#include <set>

#include "adopted_slots.h"
#include "membership.h"
#include "replica_common.h"
#include "rolis/log.h"
#include "rolis/thread_name.h"

namespace rolis::replication {

void StateTransfer::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void StateTransfer::Join() {
  if (thread_.joinable()) thread_.join();
}

void StateTransfer::Request() {
  member_->dirty.store(true);
  member_->needs_transfer.store(true);
  if (member_->role.load() != Role::kLeader) member_->role.store(Role::kCatchingUp);
  cv_.notify_all();
}

void StateTransfer::Loop() {
  NameThisThread("rolis-catch-up");
  int failures = 0;
  // A member that cannot catch up says why, once it has tried for a while
  // (at start the others may just not be listening yet) and then now and then.
  const auto first_report = std::chrono::seconds(2), report_every = std::chrono::seconds(10);
  SteadyClock::time_point failing_since{}, reported{};
  while (!member_->stopping.load()) {
    bool work = !member_->voting.load() || member_->needs_transfer.load();
    if (!work && hooks_.idle) hooks_.idle();
    if (work) {
      Status s = !member_->voting.load() ? Probe() : Transfer();
      const auto now = SteadyClock::now();
      if (s.ok()) {
        failures = 0;
        failing_since = {};
        continue;
      }
      failures = std::min(failures + 1, 10);
      if (failing_since == SteadyClock::time_point{}) failing_since = reported = now;
      if (now - failing_since >= first_report && (reported == failing_since || now - reported >= report_every)) {
        reported = now;
        log::Printf(log::Level::kWarn, "replication",
                    "rolis-repl %u: not voting yet, catching up for %lld s: %s (it counts toward a majority only "
                    "once it has; `rolisctl status` shows which members are up)",
                    member_->self(),
                    static_cast<long long>(std::chrono::duration_cast<std::chrono::seconds>(now - failing_since).count()),
                    s.message().c_str());
      }
    }
    std::unique_lock<std::mutex> lk(catch_mu_);
    // A probe retries sooner: at a new cluster's start the others come up
    // within moments, and a member that has not decided by the first
    // election must then catch up by a state transfer. A transfer (which
    // may have had a follower scan its whole store) retries more slowly.
    const int step_ms = member_->voting.load() || member_->needs_transfer.load() ? 50 : 20;
    auto wait = work ? std::chrono::milliseconds(step_ms * (1 + failures)) : std::chrono::milliseconds(200);
    cv_.wait_for(lk, wait, [&] { return member_->stopping.load(); });
  }
}

Status StateTransfer::Probe() {
  // Did this member restart empty (the others know more than it does), or
  // is the whole cluster new? It decides only when it knows: a member that
  // forgot its votes must not vote before it catches up.
  PromiseMsg pm;
  pm.from = member_->self();
  pm.peek = true;
  pm.from_slot = NoSlots(opts_.streams);  // it reads only `virgin` and `amnesic`
  const size_t need_virgin = std::min<size_t>(member_->peers().size(), majority());
  auto replies = calls_->PromiseAll(pm, false, [need_virgin](const std::vector<std::pair<uint32_t, PromiseReply>>& rs) {
    size_t v = 0;
    for (const auto& [id, r] : rs) {
      if (r.virgin) v++;
      else if (!r.amnesic) return true;
    }
    return v >= need_virgin;
  });
  size_t virgin = 0;
  bool others_know = false;
  for (auto& [id, r] : replies) {
    if (r.virgin) {
      virgin++;
    } else if (!r.amnesic) {
      others_know = true;
    }
  }
  if (others_know) {
    // This member restarted empty, or started after the cluster's first
    // election: either way it may not vote before a state transfer.
    member_->needs_transfer.store(true);
    Status s = Transfer();
    if (!s.ok() && hooks_.cannot_catch_up) hooks_.cannot_catch_up(1 + virgin);
    if (!s.ok()) return Status(s.code(), "the others hold state this member lacks, and its state transfer failed: " + s.message());
    return s;
  }
  if (virgin >= std::min<size_t>(member_->peers().size(), majority())) {
    member_->voting.store(true);
    member_->role.store(Role::kFollower);
    log::Printf(log::Level::kInfo, "replication",
                "rolis-repl %u: new cluster (%zu other members have no state): voting", member_->self(), virgin);
    return Status::OK();
  }
  return Unavailable(std::to_string(replies.size()) + " of the " +
                     std::to_string(member_->peers().size()) + " other members answered its probe (" + std::to_string(virgin) +
                     " without state; " + std::to_string(need_virgin) + " needed to call the cluster new)");
}

Status StateTransfer::ReadVotes(const DecidedPtr& record, std::vector<uint64_t> from_slot, Votes* v) {
  v->cfg = member_->ConfigOf(record);
  member_->Know(v->cfg);
  v->self = member_->voting.load() && Contains(v->cfg, member_->self());
  std::set<uint32_t> voters;
  for (const MemberAddr& m : v->cfg) {
    if (m.id != member_->self() || v->self) voters.insert(m.id);
  }
  v->need = std::min(MajorityOf(v->cfg.size()), voters.size());
  PromiseMsg pm;
  pm.from = member_->self();
  pm.peek = true;
  pm.from_slot = std::move(from_slot);
  const size_t need = v->need;
  v->replies = calls_->PromiseAll(pm, v->self, [need, &voters](const std::vector<std::pair<uint32_t, PromiseReply>>& rs) {
    size_t ok = 0;
    for (const auto& [id, r] : rs) ok += r.ok && !r.amnesic && voters.count(id);
    return ok >= need;
  });
  v->oks.clear();
  for (auto& [id, r] : v->replies) {
    if (r.ok && !r.amnesic && voters.count(id)) v->oks.push_back(&r);
  }
  if (v->oks.size() >= v->need) return Status::OK();
  return Unavailable("state transfer: it adopts the votes of " + std::to_string(v->need) + " members of " +
                     MembersString(v->cfg) + (v->self ? " (itself included)" : " other than itself") + ", " +
                     std::to_string(v->oks.size()) + " answered");
}

Status StateTransfer::FetchSnapshot(uint64_t my_epoch, std::unique_ptr<ReceivedSnapshot>* snap) {
  std::string why;
  std::vector<uint32_t> sources = member_->peers();
  const uint32_t leader_id = member_->leader().id;
  std::stable_partition(sources.begin(), sources.end(), [leader_id](uint32_t p) { return p != leader_id; });
  const uint32_t streams = opts_.streams;
  for (uint32_t p : sources) {
    SnapshotMsg sm;
    sm.from = member_->self();
    // The position is checked as it arrives: a snapshot that cannot be
    // used stops before its writes are sent.
    auto r = std::make_unique<ReceivedSnapshot>([my_epoch, streams](const SnapshotReply& h) {
      // A store that led an epoch holds commits of it: the snapshot must be
      // of a later epoch so that its writes win over them.
      if (h.at.epoch <= my_epoch) {
        return Status::FailedPrecondition("snapshot of epoch " + std::to_string(h.at.epoch) + " not past " +
                                          std::to_string(my_epoch));
      }
      if (h.next_slot.size() != streams || h.skip.size() != streams || h.stream_key.size() != streams ||
          h.stream_barrier.size() != streams) {
        return Status::InvalidArgument("snapshot of another number of streams");
      }
      return Status::OK();
    });
    Status s = transport_->Snapshot(p, sm, r.get(), opts_.rpc_timeout * 5);
    if (s.ok() && !r->complete()) s = Unavailable("snapshot cut short");
    if (!s.ok()) {
      why += " member " + std::to_string(p) + ": " + s.message() + ";";
      continue;
    }
    *snap = std::move(r);
    return Status::OK();
  }
  if (!why.empty() && why.back() == ';') why.pop_back();
  return Unavailable("no snapshot:" + why);
}

Status StateTransfer::Transfer() {
  if (!db_) return Status::FailedPrecondition("no engine attached");
  DecidedPtr known = control_->latest();
  uint64_t my_epoch = 0;
  if (!leader_->Idle(&my_epoch)) return Status::FailedPrecondition("leading");
  // The votes of a majority of the configuration in force (membership.h):
  // this member adopts them, so whatever it voted for before it lost its
  // memory is still counted. A member that did not lose it (it kept voting:
  // a deposed leader whose commits did not survive, or a follower left
  // behind the leader's log) counts its own.
  //
  // 0. Only if those votes can be had is a snapshot worth asking for (the
  //    leader's pauses its writes).
  //    Only whether a majority answers is used: no slots are asked for.
  {
    Votes first;
    if (Status s = ReadVotes(known, NoSlots(opts_.streams), &first); !s.ok()) return s;
  }
  // 1. A snapshot from a caught-up follower; from the leader only when none
  //    can give one.
  std::unique_ptr<ReceivedSnapshot> received;
  if (Status s = FetchSnapshot(my_epoch, &received); !s.ok()) return s;
  const SnapshotReply& snap = received->header();
  // 2. The votes again, after the snapshot, so that they cover every slot
  //    after it; only those slots are asked for (AdoptedSlots says why the
  //    ones below are not needed).
  Votes votes;
  if (Status s = ReadVotes(IsBetterDecided(snap.decided, known) ? snap.decided : known, snap.next_slot, &votes);
      !s.ok()) {
    return s;
  }
  const std::vector<const PromiseReply*>& oks = votes.oks;
  uint64_t max_promised = 0;
  DecidedPtr newest = snap.decided;
  for (const PromiseReply* r : oks) {
    max_promised = std::max(max_promised, r->promised_epoch);
    if (IsBetterDecided(r->decided, newest)) newest = r->decided;
  }
  // 3. The store becomes the snapshot, with the votes adopted.
  if (Status s = InstallSnapshot(*received, AdoptedSlots(opts_.streams, snap, oks), max_promised, newest, oks); !s.ok()) return s;
  if (hooks_.transferred) hooks_.transferred(*received);
  leader_->ForgetDeposed();
  member_->dirty.store(false);
  member_->needs_transfer.store(false);
  member_->voting.store(true);
  member_->role.store(Role::kFollower);
  transfers_.fetch_add(1);
  learn_leader_(newest);
  log::Printf(log::Level::kInfo, "replication",
              "rolis-repl %u: state transfer done: %zu keys at %s, votes of %zu members adopted",
              member_->self(), received->writes().size(), KeyStr(snap.at).c_str(), oks.size());
  return Status::OK();
}

Status StateTransfer::InstallSnapshot(const ReceivedSnapshot& received, const std::vector<StreamSlots>& adopted,
                                      uint64_t max_promised, const DecidedPtr& newest,
                                      const std::vector<const PromiseReply*>& oks) {
  // Every snapshot write, and a delete of every local key it lacks,
  // installed with the snapshot's key (above anything a deposed epoch left
  // here, below everything replayed next), with replay held still.
  const SnapshotReply& snap = received.header();
  {
    auto snapshot_lock = snapshots_->Lock();
    auto hold = replayer_->Hold();
    replayer_->SetPausedLocked(true);
    std::vector<std::pair<TableId, std::string>> stale;
    replayer_->QuiesceLocked();
    if (!snapshots_->KeysNotInLocked(received.writes(), &stale)) {
      replayer_->SetPausedLocked(false);
      return Unavailable("the engine's snapshot epoch does not advance (a worker stays inside a transaction)");
    }
    snapshot_lock.unlock();
    for (const auto& [table, key] : stale) {
      WriteRecord w{table, key, {}, true};
      (void)db_->ApplyReplicated(replayer_->worker_locked(), w, snap.at.epoch, snap.at.ts);
    }
    received.writes().ForEach([&](const PackedWrites::Record& r) {
      WriteRecord w{r.table, r.key, r.value, false};
      (void)db_->ApplyReplicated(replayer_->worker_locked(), w, snap.at.epoch, snap.at.ts);
      return true;
    });
    replayer_->QuiesceLocked();
    replayer_->RestartAfterSnapshotLocked(snap);
    acceptor_->Reset(adopted, max_promised);
    if (newest && control_->Learn(newest)) member_->Know(member_->ConfigOf(newest));
    // The control stream's votes of the instance in progress, likewise.
    ControlAcceptor::Vote vote;
    vote.instance = newest ? newest->record.epoch : 0;
    for (const PromiseReply* r : oks) {
      if (r->ctl_instance != vote.instance) continue;
      vote.promised = std::max(vote.promised, r->ctl_promised);
      if (r->ctl_accepted && r->ctl_accepted_ballot > vote.accepted_ballot) {
        vote.accepted_ballot = r->ctl_accepted_ballot;
        vote.accepted = r->ctl_accepted;
      }
    }
    control_->Adopt(vote);
    replayer_->ResumeLocked();  // the log after the snapshot may be here already
  }
  replayer_->Notify();
  return Status::OK();
}

}  // namespace rolis::replication
