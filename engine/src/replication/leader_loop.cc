// LeaderStreams: set-up, the leader loop (closed batches into the log,
// Accepts out, replies in, G and compaction), and the leader's status.
#include <algorithm>

#include "leader_streams.h"
#include "membership.h"
#include "rolis/thread_name.h"

namespace rolis::replication {

LeaderStreams::LeaderStreams(const ReplicaOptions& opts, TsClock clock, MemberState* member, Acceptor* acceptor,
                             Transport* transport, Replayer* replayer, std::function<void()> on_stepped_down)
    : opts_(opts),
      clock_(std::move(clock)),
      member_(member),
      acceptor_(acceptor),
      transport_(transport),
      replayer_(replayer),
      on_stepped_down_(std::move(on_stepped_down)) {
  for (size_t i = 0; i < stream_of_worker_.size(); i++) stream_of_worker_[i].store(i % opts_.streams);
  const std::vector<uint32_t> peers = member_->peers();
  for (uint32_t t = 0; t < opts_.streams; t++) {
    auto ls = std::make_unique<LeaderStream>(std::max<uint32_t>(opts_.max_inflight, 2));
    ls->buffers = BatchBuffers::Make(2 * opts_.compact_every, size_t{32} << 20);
    for (uint32_t p : peers) {
      PeerState ps;
      ps.id = p;
      ls->peers.push_back(ps);
    }
    streams_.push_back(std::move(ls));
  }
}

LeaderStreams::~LeaderStreams() {
  Wake();
  Join();
}

void LeaderStreams::Attach(Database* db, std::vector<std::mutex*> worker_mutexes) {
  db_ = db;
  worker_mutexes_ = std::move(worker_mutexes);
  worker_mutexes_.resize(opts_.streams, nullptr);
  // A stream without a worker (more streams than workers) commits nothing;
  // a mutex of its own lets the loop send its heartbeats, so G moves.
  for (auto& mu : worker_mutexes_) {
    if (mu == nullptr) mu = idle_stream_mu_.emplace_back(std::make_unique<std::mutex>()).get();
  }
}

void LeaderStreams::RegisterStream(WorkerId worker, uint32_t stream) {
  if (worker < stream_of_worker_.size() && stream < opts_.streams) stream_of_worker_[worker].store(stream);
}

void LeaderStreams::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void LeaderStreams::Wake() {
  {
    std::lock_guard<std::mutex> g(mu_);
    loop_kick_ = true;
  }
  loop_cv_.notify_all();
  open_cv_.notify_all();
}

void LeaderStreams::Join() {
  if (thread_.joinable()) thread_.join();
}

void LeaderStreams::Shutdown() {
  for (auto& s : streams_) s->leading.store(0);
  waiters_.FailAll("shutting down");
  waiters_.Complete();
}

void LeaderStreams::OnAcceptReply(uint32_t peer, const AcceptReply& r) {
  {
    std::lock_guard<std::mutex> g(inbox_mu_);
    replies_.push_back({peer, r});
  }
  // A resting loop takes replies at its next tick: nothing waits for G
  // (a waiter wakes the loop itself, which then ticks fast).
  if (!resting_.load(std::memory_order_relaxed)) WakeLoop();
}

void LeaderStreams::OnLinkReset(uint32_t peer, uint32_t stream) {
  {
    std::lock_guard<std::mutex> g(inbox_mu_);
    resets_.push_back({peer, stream});
  }
  WakeLoop();
}

void LeaderStreams::Loop() {
  NameThisThread("rolis-lead");
  std::unique_lock<std::mutex> lk(mu_);
  while (!member_->stopping.load()) {
    // Fast ticks only while batches may need closing soon: a commit or a
    // read that waits for G wakes the loop (AwaitWatermark), as do replies
    // while it ticks fast (OnAcceptReply).
    const bool rest = mode_ == Mode::kIdle || (mode_ == Mode::kOpen && !waited_on_);
    if (resting_.load(std::memory_order_relaxed) != rest) resting_.store(rest, std::memory_order_relaxed);
    // Not leading, the loop has nothing to do until a kick (leading begins
    // with one); resting, it only times heartbeats and retransmissions.
    const auto rest_tick = std::clamp<std::chrono::microseconds>(opts_.idle_heartbeat / 4, std::chrono::milliseconds(1),
                                                                  kMaxRestTick);
    auto tick = mode_ == Mode::kIdle ? std::chrono::microseconds(opts_.idle_heartbeat)
                : rest               ? rest_tick
                                     : std::max(std::chrono::microseconds(100),
                                                std::min(opts_.batch_timeout / 2, std::chrono::microseconds(500)));
    loop_cv_.wait_for(lk, tick,
                      [&] { return loop_kick_ || wake_.load(std::memory_order_acquire) || member_->stopping.load(); });
    loop_kick_ = false;
    wake_.store(false, std::memory_order_relaxed);
    if (member_->stopping.load()) break;
    bool was_leading = mode_ != Mode::kIdle;
    Tick(SteadyClock::now());
    bool stepped_down = was_leading && mode_ == Mode::kIdle;
    lk.unlock();
    waiters_.Complete();
    if (stepped_down) on_stepped_down_();
    lk.lock();
  }
}

bool LeaderStreams::WaitedOnLocked() {
  uint64_t covered = covered_ts_.load(std::memory_order_acquire);
  for (const auto& s : streams_) {
    if (s->epoch_max_ts.load(std::memory_order_relaxed) > covered) return true;
  }
  return !waiters_.empty();
}

void LeaderStreams::Tick(SteadyClock::time_point now) {
  std::vector<std::pair<uint32_t, AcceptReply>> replies;
  std::vector<std::pair<uint32_t, uint32_t>> resets;
  {
    std::lock_guard<std::mutex> g(inbox_mu_);
    replies.swap(replies_);
    resets.swap(resets_);
  }
  if (mode_ == Mode::kIdle) return;
  for (auto& [peer, r] : replies) {
    HandleReply(peer, r, now);
    if (mode_ == Mode::kIdle) return;
  }
  for (auto [peer, t] : resets) {
    int p = PeerPos(peer);
    if (p < 0 || t >= opts_.streams) continue;
    PeerState& ps = streams_[t]->peers[p];
    ps.next_send = ps.prefix;  // what was in flight may be lost
  }
  // A few more heartbeats at the batch timeout after the wait ends, so that
  // followers learn the G that covered the last commit (and replay it).
  if (mode_ == Mode::kOpen && WaitedOnLocked()) last_waited_on_ = now;
  waited_on_ = mode_ == Mode::kOpen && now - last_waited_on_ < 3 * opts_.batch_timeout;
  for (uint32_t t = 0; t < opts_.streams; t++) {
    LeaderStream& s = *streams_[t];
    PullClosedBatches(t, s);
    if (mode_ == Mode::kIdle) return;
    if (mode_ == Mode::kOpen) {
      MaybeFlush(t, s, now, waited_on_);
      PullClosedBatches(t, s);
      if (mode_ == Mode::kIdle) return;
    }
    for (size_t p = 0; p < s.peers.size(); p++) {
      if (s.peers[p].active) SendWindow(t, s, p, now);
    }
  }
  AdvanceWatermark();
  if (mode_ == Mode::kOpen) Compact(now);
}

void LeaderStreams::PullClosedBatches(uint32_t t, LeaderStream& s) {
  std::shared_ptr<Batch> b;
  while (s.next_index - s.c_end < opts_.max_inflight && s.ring.TryPop(&b)) {
    b->crc = Crc32c(b->payload);
    AppendToLog(t, s, std::move(b));
    if (mode_ == Mode::kIdle) return;
  }
}

void LeaderStreams::AppendToLog(uint32_t t, LeaderStream& s, BatchPtr b) {
  if (b->epoch != epoch_) return;  // closed under an epoch this member no longer leads
  Slot slot{s.next_index, epoch_, b};
  uint64_t need = 0;
  if (!acceptor_->AcceptLocal(t, slot, epoch_, s.log_start, &need)) {
    OwnVoteRefusedLocked();
    return;
  }
  s.next_index++;
  s.self_prefix = need;
  LogKey reach = s.log.empty() ? s.base_reach : s.log.back().reach;
  if (b->kind != BatchKind::kNoop) reach = std::max(reach, b->key());
  s.Append(slot.index, std::move(b), reach);
}

void LeaderStreams::SendWindow(uint32_t t, LeaderStream& s, size_t p, SteadyClock::time_point now) {
  PeerState& ps = s.peers[p];
  if (ps.next_send > ps.prefix && now - ps.last_progress > opts_.retransmit) {
    ps.next_send = ps.prefix;  // nothing acknowledged for a while: resend
    ps.last_progress = now;
  }
  ps.next_send = std::max(ps.next_send, s.log_start);
  uint64_t compact_below = s.log_start;
  while (ps.next_send < s.next_index && ps.next_send < std::max(ps.prefix, s.log_start) + opts_.peer_window) {
    const LeaderStream::Entry& e = s.log[ps.next_send - s.log_start];
    AcceptMsg m;
    m.from = opts_.id;
    m.epoch = epoch_;
    m.stream = t;
    m.slot = Slot{e.index, epoch_, e.value};
    m.commit_watermark = mode_ == Mode::kOpen ? watermark_ : LogKey{};
    m.log_start = s.log_start;
    m.compact_below = compact_below;
    m.decided = record_;
    m.leader_client_address = opts_.client_address;
    transport_->SendAccept(ps.id, m);
    ps.next_send++;
    if (ps.last_progress == SteadyClock::time_point{}) ps.last_progress = now;
  }
}

void LeaderStreams::HandleReply(uint32_t peer, const AcceptReply& r, SteadyClock::time_point now) {
  int p = PeerPos(peer);
  if (!r.ok) {
    if (r.promised_epoch > epoch_) StepDownLocked(r.promised_epoch, "a member promised a newer epoch");
    if (r.catching_up && p >= 0 && r.stream < opts_.streams) streams_[r.stream]->peers[p].catching_up_at = now;
    return;
  }
  if (p < 0 || r.stream >= opts_.streams) return;
  LeaderStream& s = *streams_[r.stream];
  PeerState& ps = s.peers[p];
  ps.heard = true;
  ps.last_reply = now;
  ps.replayed_next = r.replayed_next;
  // With durability the peer counts (need_from) only what is on its disk,
  // and holds (held_from) what it accepted in memory: resending starts from
  // what it holds (docs/replication.md, "Durability").
  const uint64_t held = HeldFrom(r);
  if (r.need_from > ps.acked) ps.acked = r.need_from;
  if (held > ps.prefix) {
    ps.prefix = held;
    ps.last_progress = now;
  }
  // The peer lacks a slot below one it just accepted (a drop, or it lost
  // its state): send again from there, at most once per retransmit period
  // for the same point.
  if (held < ps.next_send && r.slot_index >= held &&
      (held != ps.rewind_point || now - ps.last_rewind > opts_.retransmit)) {
    ps.next_send = std::max(held, s.log_start);
    ps.prefix = std::min(ps.prefix, std::max(held, s.log_start));
    ps.rewind_point = held;
    ps.last_rewind = now;
  }
}

void LeaderStreams::AdvanceWatermark() {
  RefreshOwnDurablePrefixLocked();
  bool all_barriers = true;
  LogKey g{UINT64_MAX, UINT64_MAX};
  for (uint32_t t = 0; t < opts_.streams; t++) {
    LeaderStream& s = *streams_[t];
    // A majority of every configuration counted (membership.h).
    uint64_t held = MajorityPrefix(counted_configs_, [&](uint32_t id) -> uint64_t {
      if (id == opts_.id) return s.self_prefix;
      for (const PeerState& ps : s.peers) {
        if (ps.id == id) return ps.acked;
      }
      return 0;
    });
    uint64_t c_end = std::min(held, s.next_index);
    if (c_end > s.c_end) {
      s.c_end = c_end;
      s.c_end_moved = SteadyClock::now();
      s.c_key = s.c_end > s.log_start ? s.log[s.c_end - 1 - s.log_start].reach : s.base_reach;
    }
    if (s.c_end <= s.barrier_index) all_barriers = false;
    g = std::min(g, s.c_key);
  }
  if (mode_ == Mode::kOpening) {
    if (!all_barriers) return;
    OpenNow();
  }
  if (mode_ != Mode::kOpen) return;
  if (g > watermark_) {
    watermark_ = g;
    if (watermark_.epoch == epoch_) covered_ts_.store(watermark_.ts, std::memory_order_release);
  }
}

uint64_t LeaderStreams::CompactBelow(const LeaderStream& s, SteadyClock::time_point now) const {
  uint64_t below = s.c_end;
  // Keep a little history whatever the peers say, so that a member that
  // just finished a state transfer (and is not yet heard from) finds the
  // slots after its snapshot.
  below = std::min(below, s.NewestWithin(opts_.min_retained, opts_.min_retained_bytes));
  for (const PeerState& ps : s.peers) {
    // A member in a state transfer will need the slots after its snapshot,
    // which a caught-up follower took a moment ago: keep as much as the
    // upper bounds allow until it has caught up (or gone silent).
    if (ps.active && now - ps.catching_up_at <= opts_.live_window) {
      below = std::min(below, s.NewestWithin(opts_.max_log_slots, opts_.max_log_bytes));
    }
    if (!ps.active || !ps.heard || now - ps.last_reply > opts_.live_window) continue;
    if (s.next_index > opts_.max_log_slots && ps.replayed_next + opts_.max_log_slots < s.next_index) continue;
    if (s.BytesFrom(ps.replayed_next) > opts_.max_log_bytes) continue;
    below = std::min(below, ps.replayed_next);
  }
  return below;
}

void LeaderStreams::Compact(SteadyClock::time_point now) {
  // A slot may go once every live member has replayed it (the leader's own
  // store holds every slot of its majority-accepted prefix). A member silent
  // for live_window, or more than max_log_slots behind, no longer holds it
  // back: it will catch up by state transfer.
  if (now - last_compact_ < std::chrono::milliseconds(20)) return;
  last_compact_ = now;
  for (uint32_t t = 0; t < opts_.streams; t++) {
    LeaderStream& s = *streams_[t];
    const uint64_t below = CompactBelow(s, now);
    if (below < s.log_start + opts_.compact_every) continue;
    while (!s.log.empty() && s.log.front().index < below) {
      s.base_reach = s.log.front().reach;
      if (record_) {
        AdvanceReach(Slot{s.log.front().index, epoch_, s.log.front().value}, record_->record, &s.walk_reach,
                     &s.walk_barrier);
      }
      s.log.pop_front();
    }
    s.log_start = below;
    if (record_) acceptor_->Compact(t, below, record_->record);
  }
}

bool LeaderStreams::FillStatus(ReplicaStatus* st) const {
  std::lock_guard<std::mutex> g(mu_);
  if (mode_ != Mode::kOpen) return false;
  st->watermark = watermark_;
  st->replayed = watermark_;
  if (watermark_.epoch == st->epoch && watermark_.ts != 0) {
    // G's ts is (ticks << 8) | worker of this member's own clock, whose base
    // is the monotonic time less the ceiling's ticks.
    const uint64_t base = MonotonicNanos() - (clock_.ceiling() >> 8);
    st->watermark_mono_ns = static_cast<int64_t>(base + (watermark_.ts >> 8));
  }
  for (uint32_t t = 0; t < opts_.streams; t++) {
    const LeaderStream& s = *streams_[t];
    st->streams[t].committed_slot = s.c_end;
    st->streams[t].committed_key = s.c_key;
    st->streams[t].replayed_key = s.c_key;
    st->streams[t].through_watermark = true;
  }
  return true;
}

}  // namespace rolis::replication
