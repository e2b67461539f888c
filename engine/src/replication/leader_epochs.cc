// LeaderStreams: opening and stepping down of an epoch this member leads,
// what a failover asks of the leader, and the configurations and peers a
// membership change makes it count and send to.
#include <algorithm>

#include "leader_streams.h"
#include "membership.h"
#include "replica_common.h"
#include "rolis/log.h"

namespace rolis::replication {

// ---------------------------------------------------------------------------
// Opening.

void LeaderStreams::BeginOpening(const Opening& o) {
  {
    std::lock_guard<std::mutex> g(mu_);
    epoch_ = o.record->record.epoch;
    record_ = o.record;
    counted_configs_ = {MemberIds(member_->ConfigOf(o.record))};
    learners_.clear();
    RefreshPeersLocked();
    watermark_ = {};
    auto now = SteadyClock::now();
    for (uint32_t t = 0; t < opts_.streams; t++) {
      LeaderStream& s = *streams_[t];
      s.log.clear();
      s.log_start = o.bases[t].first_slot;
      s.base_reach = {};
      s.walk_reach = o.bases[t].base_key;
      s.walk_barrier = o.bases[t].base_barrier;
      LogKey reach{};
      for (const Slot& sl : o.repropose[t]) {
        if (sl.value->kind != BatchKind::kNoop) reach = std::max(reach, sl.value->key());
        s.Append(sl.index, sl.value, reach);
      }
      s.next_index = o.repropose[t].back().index + 1;
      s.barrier_index = o.repropose[t].back().index;
      s.self_prefix = o.self_need[t];
      s.c_end = s.log_start;
      s.c_key = {};
      for (PeerState& ps : s.peers) {
        ps.acked = ps.prefix = ps.next_send = s.log_start;
        ps.rewind_point = UINT64_MAX;
        // Until it answers (or stays silent for live_window), a peer is taken
        // to have replayed nothing of this log: no compaction past it.
        ps.heard = true;
        ps.last_progress = now;
        ps.last_reply = now;
        ps.replayed_next = s.log_start;
      }
    }
    mode_ = Mode::kOpening;
    loop_kick_ = true;
  }
  loop_cv_.notify_all();
}

void LeaderStreams::OpenNow() {
  // Every re-proposal and barrier is on a majority: open for writes. No
  // worker is pushing (none was leading), so taking their mutexes only waits
  // for transactions in progress (refused at commit by the role check).
  // The engine's replication epoch changes with every worker held: a commit
  // that slipped past the role check of an earlier leadership finished with
  // the old epoch, so it never counts as this epoch's write of its worker
  // (the leader patches only against those: "Patches" in docs/replication.md).
  {
    HeldWorkers held(worker_mutexes_);
    if (db_) db_->SetReplicationEpoch(epoch_);
    for (uint32_t t = 0; t < opts_.streams; t++) {
      LeaderStream& s = *streams_[t];
      s.buf_used = 0;
      s.writer.Reset();
      s.count = 0;
      s.closed_ts = 0;
      s.started = s.last_close = s.c_end_moved = SteadyClock::now();
      s.epoch_max_ts.store(0, std::memory_order_relaxed);
      s.leading.store(epoch_, std::memory_order_release);
    }
  }
  mode_ = Mode::kOpen;
  // Heartbeat at the batch timeout for a moment: the followers learn at once
  // that a leader is open (the built-in election's timers stop).
  last_waited_on_ = SteadyClock::now();
  led_epoch_ = epoch_;
  member_->Lead(epoch_, opts_.client_address);
  covered_epoch_.store(epoch_, std::memory_order_release);
  covered_ts_.store(0, std::memory_order_release);
  open_.store(true, std::memory_order_release);
  member_->role.store(Role::kLeader, std::memory_order_release);
  open_cv_.notify_all();
}

Status LeaderStreams::AwaitOpenLocked(uint64_t e, LogKey* watermark, std::unique_lock<std::mutex>& lk) {
  open_cv_.wait_for(lk, opts_.open_timeout,
                    [&] { return mode_ == Mode::kOpen || epoch_ != e || member_->stopping.load(); });
  if (mode_ == Mode::kOpen && epoch_ == e) {
    *watermark = watermark_;
    return Status::OK();
  }
  if (epoch_ != e) return Status::Aborted("stepped down while opening: a newer epoch was promised");
  return Unavailable("the re-proposals of epoch " + std::to_string(e) +
                     " are not on a majority yet; this member opens as soon as they are");
}

Status LeaderStreams::AwaitOpen(uint64_t e, LogKey* watermark) {
  std::unique_lock<std::mutex> lk(mu_);
  return AwaitOpenLocked(e, watermark, lk);
}

bool LeaderStreams::AwaitReopen(const Decided& record, LogKey* watermark, Status* st) {
  std::unique_lock<std::mutex> lk(mu_);
  const uint64_t e = record.record.epoch;
  if (record.leader_id == opts_.id && mode_ != Mode::kIdle && epoch_ == e && record_ &&
      record_->record == record.record) {
    *st = AwaitOpenLocked(e, watermark, lk);
    return true;
  }
  return false;
}

bool LeaderStreams::IsOpen() const {
  std::lock_guard<std::mutex> g(mu_);
  return mode_ == Mode::kOpen;
}

bool LeaderStreams::LeadsBelow(uint64_t epoch) const {
  std::lock_guard<std::mutex> g(mu_);
  return mode_ != Mode::kIdle && epoch_ < epoch;
}

// ---------------------------------------------------------------------------
// Stepping down.

void LeaderStreams::WalkReachBelow(const LeaderStream& s, uint64_t from, LogKey* reach, uint64_t* barrier) const {
  // The failover walk's reach over [log start, from): compacted entries,
  // then the ones still in the log.
  *reach = s.walk_reach;
  *barrier = s.walk_barrier;
  if (!record_) return;
  for (const auto& e : s.log) {
    if (e.index >= from) break;
    AdvanceReach(Slot{e.index, epoch_, e.value}, record_->record, reach, barrier);
  }
}

void LeaderStreams::StepDownLocked(uint64_t newer_epoch, const char* why) {
  if (mode_ == Mode::kIdle) return;
  bool was_open = mode_ == Mode::kOpen;
  uint64_t max_ts = 0;
  for (uint32_t t = 0; t < opts_.streams; t++) {
    LeaderStream& s = *streams_[t];
    s.leading.store(0, std::memory_order_release);
    max_ts = std::max(max_ts, s.epoch_max_ts.load(std::memory_order_relaxed));
    std::shared_ptr<Batch> b;
    while (s.ring.TryPop(&b)) {
    }
  }
  open_.store(false, std::memory_order_release);
  covered_ts_.store(0, std::memory_order_release);
  if (was_open) {
    deposed_epoch_ = epoch_;
    deposed_max_ts_ = max_ts;
  }
  // The store holds this epoch's majority-accepted prefix of every stream:
  // replay (as a follower) goes on from there.
  std::vector<Replayer::LeaderPrefix> prefix;
  if (was_open) {
    for (uint32_t t = 0; t < opts_.streams; t++) {
      const LeaderStream& s = *streams_[t];
      Replayer::LeaderPrefix& p = prefix.emplace_back();
      p.end = s.c_end;
      p.end_key = s.c_key;
      WalkReachBelow(s, s.c_end, &p.reach, &p.barrier);
    }
  }
  replayer_->ResumeAfterLeading(was_open ? &prefix : nullptr);
  for (auto& s : streams_) {
    s->log.clear();
    s->c_end = s->next_index = s->log_start = 0;
  }
  mode_ = Mode::kIdle;
  watermark_ = {};
  bool suspect = was_open && max_ts > 0;
  member_->role.store(suspect ? Role::kCatchingUp : member_->FollowerRole(), std::memory_order_release);
  log::Printf(log::Level::kInfo, "replication",
              "rolis-repl %u: stepped down from epoch %lu (%s; newer epoch %lu)", opts_.id,
              static_cast<unsigned long>(epoch_), why, static_cast<unsigned long>(newer_epoch));
  epoch_ = 0;
  open_cv_.notify_all();
  waiters_.FailAll("this member stopped leading before replication acknowledged the transaction");
}

void LeaderStreams::StepDown(uint64_t newer_epoch, const char* why) {
  {
    std::lock_guard<std::mutex> g(mu_);
    StepDownLocked(newer_epoch, why);
  }
  waiters_.Complete();
  on_stepped_down_();
}

std::pair<uint64_t, uint64_t> LeaderStreams::Deposed() const {
  std::lock_guard<std::mutex> g(mu_);
  return {deposed_epoch_, deposed_max_ts_};
}

bool LeaderStreams::DeposedCommitsSurvive(const DecidedPtr& d) {
  std::lock_guard<std::mutex> g(mu_);
  if (deposed_epoch_ == 0 || d->record.epoch <= deposed_epoch_) return true;
  auto it = d->record.cut.find(deposed_epoch_);
  bool clean = deposed_max_ts_ == 0 || (it != d->record.cut.end() && it->second >= deposed_max_ts_);
  log::Printf(clean ? log::Level::kInfo : log::Level::kWarn, "replication",
              "rolis-repl %u: record of epoch %lu: the commits of epoch %lu led here (up to ts %lu) %s",
              opts_.id, static_cast<unsigned long>(d->record.epoch), static_cast<unsigned long>(deposed_epoch_),
              static_cast<unsigned long>(deposed_max_ts_), clean ? "all survive" : "do not all survive: state transfer");
  deposed_epoch_ = 0;
  deposed_max_ts_ = 0;
  return clean;
}

bool LeaderStreams::Idle(uint64_t* epoch) const {
  std::lock_guard<std::mutex> g(mu_);
  if (mode_ != Mode::kIdle) return false;
  *epoch = std::max(led_epoch_, deposed_epoch_);
  return true;
}

void LeaderStreams::ForgetDeposed() {
  std::lock_guard<std::mutex> g(mu_);
  deposed_epoch_ = deposed_max_ts_ = 0;
  for (auto& s : streams_) s->orphan.store(false);
}

// ---------------------------------------------------------------------------
// Peers and configurations counted.

int LeaderStreams::PeerPos(uint32_t id) const {
  const auto& ps = streams_[0]->peers;
  for (size_t i = 0; i < ps.size(); i++) {
    if (ps[i].id == id) return static_cast<int>(i);
  }
  return -1;
}

void LeaderStreams::EnsurePeerLocked(uint32_t id) {
  if (id == opts_.id || PeerPos(id) >= 0) return;
  auto now = SteadyClock::now();
  for (auto& s : streams_) {
    PeerState ps;
    ps.id = id;
    // Like a peer at the opening of an epoch: taken to hold and to have
    // replayed nothing of this log until it answers.
    ps.acked = ps.prefix = ps.next_send = ps.replayed_next = s->log_start;
    ps.heard = true;
    ps.last_progress = ps.last_reply = now;
    s->peers.push_back(ps);
  }
}

void LeaderStreams::RefreshPeersLocked() {
  std::set<uint32_t> send(learners_.begin(), learners_.end());
  for (const auto& cfg : counted_configs_) send.insert(cfg.begin(), cfg.end());
  for (uint32_t id : send) EnsurePeerLocked(id);
  for (auto& s : streams_) {
    for (PeerState& ps : s->peers) ps.active = send.count(ps.id) > 0;
  }
}

std::vector<uint64_t> LeaderStreams::NextSlotsLocked() const {
  std::vector<uint64_t> m;
  for (auto& st : streams_) m.push_back(st->next_index);
  return m;
}

uint64_t LeaderStreams::open_epoch() const {
  std::lock_guard<std::mutex> g(mu_);
  return mode_ == Mode::kOpen ? epoch_ : 0;
}

std::vector<uint64_t> LeaderStreams::NextSlots() const {
  std::lock_guard<std::mutex> g(mu_);
  return NextSlotsLocked();
}

bool LeaderStreams::LogHeldSince(const std::vector<uint64_t>& mark) const {
  std::lock_guard<std::mutex> g(mu_);
  if (mode_ != Mode::kOpen) return false;
  for (uint32_t t = 0; t < opts_.streams; t++) {
    if (streams_[t]->c_end < mark[t]) return false;
  }
  return true;
}

Status LeaderStreams::CountOnly(uint64_t e, const std::vector<uint32_t>& config) {
  std::lock_guard<std::mutex> g(mu_);
  if (mode_ != Mode::kOpen || epoch_ != e) return Status::Aborted("stepped down during the membership change");
  counted_configs_ = {config};
  learners_.clear();
  RefreshPeersLocked();
  return Status::OK();
}

std::vector<uint32_t> LeaderStreams::JoiningConfig() const {
  std::lock_guard<std::mutex> g(mu_);
  return counted_configs_.size() > 1 ? counted_configs_[1] : std::vector<uint32_t>{};
}

std::vector<uint64_t> LeaderStreams::AddLearner(uint32_t id) {
  std::lock_guard<std::mutex> g(mu_);
  learners_.insert(id);
  RefreshPeersLocked();
  return NextSlotsLocked();
}

void LeaderStreams::DropLearner(uint32_t id) {
  std::lock_guard<std::mutex> g(mu_);
  learners_.erase(id);
  RefreshPeersLocked();
}

Status LeaderStreams::LearnerProgress(uint64_t e, uint32_t id, const std::vector<uint64_t>& want,
                                      std::string* behind) {
  std::lock_guard<std::mutex> g(mu_);
  behind->clear();
  if (mode_ != Mode::kOpen || epoch_ != e) {
    learners_.erase(id);
    return Status::Aborted("stepped down while member " + std::to_string(id) + " caught up");
  }
  int p = PeerPos(id);
  if (p < 0) *behind = "not sent to";
  for (uint32_t t = 0; t < opts_.streams && p >= 0; t++) {
    const PeerState& ps = streams_[t]->peers[p];
    if (ps.acked < want[t]) {
      *behind = "stream " + std::to_string(t) + " holds slots up to " + std::to_string(ps.acked) + " of " +
                std::to_string(want[t]);
      break;
    }
  }
  return Status::OK();
}

std::vector<uint64_t> LeaderStreams::CountJoint(const std::vector<uint32_t>& from, const std::vector<uint32_t>& to) {
  std::lock_guard<std::mutex> g(mu_);
  counted_configs_ = {from, to};
  RefreshPeersLocked();
  return NextSlotsLocked();
}

uint64_t LeaderStreams::CarryRecord(uint64_t e, const DecidedPtr& chosen, const std::vector<uint32_t>& from,
                                    const std::vector<uint32_t>& to) {
  std::lock_guard<std::mutex> g(mu_);
  if (mode_ != Mode::kOpen || epoch_ != e) return 0;
  record_ = chosen;  // accepts carry the record: followers learn the configuration
  counted_configs_ = {from, to};
  RefreshPeersLocked();
  return streams_[0]->next_index + 1;
}

bool LeaderStreams::PeerHolds(uint32_t id, uint64_t slot) const {
  std::lock_guard<std::mutex> g(mu_);
  int p = PeerPos(id);
  return p < 0 || streams_[0]->peers[p].acked >= slot;
}

}  // namespace rolis::replication
