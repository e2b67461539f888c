// LeaderStreams: the commit path (the workers' side of each stream), the
// watermark waiters, and the holds on the workers that a drain and a leader
// snapshot take.
#include <algorithm>
#include <thread>

#include "leader_streams.h"

namespace rolis::replication {

HeldWorkers::HeldWorkers(const std::vector<std::mutex*>& mutexes) {
  // Several streams may share a worker's mutex: each is locked once, in order.
  for (std::mutex* mu : mutexes) {
    if (mu && std::find(held_.begin(), held_.end(), mu) == held_.end()) {
      mu->lock();
      held_.push_back(mu);
    }
  }
}

void HeldWorkers::Release() {
  for (std::mutex* mu : held_) mu->unlock();
  held_.clear();
}

LeaderStream& LeaderStreams::StreamOf(WorkerId worker) {
  uint32_t t = worker < stream_of_worker_.size() ? stream_of_worker_[worker].load(std::memory_order_relaxed)
                                                  : worker % opts_.streams;
  return *streams_[t];
}

void LeaderStreams::OnCommit(WorkerId worker, uint64_t ts, const CommittedWrites& writes) {
  LeaderStream& s = StreamOf(worker);
  uint64_t e = s.leading.load(std::memory_order_acquire);
  if (e == 0) {
    // Committed while this member is not open (it stopped leading after the
    // transaction passed the role check): never replicated, and the store
    // now holds it. Nothing acknowledges it; the member needs a transfer.
    s.orphan.store(true, std::memory_order_relaxed);
    member_->dirty.store(true, std::memory_order_release);
    return;
  }
  if (ts > s.epoch_max_ts.load(std::memory_order_relaxed)) s.epoch_max_ts.store(ts, std::memory_order_relaxed);
  if (s.count == 0) {
    s.started = SteadyClock::now();
    // A resting loop ticks slowly: wake it, so this batch closes in time.
    if (resting_.load(std::memory_order_relaxed)) {
      WakeLoop();
    }
  }
  s.writer.Append(&s.buf, &s.buf_used, writes.encoded());
  s.count++;
  s.buf_last_ts = ts;
  // The loop closes a timed-out batch only when the worker's mutex is free;
  // a worker that never idles must close its own, or a large --batch-size
  // would hold every commit until the batch fills.
  if (s.count >= opts_.batch_size ||
      (s.count % kTimeoutCheckEvery == 0 && SteadyClock::now() - s.started >= opts_.batch_timeout)) {
    CloseBatch(s, e, true);
  }
}

uint64_t LeaderStreams::Floor() const {
  uint64_t f = clock_.floor();
  uint64_t b = engine_base_upper_.load(std::memory_order_relaxed);
  if (b != UINT64_MAX) {
    uint64_t now = MonotonicNanos();
    if (now > b) f = std::max(f, (now - b) << 8);
  }
  return f;
}

void LeaderStreams::ObserveTs(uint64_t ts) {
  // The engine's ticks now are at least ts >> 8, less one (a ts may exceed
  // the clock by one tick after a dependency): its base is at most this.
  uint64_t cand = MonotonicNanos() - (ts >> 8) + 1;
  uint64_t cur = engine_base_upper_.load(std::memory_order_relaxed);
  while (cand < cur && !engine_base_upper_.compare_exchange_weak(cur, cand, std::memory_order_relaxed)) {
  }
}

void LeaderStreams::CloseBatch(LeaderStream& s, uint64_t epoch, bool wait) {
  std::shared_ptr<Batch> b = s.buffers->NewBatch();
  b->kind = BatchKind::kTxns;
  b->epoch = epoch;
  b->last_ts = s.buf_last_ts;
  b->txn_count = s.count;
  const size_t cap = s.buf.capacity();
  s.writer.Finish(&s.buf, s.buf_used);
  s.buf.resize(s.buf_used);  // shrinks: no fill, no copy
  b->payload = std::move(s.buf);  // checksummed by the loop, off the worker's path
  s.buf = s.buffers->Take(cap);
  s.buf_used = 0;
  s.count = 0;
  s.closed_ts = b->last_ts;
  s.last_close = SteadyClock::now();
  ObserveTs(b->last_ts);
  std::shared_ptr<Batch> p = std::move(b);
  // Flow control: at most max_inflight batches wait in the ring; the worker
  // waits for room (it holds its worker, so its next transaction waits too).
  if (!s.ring.TryPush(std::move(p))) {
    const auto waited_from = SteadyClock::now();
    auto count_wait = [&] {
      flow_wait_nanos_.fetch_add(
          std::chrono::duration_cast<std::chrono::nanoseconds>(SteadyClock::now() - waited_from).count(),
          std::memory_order_relaxed);
    };
    do {
      if (!wait || s.leading.load(std::memory_order_acquire) != epoch || member_->stopping.load()) {
        // Stopped leading: these commits will never be acknowledged.
        s.orphan.store(true, std::memory_order_relaxed);
        count_wait();
        return;
      }
      WakeLoop();
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    } while (!s.ring.TryPush(std::move(p)));
    count_wait();
  }
  // A loop that ticks fast (some commit waits for G) takes the batch at its
  // next tick; waking it for every batch cost the worker a futex wake each
  // (~5% of a replicated YCSB++ worker). Wake it if it rests or batches pile up.
  if (resting_.load(std::memory_order_relaxed) || s.ring.Size() >= kWakeBacklog) {
    WakeLoop();
  }
}

void LeaderStreams::MaybeFlush(uint32_t t, LeaderStream& s, SteadyClock::time_point now, bool waited_on) {
  std::mutex* mu = t < worker_mutexes_.size() ? worker_mutexes_[t] : nullptr;
  if (mu == nullptr || !mu->try_lock()) return;  // busy: its own commits close batches
  uint64_t e = s.leading.load(std::memory_order_acquire);
  // Heartbeats at the batch timeout only while G is waited for (a commit
  // above it, or a read); a resting cluster sends one per idle_heartbeat.
  auto heartbeat = waited_on ? std::chrono::duration_cast<SteadyClock::duration>(opts_.batch_timeout)
                             : std::chrono::duration_cast<SteadyClock::duration>(opts_.idle_heartbeat);
  if (e != 0 && !s.ring.Full()) {
    if (s.count > 0) {
      if (now - s.started >= opts_.batch_timeout) CloseBatch(s, e, false);
    } else if (now - s.last_close >= heartbeat) {
      // Idle: a heartbeat, so G moves at light load.
      s.last_close = now;
      PushHeartbeat(s, e);
    }
  }
  mu->unlock();
}

void LeaderStreams::PushHeartbeat(LeaderStream& s, uint64_t epoch) {
  // An empty batch says "nothing of mine at or below this ts". With the
  // worker's mutex held no commit is half done, and every later ts is at
  // least the clock's floor.
  uint64_t f = Floor();
  uint64_t hb = std::max(s.closed_ts, f > 0 ? f - 1 : 0);
  if (hb <= s.closed_ts) return;
  auto b = std::make_shared<Batch>();
  b->kind = BatchKind::kTxns;
  b->epoch = epoch;
  b->last_ts = hb;
  s.closed_ts = hb;
  s.ring.TryPush(std::move(b));
}

// ---------------------------------------------------------------------------
// Watermark waiters.

bool LeaderStreams::WatermarkCovers(uint64_t ts) const {
  if (open_.load(std::memory_order_acquire)) {
    if (covered_ts_.load(std::memory_order_acquire) >= ts) return true;
    // Above every ts this member's clock has given: a version of an older
    // epoch (another member's clock), which the new leader's state holds
    // only at or below G'.
    return ts > clock_.ceiling();
  }
  // A follower's store holds only what its leader's G covered (and, after
  // it led an epoch, only commits that the next record kept): its reads
  // cannot be undone. No write commits on a follower; one that raced with
  // stepping down leaves the member catching up, not a follower.
  return member_->role.load(std::memory_order_acquire) == Role::kFollower && member_->voting.load() &&
         !member_->dirty.load() && !member_->needs_transfer.load();
}

bool LeaderStreams::AwaitWatermark(uint64_t commit_ts, WatermarkWaiter* w) {
  if (WatermarkCovers(commit_ts)) return true;
  waiters_.Add(commit_ts, w);
  // A loop that ticks fast already completes waiters at every tick.
  if (resting_.load(std::memory_order_relaxed)) {
    WakeLoop();
  }
  return false;
}

// ---------------------------------------------------------------------------
// Holds on the workers.

bool LeaderStreams::Drain(std::chrono::milliseconds timeout) {
  // Stop taking writes (the role check refuses them), let transactions in
  // progress finish, close every buffer, and wait until G covers every
  // commit of this epoch: then nothing of it can be lost by the failover.
  member_->role.store(Role::kCandidate, std::memory_order_release);
  for (uint32_t t = 0; t < opts_.streams; t++) {
    std::mutex* mu = t < worker_mutexes_.size() ? worker_mutexes_[t] : nullptr;
    if (!mu) continue;
    std::lock_guard<std::mutex> g(*mu);
    LeaderStream& s = *streams_[t];
    uint64_t e = s.leading.load();
    if (e != 0 && s.count > 0) CloseBatch(s, e, true);
  }
  uint64_t max_ts = 0;
  for (auto& s : streams_) max_ts = std::max(max_ts, s->epoch_max_ts.load());
  auto deadline = SteadyClock::now() + timeout;
  while (SteadyClock::now() < deadline) {
    if (!open_.load()) return false;
    if (covered_ts_.load() >= max_ts) return true;
    wake_.store(true);
    loop_cv_.notify_one();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return false;
}

std::string LeaderStreams::StalledWithoutMajority() const {
  std::lock_guard<std::mutex> g(mu_);
  const auto now = SteadyClock::now();
  for (uint32_t t = 0; t < opts_.streams; t++) {
    const LeaderStream& s = *streams_[t];
    // Its window of slots not yet on a majority is full, and that majority
    // has not moved for live_window.
    if (s.ring.Full() && s.next_index - s.c_end >= opts_.max_inflight && now - s.c_end_moved > opts_.live_window) {
      return "stream " + std::to_string(t) + "'s writes wait for a majority to accept them, and none has for " +
             std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(now - s.c_end_moved).count()) +
             " ms: it needs a majority up";
    }
  }
  return "";
}

std::string LeaderStreams::HoldForSnapshot(SnapshotReply* r, std::unique_ptr<HeldWorkers>* held) {
  // Writes pause while it is fixed: every worker is held, its batch closed,
  // and heartbeats sent until G covers every commit of the epoch. The store
  // then holds exactly the slots below each stream's majority-accepted end,
  // every one of them chosen, which is what a caught-up follower's holds.
  const uint64_t E = streams_[0]->leading.load(std::memory_order_acquire);
  if (E == 0 || !open_.load()) return "not an open leader";
  // A worker whose batches fill the ring waits, holding its mutex, until a
  // majority accepts them: holding it would wait as long, and the member
  // asking may be one that majority needs (it catches up by state
  // transfer, another member is down).
  if (std::string why = StalledWithoutMajority(); !why.empty()) return "the leader's snapshot: " + why;
  *held = std::make_unique<HeldWorkers>(worker_mutexes_);
  auto fail = [&](const std::string& why) {
    held->reset();
    return "the leader's snapshot: " + why;
  };
  uint64_t max_ts = 0;
  for (auto& sp : streams_) {
    LeaderStream& s = *sp;
    if (s.leading.load(std::memory_order_acquire) != E) return fail("it stopped leading");
    if (s.orphan.load()) return fail("it holds commits that were never replicated");
    if (s.count > 0) CloseBatch(s, E, true);
    max_ts = std::max(max_ts, s.epoch_max_ts.load());
  }
  const auto deadline = SteadyClock::now() + std::chrono::seconds(2);
  while (covered_epoch_.load() != E || covered_ts_.load() < max_ts) {
    if (SteadyClock::now() > deadline) return fail("its last commits are not on a majority after 2 s");
    if (!open_.load()) return fail("it stopped leading");
    // The workers are held, so the loop cannot send their heartbeats.
    for (auto& sp : streams_) {
      if (!sp->ring.Full()) PushHeartbeat(*sp, E);
    }
    WakeLoop();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  // Not a plain lock: a member that opens an epoch takes the workers'
  // mutexes under mu_ (OpenNow), and this thread holds them.
  std::unique_lock<std::mutex> lk(mu_, std::defer_lock);
  while (!lk.try_lock()) {
    if (SteadyClock::now() > deadline) return fail("its leader state stayed busy");
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  if (mode_ != Mode::kOpen || epoch_ != E) return fail("it stopped leading");
  r->at = watermark_;
  r->leader_epoch = E;
  r->decided = record_;
  auto hold = replayer_->Hold();
  replayer_->QuiesceLocked();  // it last replayed as a follower
  for (uint32_t t = 0; t < opts_.streams; t++) {
    const LeaderStream& s = *streams_[t];
    LogKey reach;
    uint64_t barrier;
    WalkReachBelow(s, s.c_end, &reach, &barrier);
    r->next_slot.push_back(s.c_end);
    r->skip.push_back(0);
    r->stream_key.push_back(std::max(reach, replayer_->StreamReachLocked(t)));
    r->stream_barrier.push_back(std::max(barrier, replayer_->StreamBarrierLocked(t)));
  }
  return "";
}

}  // namespace rolis::replication
