#include "replayer.h"

#include <algorithm>

#include "replica_options.h"
#include "replica_status.h"
#include "rolis/log.h"
#include "rolis/thread_name.h"

namespace rolis::replication {

Replayer::Replayer(uint32_t streams, MemberState* member, Acceptor* acceptor, std::function<void()> on_diverged)
    : stream_count_(streams), member_(member), acceptor_(acceptor), on_diverged_(std::move(on_diverged)) {
  replayed_next_.reset(new std::atomic<uint64_t>[streams]);
  for (uint32_t t = 0; t < streams; t++) {
    replayed_next_[t].store(0);
    streams_.push_back(std::make_unique<ReplayStream>());
  }
}

Replayer::~Replayer() {
  Wake();
  Join();
}

void Replayer::Attach(Database* db) {
  db_ = db;
  worker_ = db_->RegisterWorker();
  if (worker_) applier_ = std::make_unique<ReplayApplier>(db_, worker_.get(), member_->self());
}

void Replayer::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void Replayer::Wake() {
  {
    std::lock_guard<std::mutex> g(mu_);
    kick_ = true;
  }
  cv_.notify_all();
}

void Replayer::Join() {
  if (thread_.joinable()) thread_.join();
}

void Replayer::ReleaseWorker() {
  std::lock_guard<std::mutex> g(mu_);
  applier_.reset();
  worker_.reset();
}

void Replayer::OnAccepted(const AcceptMsg& m) {
  {
    std::lock_guard<std::mutex> g(mu_);
    if (m.epoch > epoch_ && !paused_) {
      // A new leader: it re-proposed what was chosen at ballot m.epoch;
      // heads not yet started may be values that were never chosen.
      epoch_ = m.epoch;
      watermark_ = {};
      record_ = m.decided;
      DropUnstartedHeadsLocked();
      offset_now_ = offset_before_ = kNoOffset;  // another leader's clock
    }
    if (m.epoch == epoch_ && m.commit_watermark > watermark_) watermark_ = m.commit_watermark;
    if (m.epoch == epoch_ && m.commit_watermark.epoch == m.epoch) SampleLeaderClockLocked(m.commit_watermark);
    kick_ = true;
    // An open leader (its G is set once it opened) is alive.
    if (m.commit_watermark.epoch == m.epoch) member_->NoteLeaderContact();
  }
  cv_.notify_one();
}

void Replayer::SampleLeaderClockLocked(LogKey g) {
  constexpr uint64_t kWindowNanos = 30'000'000'000;  // 30 s: drift of 100 ppm is 3 ms
  const uint64_t now = MonotonicNanos();
  if (now - offset_window_start_ >= kWindowNanos) {
    offset_before_ = offset_now_;
    offset_now_ = kNoOffset;
    offset_window_start_ = now;
  }
  offset_now_ = std::min(offset_now_, static_cast<int64_t>(now) - static_cast<int64_t>(g.ts >> 8));
}

void Replayer::DropUnstartedHeadsLocked() {
  for (auto& rs : streams_) {
    if (rs->batch && rs->pos == 0 && rs->skip == 0) {
      rs->batch.reset();
      rs->txns.clear();
    }
  }
}

void Replayer::ResumeAfterLeading(const std::vector<LeaderPrefix>* prefix) {
  std::lock_guard<std::mutex> g(mu_);
  for (uint32_t t = 0; prefix && t < stream_count_; t++) {
    const LeaderPrefix& p = (*prefix)[t];
    ReplayStream& rs = *streams_[t];
    if (p.end <= rs.cursor) continue;
    rs.reach = std::max(rs.reach, p.reach);
    rs.barrier = std::max(rs.barrier, p.barrier);
    rs.cursor = p.end;
    rs.DropHead();
    rs.skip = 0;
    rs.consumed = std::max(rs.consumed, p.end_key);
    replayed_next_[t].store(p.end, std::memory_order_release);
  }
  paused_ = false;
  epoch_ = 0;
  watermark_ = {};
}

void Replayer::ReplayForOpening(const DecidedPtr& record, const std::vector<Slot>& barriers) {
  std::lock_guard<std::mutex> g(mu_);
  const uint64_t e = record->record.epoch;
  paused_ = false;
  epoch_ = e;
  watermark_ = record->watermark;
  record_ = record;
  DropUnstartedHeadsLocked();
  if (db_ && worker_) {
    while (ReplayOnce()) {
    }
    worker_->Quiesce();
  }
  for (uint32_t t = 0; t < stream_count_; t++) {
    ReplayStream& rs = *streams_[t];
    const Slot& barrier = barriers[t];
    // Replay stopped at the first entry above G' (or at the barrier): what
    // is left before the barrier is above G', void under the new record.
    AdvanceReach(barrier, record->record, &rs.reach, &rs.barrier);
    rs.cursor = barrier.index + 1;
    rs.DropHead();
    rs.skip = 0;
    rs.consumed = std::max(rs.consumed, LogKey{e, 0});
    replayed_next_[t].store(rs.cursor);
  }
  paused_ = true;  // a leader's store is its own
}

void Replayer::RestartAfterSnapshotLocked(const SnapshotReply& snap) {
  for (uint32_t t = 0; t < stream_count_; t++) {
    ReplayStream& rs = *streams_[t];
    rs.cursor = snap.next_slot[t];
    rs.skip = snap.skip[t];
    rs.DropHead();
    rs.consumed = snap.at;
    rs.reach = snap.stream_key[t];
    rs.barrier = snap.stream_barrier[t];
    replayed_next_[t].store(rs.cursor);
  }
  epoch_ = 0;
  watermark_ = {};
  record_ = nullptr;
}

void Replayer::SnapshotPositionLocked(SnapshotReply* r) const {
  r->at = ReplayedKeyLocked();
  r->leader_epoch = epoch_;
  for (const auto& rs : streams_) {
    r->next_slot.push_back(rs->cursor);
    r->skip.push_back(rs->batch ? rs->pos : rs->skip);
    r->stream_key.push_back(rs->reach);
    r->stream_barrier.push_back(rs->barrier);
  }
}

void Replayer::FillStatus(ReplicaStatus* st) const {
  std::lock_guard<std::mutex> g(mu_);
  st->watermark = watermark_;
  st->replayed = ReplayedKeyLocked();
  const int64_t offset = LeaderClockOffsetLocked();
  if (epoch_ != 0 && watermark_.epoch == epoch_ && offset != kNoOffset) {
    st->watermark_mono_ns = offset + static_cast<int64_t>(watermark_.ts >> 8);
  }
  for (uint32_t t = 0; t < stream_count_; t++) {
    const ReplayStream& rs = *streams_[t];
    st->streams[t].replayed_key = rs.consumed;
    st->streams[t].committed_slot = rs.cursor;
    // As in ReplayedKeyLocked: a stream whose next item is above G has
    // applied all of its own up to G.
    st->streams[t].through_watermark =
        epoch_ != 0 && (rs.consumed >= watermark_ || rs.beyond > watermark_ ||
                        (rs.batch && rs.pos < rs.txns.size() && LogKey{rs.batch->epoch, rs.txns.ts(rs.pos)} > watermark_));
  }
}

void Replayer::Loop() {
  NameThisThread("rolis-replay");
  std::unique_lock<std::mutex> lk(mu_);
  bool idle_quiesced = false;
  auto last_horizon = SteadyClock::now();
  while (!member_->stopping.load()) {
    cv_.wait_for(lk, kIdleWait, [&] { return kick_ || member_->stopping.load(); });
    kick_ = false;
    if (member_->stopping.load() || paused_ || !db_ || !worker_) continue;
    bool progress = ReplayOnce();
    if (progress) {
      idle_quiesced = false;
      kick_ = true;  // more may be ready: go on after letting others in
      lk.unlock();
      std::this_thread::yield();
      lk.lock();
    } else if (!idle_quiesced) {
      // The engine's snapshot (read-only transactions) and reclamation wait
      // for every worker that is inside an epoch.
      worker_->Quiesce();
      idle_quiesced = true;
    }
    if (SteadyClock::now() - last_horizon > std::chrono::milliseconds(50)) {
      LogKey r = ReplayedKeyLocked();
      if (r.epoch > 0) db_->SetReplayHorizon(r.epoch, r.ts);
      last_horizon = SteadyClock::now();
    }
  }
}

LogKey Replayer::ReplayedKeyLocked() const {
  if (epoch_ == 0) {
    LogKey k{UINT64_MAX, UINT64_MAX};
    for (const auto& rs : streams_) k = std::min(k, rs->consumed);
    return k.epoch == UINT64_MAX ? LogKey{} : k;
  }
  LogKey k = watermark_;
  for (const auto& rs : streams_) {
    // A stream whose next item is above G has applied all of its own up to G.
    if (rs->beyond > watermark_) continue;
    if (rs->batch && rs->pos < rs->txns.size() && LogKey{rs->batch->epoch, rs->txns.ts(rs->pos)} > watermark_) continue;
    k = std::min(k, rs->consumed);
  }
  return k;
}

void Replayer::Advance(uint32_t t, ReplayStream& rs) {
  rs.cursor++;
  replayed_next_[t].store(rs.cursor, std::memory_order_release);
}

bool Replayer::FillHead(uint32_t t, uint64_t E, LogKey G, const EpochRecord& rec) {
  ReplayStream& rs = *streams_[t];
  bool progress = false;
  rs.blocked = false;
  rs.beyond = {};
  for (;;) {
    if (rs.batch) {
      if (rs.pos < rs.txns.size()) return progress;
      AdvanceReach(Slot{rs.cursor, E, rs.batch}, rec, &rs.reach, &rs.barrier);
      rs.DropHead();
      Advance(t, rs);
      progress = true;
      continue;
    }
    Slot s;
    if (!acceptor_->Get(t, rs.cursor, &s) || s.ballot != E) {
      rs.blocked = true;
      return progress;
    }
    const Batch& b = *s.value;
    if (b.kind == BatchKind::kNoop) {
      AdvanceReach(s, rec, &rs.reach, &rs.barrier);
      Advance(t, rs);
      progress = true;
      continue;
    }
    LogKey key = b.key();
    if (b.kind == BatchKind::kBarrier || b.txn_count == 0) {
      if (key > G) {
        rs.beyond = key;
        return progress;
      }
      rs.consumed = std::max(rs.consumed, key);
      AdvanceReach(s, rec, &rs.reach, &rs.barrier);
      Advance(t, rs);
      progress = true;
      continue;
    }
    if (!DecodeBatch(b.payload, b.txn_count, b.last_ts, &rs.txns).ok()) {
      rs.blocked = true;  // validated on arrival; cannot happen
      return progress;
    }
    rs.batch = s.value;
    rs.pos = std::min(rs.skip, rs.txns.size());
    rs.skip = 0;
  }
}

int Replayer::NextToApply(LogKey G, LogKey* key) const {
  int best = -1;
  LogKey bk{};
  for (uint32_t t = 0; t < stream_count_; t++) {
    const ReplayStream& rs = *streams_[t];
    if (!rs.batch || rs.pos >= rs.txns.size()) continue;
    LogKey k{rs.batch->epoch, rs.txns.ts(rs.pos)};
    if (best < 0 || k < bk) {
      best = static_cast<int>(t);
      bk = k;
    }
  }
  if (best < 0 || bk > G) return -1;
  for (uint32_t t = 0; t < stream_count_; t++) {
    const ReplayStream& rs = *streams_[t];
    if (static_cast<int>(t) != best && rs.blocked && rs.consumed < bk) return -1;
  }
  *key = bk;
  return best;
}

bool Replayer::ReplayOnce() {
  const uint64_t E = epoch_;
  if (E == 0 || !record_) return false;
  const LogKey G = watermark_;
  const EpochRecord& rec = record_->record;
  bool progress = false;
  for (uint32_t t = 0; t < stream_count_; t++) progress |= FillHead(t, E, G, rec);
  // Merge by key: apply the smallest head while it is at or below G and no
  // blocked stream could still hold something smaller. The applied set stays
  // a prefix of the key order, so the store is a consistent state.
  for (int n = 0; n < kTxnsPerHold; n++) {
    LogKey bk{};
    const int best = NextToApply(G, &bk);
    if (best < 0) break;
    ReplayStream& rs = *streams_[best];
    // Queued in key order and applied in groups (replay_apply.h); all of
    // it is applied before this call returns, under mu_, so what the
    // cursors and `consumed` say is in the store when anyone reads them.
    if (IsValid(rec, bk)) applier_->Add(rs.txns.writes(rs.pos), rs.batch->epoch, bk.ts);
    rs.consumed = std::max(rs.consumed, bk);
    rs.pos++;
    progress = true;
    if (rs.pos >= rs.txns.size()) {
      applier_->Flush();  // FillHead drops the batch the queued writes point into
      FillHead(best, E, G, rec);
    }
  }
  applier_->Flush();
  if (applier_->TakeDiverged()) {
    // Its store no longer follows the log: it must not serve, vote for
    // itself or send snapshots until a state transfer replaces it.
    log::Printf(log::Level::kError, "replication",
                "rolis-repl %u: replay found the store diverged from the log: state transfer",
                member_->self());
    on_diverged_();
  }
  return progress;
}

}  // namespace rolis::replication
