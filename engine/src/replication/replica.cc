#include "rolis/thread_name.h"
#include "replica.h"

#include <time.h>

#include <algorithm>
#include <cstdio>
#include <future>
#include <random>
#include <set>

#include "batch_buffers.h"
#include "stream_copy.h"

namespace rolis::replication {

// ---------------------------------------------------------------------------
// Small helpers.

uint64_t MonotonicNanos() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

TsClock MonotonicTsClock(uint64_t before, uint64_t after) {
  TsClock c;
  // A worker's next ts is at least (engine ticks << 8) and engine ticks are
  // at least our ticks from the later base.
  c.floor = [after] {
    uint64_t now = MonotonicNanos();
    return now > after ? (now - after) << 8 : 0;
  };
  // Every ts assigned so far is below ((engine ticks + 1) << 8), and engine
  // ticks are at most our ticks from the earlier base (plus one: the engine
  // subtracts one from its base).
  c.ceiling = [before] { return ((MonotonicNanos() - before + 2) << 8) | 0xFF; };
  return c;
}

namespace {

// Locks every distinct mutex of `mus` (several streams may share a
// worker's), in order; returns them for unlocking.
std::vector<std::mutex*> LockEach(const std::vector<std::mutex*>& mus) {
  std::vector<std::mutex*> held;
  for (std::mutex* mu : mus) {
    if (mu && std::find(held.begin(), held.end(), mu) == held.end()) {
      mu->lock();
      held.push_back(mu);
    }
  }
  return held;
}

Status Unavailable(const std::string& why) { return Status(StatusCode::kInternal, "unavailable: " + why); }

bool IsBetterDecided(const DecidedPtr& a, const DecidedPtr& b) {  // a newer than b
  if (!a) return false;
  return !b || NewerRecord(*a, *b);
}

std::string KeyStr(LogKey k) { return std::to_string(k.epoch) + "." + std::to_string(k.ts); }

}  // namespace

// ---------------------------------------------------------------------------
// State.

struct Replica::PeerState {
  uint32_t id = 0;
  uint64_t acked = 0;      // has accepted every slot in [log_start, acked) of this epoch (monotone)
  uint64_t prefix = 0;     // what it last said it holds: resending starts here
  uint64_t next_send = 0;  // next slot to send
  uint64_t rewind_point = UINT64_MAX;
  SteadyClock::time_point last_reply{}, last_rewind{}, last_progress{};
  uint64_t replayed_next = 0;
  SteadyClock::time_point catching_up_at{};  // last said it catches up by state transfer
  bool heard = false;
  bool active = true;  // in a configuration the leader counts, or a learner: sent to
};

struct Replica::LStream {
  explicit LStream(size_t ring_capacity) : ring(ring_capacity) {}
  // Worker side: under the worker's mutex. buf holds the batch being
  // filled in its first buf_used bytes (a reused buffer is longer),
  // written through writer.
  std::string buf;
  size_t buf_used = 0;
  PastCacheWriter writer;
  uint32_t count = 0;
  uint64_t buf_last_ts = 0;
  uint64_t closed_ts = 0;  // key ts of the last batch closed in this epoch
  SteadyClock::time_point started{}, last_close{};
  std::atomic<uint64_t> leading{0};        // the epoch while open, else 0
  std::atomic<uint64_t> epoch_max_ts{0};   // largest ts committed in the epoch led last
  std::atomic<bool> orphan{false};         // committed while not open: never replicated
  // Closed batches, to the loop. Not const yet: the loop checksums them.
  SpscRing<std::shared_ptr<Batch>> ring;
  // Their buffers, back from freed batches (batch_buffers.h): enough for
  // two compactions' worth of slots, at most 32 MB.
  std::shared_ptr<BatchBuffers> buffers;
  // Loop side: under lmu_.
  struct Entry {
    uint64_t index;
    BatchPtr value;
    LogKey reach;  // largest key in the log up to and including this slot
    uint64_t start_bytes = 0;  // appended_bytes before this slot was appended
  };
  std::deque<Entry> log;
  uint64_t appended_bytes = 0;  // bytes of every slot ever appended to `log` (monotone)
  void Append(uint64_t index, BatchPtr value, LogKey reach) {
    const uint64_t start = appended_bytes;
    appended_bytes += value->bytes();
    log.push_back({index, std::move(value), reach, start});
  }
  // Bytes of the slots from `e` to the end of the log.
  uint64_t BytesFrom(const Entry& e) const { return appended_bytes - e.start_bytes; }
  uint64_t BytesFrom(uint64_t index) const {
    if (index < log_start) index = log_start;
    return index - log_start < log.size() ? BytesFrom(log[index - log_start]) : 0;
  }
  // The first slot of the newest run of slots holding at most `slots`
  // slots and `bytes` bytes.
  uint64_t NewestWithin(uint64_t slots, uint64_t bytes) const {
    uint64_t from = next_index > slots ? std::max(next_index - slots, log_start) : log_start;
    auto it = std::partition_point(log.begin() + static_cast<ptrdiff_t>(from - log_start), log.end(),
                                   [&](const Entry& e) { return BytesFrom(e) > bytes; });
    return it == log.end() ? next_index : it->index;
  }
  uint64_t log_start = 0, next_index = 0, barrier_index = 0;
  LogKey base_reach{};
  LogKey walk_reach{};       // the failover walk's reach over compacted log entries
  uint64_t walk_barrier = 0;
  uint64_t self_prefix = 0;
  uint64_t c_end = 0;
  LogKey c_key{};
  std::vector<PeerState> peers;
};

struct Replica::Pending {
  uint64_t epoch = 0;
  Decided proposed;
  std::vector<std::vector<Slot>> repropose;  // per stream, ballot = epoch, ends with a barrier
  std::vector<StreamBase> bases;
  uint64_t led_epoch = 0;     // this member's own epoch, if it led one (its commits are checked)
};

namespace {

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

}  // namespace

Replica::Replica(ReplicaOptions options, Transport* transport, TsClock clock)
    : opts_(WithMembers(std::move(options))),
      transport_(transport),
      clock_(std::move(clock)),
      member_(opts_.id, InitialMembers(opts_), transport),
      calls_(&member_, transport, this, opts_.rpc_timeout),
      acceptor_(opts_.streams),
      replayer_(opts_.streams, &member_, &acceptor_, [this] { StartStateTransfer(); }) {
  if (!clock_.floor) {
    uint64_t now = MonotonicNanos();
    clock_ = MonotonicTsClock(now, now);
  }
  for (size_t i = 0; i < stream_of_worker_.size(); i++) stream_of_worker_[i].store(i % opts_.streams);
  for (uint32_t t = 0; t < opts_.streams; t++) {
    auto ls = std::make_unique<LStream>(std::max<uint32_t>(opts_.max_inflight, 2));
    ls->buffers = BatchBuffers::Make(2 * opts_.compact_every, size_t{32} << 20);
    for (uint32_t p : member_.peers()) {
      PeerState ps;
      ps.id = p;
      ls->peers.push_back(ps);
    }
    lstreams_.push_back(std::move(ls));
  }
  if (opts_.probe_at_start && opts_.members.size() > 1) {
    member_.voting.store(false);
    member_.role.store(Role::kCatchingUp);
  }
  transport_->Bind(this);
}

Replica::~Replica() { Stop(); }

int Replica::PeerPos(uint32_t id) const {
  const auto& ps = lstreams_[0]->peers;
  for (size_t i = 0; i < ps.size(); i++) {
    if (ps[i].id == id) return static_cast<int>(i);
  }
  return -1;
}

// ---------------------------------------------------------------------------
// Membership.

void Replica::EnsurePeerLocked(uint32_t id) {
  if (id == opts_.id || PeerPos(id) >= 0) return;
  auto now = SteadyClock::now();
  for (auto& s : lstreams_) {
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

void Replica::RefreshPeersLocked() {
  std::set<uint32_t> send(learners_.begin(), learners_.end());
  for (const auto& cfg : lcfgs_) send.insert(cfg.begin(), cfg.end());
  for (uint32_t id : send) EnsurePeerLocked(id);
  for (auto& s : lstreams_) {
    for (PeerState& ps : s->peers) ps.active = send.count(ps.id) > 0;
  }
}

bool Replica::LogHeldSince(const std::vector<uint64_t>& mark) {
  std::lock_guard<std::mutex> g(lmu_);
  if (lmode_ != LMode::kOpen) return false;
  for (uint32_t t = 0; t < opts_.streams; t++) {
    if (lstreams_[t]->c_end < mark[t]) return false;
  }
  return true;
}

void Replica::Attach(Database* db, std::vector<std::mutex*> worker_mutexes) {
  db_ = db;
  worker_mu_ = std::move(worker_mutexes);
  worker_mu_.resize(opts_.streams, nullptr);
  // A stream without a worker (more streams than workers) commits nothing;
  // a mutex of its own lets the loop send its heartbeats, so G moves.
  for (auto& mu : worker_mu_) {
    if (mu == nullptr) mu = idle_stream_mu_.emplace_back(std::make_unique<std::mutex>()).get();
  }
  replayer_.Attach(db_);
  snapshot_worker_ = db_->RegisterWorker();
}

void Replica::RegisterStream(WorkerId worker, uint32_t stream) {
  if (worker < stream_of_worker_.size() && stream < opts_.streams) stream_of_worker_[worker].store(stream);
}

void Replica::Start() {
  if (started_) return;
  started_ = true;
  transport_->Start();
  leader_thread_ = std::thread([this] { LeaderLoop(); });
  replayer_.Start();
  catch_thread_ = std::thread([this] { CatchUpLoop(); });
}

void Replica::Stop() {
  if (member_.stopping.exchange(true)) return;
  transport_->Stop();
  {
    std::lock_guard<std::mutex> g(lmu_);
    loop_kick_ = true;
  }
  loop_cv_.notify_all();
  open_cv_.notify_all();
  replayer_.Wake();
  catch_cv_.notify_all();
  if (leader_thread_.joinable()) leader_thread_.join();
  replayer_.Join();
  if (catch_thread_.joinable()) catch_thread_.join();
  calls_.Drain();  // calls still running end by their deadline
  for (auto& s : lstreams_) s->leading.store(0);
  FailWaiters("shutting down");
  CompleteWaiters();
  replayer_.ReleaseWorker();
  std::lock_guard<std::mutex> g2(snap_mu_);
  snapshot_worker_.reset();
}

uint64_t Replica::epoch() const { return member_.leader().epoch; }

std::string Replica::leader_client_address() const { return member_.leader().client_address; }

// ---------------------------------------------------------------------------
// Leader: the commit path.

void Replica::OnCommit(WorkerId worker, uint64_t ts, const CommittedWrites& writes) {
  uint32_t t = worker < stream_of_worker_.size() ? stream_of_worker_[worker].load(std::memory_order_relaxed)
                                                  : worker % opts_.streams;
  LStream& s = *lstreams_[t];
  uint64_t e = s.leading.load(std::memory_order_acquire);
  if (e == 0) {
    // Committed while this member is not open (it stopped leading after the
    // transaction passed the role check): never replicated, and the store
    // now holds it. Nothing acknowledges it; the member needs a transfer.
    s.orphan.store(true, std::memory_order_relaxed);
    member_.dirty.store(true, std::memory_order_release);
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

uint64_t Replica::Floor() const {
  uint64_t f = clock_.floor();
  uint64_t b = base_upper_.load(std::memory_order_relaxed);
  if (b != UINT64_MAX) {
    uint64_t now = MonotonicNanos();
    if (now > b) f = std::max(f, (now - b) << 8);
  }
  return f;
}

void Replica::ObserveTs(uint64_t ts) {
  // The engine's ticks now are at least ts >> 8, less one (a ts may exceed
  // the clock by one tick after a dependency): its base is at most this.
  uint64_t cand = MonotonicNanos() - (ts >> 8) + 1;
  uint64_t cur = base_upper_.load(std::memory_order_relaxed);
  while (cand < cur && !base_upper_.compare_exchange_weak(cur, cand, std::memory_order_relaxed)) {
  }
}

void Replica::CloseBatch(LStream& s, uint64_t epoch, bool wait) {
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
      if (!wait || s.leading.load(std::memory_order_acquire) != epoch || member_.stopping.load()) {
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

bool Replica::WaitedOnLocked() {
  uint64_t covered = covered_ts_.load(std::memory_order_acquire);
  for (const auto& s : lstreams_) {
    if (s->epoch_max_ts.load(std::memory_order_relaxed) > covered) return true;
  }
  std::lock_guard<std::mutex> g(wmu_);
  return !waiters_.empty();
}

void Replica::MaybeFlush(uint32_t t, LStream& s, SteadyClock::time_point now, bool waited_on) {
  std::mutex* mu = t < worker_mu_.size() ? worker_mu_[t] : nullptr;
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

void Replica::PushHeartbeat(LStream& s, uint64_t epoch) {
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
// Leader: the loop.

void Replica::LeaderLoop() {
  NameThisThread("rolis-lead");
  std::unique_lock<std::mutex> lk(lmu_);
  while (!member_.stopping.load()) {
    // Fast ticks only while batches may need closing soon: a commit or a
    // read that waits for G wakes the loop (AwaitWatermark), as do replies
    // while it ticks fast (OnAcceptReply).
    const bool rest = lmode_ == LMode::kIdle || (lmode_ == LMode::kOpen && !waited_on_);
    if (resting_.load(std::memory_order_relaxed) != rest) resting_.store(rest, std::memory_order_relaxed);
    // Not leading, the loop has nothing to do until a kick (leading begins
    // with one); resting, it only times heartbeats and retransmissions.
    const auto rest_tick = std::clamp<std::chrono::microseconds>(opts_.idle_heartbeat / 4, std::chrono::milliseconds(1),
                                                                  kMaxRestTick);
    auto tick = lmode_ == LMode::kIdle ? std::chrono::microseconds(opts_.idle_heartbeat)
                : rest                 ? rest_tick
                                       : std::max(std::chrono::microseconds(100),
                                                  std::min(opts_.batch_timeout / 2, std::chrono::microseconds(500)));
    loop_cv_.wait_for(lk, tick, [&] { return loop_kick_ || kick_.load(std::memory_order_acquire) || member_.stopping.load(); });
    loop_kick_ = false;
    kick_.store(false, std::memory_order_relaxed);
    if (member_.stopping.load()) break;
    bool was_leading = lmode_ != LMode::kIdle;
    LeaderTick(SteadyClock::now());
    bool stepped_down = was_leading && lmode_ == LMode::kIdle;
    lk.unlock();
    CompleteWaiters();
    if (stepped_down) CheckDeposed();
    lk.lock();
  }
}

void Replica::LeaderTick(SteadyClock::time_point now) {
  std::vector<std::pair<uint32_t, AcceptReply>> replies;
  std::vector<std::pair<uint32_t, uint32_t>> resets;
  {
    std::lock_guard<std::mutex> g(inbox_mu_);
    replies.swap(inbox_);
    resets.swap(resets_);
  }
  if (lmode_ == LMode::kIdle) return;
  for (auto& [peer, r] : replies) {
    HandleReply(peer, r, now);
    if (lmode_ == LMode::kIdle) return;
  }
  for (auto [peer, t] : resets) {
    int p = PeerPos(peer);
    if (p < 0 || t >= opts_.streams) continue;
    PeerState& ps = lstreams_[t]->peers[p];
    ps.next_send = ps.prefix;  // what was in flight may be lost
  }
  // A few more heartbeats at the batch timeout after the wait ends, so that
  // followers learn the G that covered the last commit (and replay it).
  if (lmode_ == LMode::kOpen && WaitedOnLocked()) last_waited_on_ = now;
  waited_on_ = lmode_ == LMode::kOpen && now - last_waited_on_ < 3 * opts_.batch_timeout;
  for (uint32_t t = 0; t < opts_.streams; t++) {
    LStream& s = *lstreams_[t];
    auto pull = [&] {
      std::shared_ptr<Batch> b;
      while (s.next_index - s.c_end < opts_.max_inflight && s.ring.TryPop(&b)) {
        b->crc = Crc32c(b->payload);
        AppendToLog(t, s, std::move(b));
        if (lmode_ == LMode::kIdle) return;
      }
    };
    pull();
    if (lmode_ == LMode::kIdle) return;
    if (lmode_ == LMode::kOpen) {
      MaybeFlush(t, s, now, waited_on_);
      pull();
      if (lmode_ == LMode::kIdle) return;
    }
    for (size_t p = 0; p < s.peers.size(); p++) {
      if (s.peers[p].active) SendWindow(t, s, p, now);
    }
  }
  Recompute(now);
}

void Replica::AppendToLog(uint32_t t, LStream& s, BatchPtr b) {
  if (b->epoch != lepoch_) return;  // closed under an epoch this member no longer leads
  Slot slot{s.next_index, lepoch_, b};
  uint64_t need = 0;
  if (!acceptor_.AcceptLocal(t, slot, lepoch_, s.log_start, &need)) {
    OwnVoteRefusedLocked();
    return;
  }
  s.next_index++;
  s.self_prefix = need;
  LogKey reach = s.log.empty() ? s.base_reach : s.log.back().reach;
  if (b->kind != BatchKind::kNoop) reach = std::max(reach, b->key());
  s.Append(slot.index, std::move(b), reach);
}

void Replica::SendWindow(uint32_t t, LStream& s, size_t p, SteadyClock::time_point now) {
  PeerState& ps = s.peers[p];
  if (ps.next_send > ps.prefix && now - ps.last_progress > opts_.retransmit) {
    ps.next_send = ps.prefix;  // nothing acknowledged for a while: resend
    ps.last_progress = now;
  }
  ps.next_send = std::max(ps.next_send, s.log_start);
  uint64_t compact_below = s.log_start;
  while (ps.next_send < s.next_index && ps.next_send < std::max(ps.prefix, s.log_start) + opts_.peer_window) {
    const LStream::Entry& e = s.log[ps.next_send - s.log_start];
    AcceptMsg m;
    m.from = opts_.id;
    m.epoch = lepoch_;
    m.stream = t;
    m.slot = Slot{e.index, lepoch_, e.value};
    m.commit_watermark = lmode_ == LMode::kOpen ? g_ : LogKey{};
    m.log_start = s.log_start;
    m.compact_below = compact_below;
    m.decided = ldecided_;
    m.leader_client_address = opts_.client_address;
    transport_->SendAccept(ps.id, m);
    ps.next_send++;
    if (ps.last_progress == SteadyClock::time_point{}) ps.last_progress = now;
  }
}

void Replica::HandleReply(uint32_t peer, const AcceptReply& r, SteadyClock::time_point now) {
  int p = PeerPos(peer);
  if (!r.ok) {
    if (r.promised_epoch > lepoch_) StepDownLocked(r.promised_epoch, "a member promised a newer epoch");
    if (r.catching_up && p >= 0 && r.stream < opts_.streams) lstreams_[r.stream]->peers[p].catching_up_at = now;
    return;
  }
  if (p < 0 || r.stream >= opts_.streams) return;
  LStream& s = *lstreams_[r.stream];
  PeerState& ps = s.peers[p];
  ps.heard = true;
  ps.last_reply = now;
  ps.replayed_next = r.replayed_next;
  // With durability the peer counts (need_from) only what is on its disk,
  // and holds (held_from) what it accepted in memory: resending starts from
  // what it holds (docs/replication.md, "Durability").
  const uint64_t held = r.held_from ? std::max(r.held_from, r.need_from) : r.need_from;
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

// The leader's own vote counts once durable (docs/replication.md, "Durability";
// the journal's listener wakes the loop).
void Replica::RefreshOwnDurablePrefixLocked() {
  if (!durability_ || lmode_ == LMode::kIdle) return;
  for (uint32_t t = 0; t < opts_.streams; t++) {
    LStream& s = *lstreams_[t];
    s.self_prefix = std::max(s.self_prefix, acceptor_.DurableNeedFrom(t, lepoch_, s.log_start));
  }
}

void Replica::Recompute(SteadyClock::time_point now) {
  RefreshOwnDurablePrefixLocked();
  bool all_barriers = true;
  LogKey g{UINT64_MAX, UINT64_MAX};
  for (uint32_t t = 0; t < opts_.streams; t++) {
    LStream& s = *lstreams_[t];
    // A majority of every configuration counted (membership.h).
    uint64_t held = MajorityPrefix(lcfgs_, [&](uint32_t id) -> uint64_t {
      if (id == opts_.id) return s.self_prefix;
      for (const PeerState& ps : s.peers) {
        if (ps.id == id) return ps.acked;
      }
      return 0;
    });
    uint64_t c_end = std::min(held, s.next_index);
    if (c_end > s.c_end) {
      s.c_end = c_end;
      s.c_key = s.c_end > s.log_start ? s.log[s.c_end - 1 - s.log_start].reach : s.base_reach;
    }
    if (s.c_end <= s.barrier_index) all_barriers = false;
    g = std::min(g, s.c_key);
  }
  if (lmode_ == LMode::kOpening) {
    if (!all_barriers) return;
    OpenNow();
  }
  if (lmode_ != LMode::kOpen) return;
  if (g > g_) {
    g_ = g;
    if (g_.epoch == lepoch_) covered_ts_.store(g_.ts, std::memory_order_release);
  }

  // Compaction: a slot may go once every live member has replayed it (the
  // leader's own store holds every slot of its majority-accepted prefix). A
  // member silent for live_window, or more than max_log_slots behind, no
  // longer holds it back: it will catch up by state transfer.
  if (now - last_compact_ < std::chrono::milliseconds(20)) return;
  last_compact_ = now;
  for (uint32_t t = 0; t < opts_.streams; t++) {
    LStream& s = *lstreams_[t];
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
    if (below < s.log_start + opts_.compact_every) continue;
    while (!s.log.empty() && s.log.front().index < below) {
      s.base_reach = s.log.front().reach;
      if (ldecided_) {
        AdvanceReach(Slot{s.log.front().index, lepoch_, s.log.front().value}, ldecided_->record, &s.walk_reach,
                     &s.walk_barrier);
      }
      s.log.pop_front();
    }
    s.log_start = below;
    if (ldecided_) acceptor_.Compact(t, below, ldecided_->record);
  }
}

void Replica::OpenNow() {
  // Every re-proposal and barrier is on a majority: open for writes. No
  // worker is pushing (none was leading), so taking their mutexes only waits
  // for transactions in progress (refused at commit by the role check).
  // The engine's replication epoch changes with every worker held: a commit
  // that slipped past the role check of an earlier leadership finished with
  // the old epoch, so it never counts as this epoch's write of its worker
  // (the leader patches only against those: "Patches" in docs/replication.md).
  std::vector<std::mutex*> held = LockEach(worker_mu_);
  if (db_) db_->SetReplicationEpoch(lepoch_);
  for (uint32_t t = 0; t < opts_.streams; t++) {
    LStream& s = *lstreams_[t];
    s.buf_used = 0;
    s.writer.Reset();
    s.count = 0;
    s.closed_ts = 0;
    s.started = s.last_close = SteadyClock::now();
    s.epoch_max_ts.store(0, std::memory_order_relaxed);
    s.leading.store(lepoch_, std::memory_order_release);
  }
  for (std::mutex* mu : held) mu->unlock();
  lmode_ = LMode::kOpen;
  // Heartbeat at the batch timeout for a moment: the followers learn at once
  // that a leader is open (the built-in election's timers stop).
  last_waited_on_ = SteadyClock::now();
  led_epoch_ = lepoch_;
  member_.Lead(lepoch_, opts_.client_address);
  covered_epoch_.store(lepoch_, std::memory_order_release);
  covered_ts_.store(0, std::memory_order_release);
  open_.store(true, std::memory_order_release);
  member_.role.store(Role::kLeader, std::memory_order_release);
  open_cv_.notify_all();
}

void Replica::WalkReachBelow(const LStream& s, uint64_t from, LogKey* reach, uint64_t* barrier) const {
  // The failover walk's reach over [log start, from): compacted entries,
  // then the ones still in the log.
  *reach = s.walk_reach;
  *barrier = s.walk_barrier;
  if (!ldecided_) return;
  for (const auto& e : s.log) {
    if (e.index >= from) break;
    AdvanceReach(Slot{e.index, lepoch_, e.value}, ldecided_->record, reach, barrier);
  }
}

void Replica::StepDownLocked(uint64_t newer_epoch, const char* why) {
  if (lmode_ == LMode::kIdle) return;
  bool was_open = lmode_ == LMode::kOpen;
  uint64_t max_ts = 0;
  for (uint32_t t = 0; t < opts_.streams; t++) {
    LStream& s = *lstreams_[t];
    s.leading.store(0, std::memory_order_release);
    max_ts = std::max(max_ts, s.epoch_max_ts.load(std::memory_order_relaxed));
    std::shared_ptr<Batch> b;
    while (s.ring.TryPop(&b)) {
    }
  }
  open_.store(false, std::memory_order_release);
  covered_ts_.store(0, std::memory_order_release);
  if (was_open) {
    deposed_epoch_ = lepoch_;
    deposed_max_ts_ = max_ts;
  }
  // The store holds this epoch's majority-accepted prefix of every stream:
  // replay (as a follower) goes on from there.
  std::vector<Replayer::LeaderPrefix> prefix;
  if (was_open) {
    for (uint32_t t = 0; t < opts_.streams; t++) {
      const LStream& s = *lstreams_[t];
      Replayer::LeaderPrefix& p = prefix.emplace_back();
      p.end = s.c_end;
      p.end_key = s.c_key;
      WalkReachBelow(s, s.c_end, &p.reach, &p.barrier);
    }
  }
  replayer_.ResumeAfterLeading(was_open ? &prefix : nullptr);
  for (auto& s : lstreams_) {
    s->log.clear();
    s->c_end = s->next_index = s->log_start = 0;
  }
  lmode_ = LMode::kIdle;
  g_ = {};
  bool suspect = was_open && max_ts > 0;
  member_.role.store(suspect || member_.dirty.load() ? Role::kCatchingUp : Role::kFollower, std::memory_order_release);
  std::fprintf(stderr, "rolis-repl %u: stepped down from epoch %lu (%s; newer epoch %lu)\n", opts_.id,
               static_cast<unsigned long>(lepoch_), why, static_cast<unsigned long>(newer_epoch));
  lepoch_ = 0;
  open_cv_.notify_all();
  FailWaiters("this member stopped leading before replication acknowledged the transaction");
}

void Replica::StepDown(uint64_t newer_epoch, const char* why) {
  {
    std::lock_guard<std::mutex> g(lmu_);
    StepDownLocked(newer_epoch, why);
  }
  CompleteWaiters();
  CheckDeposed();
}

void Replica::CheckDeposed() {
  // The record that followed the epoch this member led may be known already.
  DecidedPtr d = Latest();
  if (d) OnNewRecord(d);
}

// ---------------------------------------------------------------------------
// Watermark waiters.

bool Replica::WatermarkCovers(uint64_t ts) const {
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
  return member_.role.load(std::memory_order_acquire) == Role::kFollower && member_.voting.load() && !member_.dirty.load() &&
         !member_.needs_transfer.load();
}

bool Replica::AwaitWatermark(uint64_t commit_ts, WatermarkWaiter* w) {
  if (WatermarkCovers(commit_ts)) return true;
  {
    std::lock_guard<std::mutex> g(wmu_);
    if (!open_.load(std::memory_order_acquire)) {
      failed_.push_back({w, "this member is not the open leader"});
    } else {
      waiters_.push(Waiter{commit_ts, w});
    }
  }
  // A loop that ticks fast already completes waiters at every tick.
  if (resting_.load(std::memory_order_relaxed)) {
    WakeLoop();
  }
  return false;
}

void Replica::FailWaiters(const std::string& why) {
  std::lock_guard<std::mutex> g(wmu_);
  while (!waiters_.empty()) {
    failed_.push_back({waiters_.top().w, why});
    waiters_.pop();
  }
}

void Replica::CompleteWaiters() {
  std::vector<WatermarkWaiter*> done;
  std::vector<std::pair<WatermarkWaiter*, std::string>> failed;
  {
    std::lock_guard<std::mutex> g(wmu_);
    if (open_.load(std::memory_order_acquire)) {
      uint64_t covered = covered_ts_.load(std::memory_order_acquire);
      while (!waiters_.empty() && waiters_.top().ts <= covered) {
        done.push_back(waiters_.top().w);
        waiters_.pop();
      }
    } else {
      while (!waiters_.empty()) {
        failed_.push_back({waiters_.top().w, "this member stopped leading before replication acknowledged it"});
        waiters_.pop();
      }
    }
    failed.swap(failed_);
  }
  for (WatermarkWaiter* w : done) w->Done(true, "");
  for (auto& [w, why] : failed) w->Done(false, why);
}

void Replica::OnAcceptReply(uint32_t peer, const AcceptReply& r) {
  {
    std::lock_guard<std::mutex> g(inbox_mu_);
    inbox_.push_back({peer, r});
  }
  // A resting loop takes replies at its next tick: nothing waits for G
  // (a waiter wakes the loop itself, which then ticks fast).
  if (!resting_.load(std::memory_order_relaxed)) WakeLoop();
}

void Replica::OnLinkReset(uint32_t peer, uint32_t stream) {
  {
    std::lock_guard<std::mutex> g(inbox_mu_);
    resets_.push_back({peer, stream});
  }
  WakeLoop();
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
      std::fprintf(stderr, "rolis-repl %u: behind the leader's log on stream %u (at %lu, log starts at %lu): "
                   "state transfer\n", opts_.id, t, static_cast<unsigned long>(replayed),
                   static_cast<unsigned long>(m.log_start));
      catch_cv_.notify_all();
    }
  }
  r.replayed_next = replayer_.replayed_next(t);
  return r;
}

void Replica::LearnLeader(uint64_t epoch, uint32_t leader, const std::string& addr) {
  bool abandon = false;
  if (!member_.FollowLeader(epoch, leader, addr)) return;
  {
    std::lock_guard<std::mutex> g(pending_mu_);
    // Another member leads this member's pending epoch or a newer one. The
    // same epoch counts: two built-in elections may prepare one epoch
    // together, and the control stream decides only one record per epoch,
    // so the loser's candidacy can never open and must not keep it a
    // candidate (that member would refuse to serve as a follower).
    if (pending_ && pending_->epoch <= epoch && leader != opts_.id) {
      pending_.reset();
      abandon = true;
    }
  }
  if (leader == opts_.id) return;
  // Another member leads a newer epoch: a stale leader steps down (its
  // acceptor promised the newer epoch, so it could not commit anyway).
  bool leading;
  {
    std::lock_guard<std::mutex> g(lmu_);
    leading = lmode_ != LMode::kIdle && lepoch_ < epoch;
  }
  if (leading) StepDown(epoch, "another member leads a newer epoch");
  if (abandon) LeaveCandidateRole();
}

void Replica::LeaveCandidateRole() {
  if (member_.role.load() == Role::kCandidate) member_.role.store(member_.dirty.load() ? Role::kCatchingUp : Role::kFollower);
}

void Replica::LearnRecord(const DecidedPtr& d) {
  if (!d || !control_.Learn(d)) return;
  OnNewRecord(d);
}

void Replica::OnNewRecord(const DecidedPtr& d) {
  member_.Know(member_.ConfigOf(d));  // members of a new configuration can be called
  bool dirty_now = false;
  {
    std::lock_guard<std::mutex> g(lmu_);
    if (deposed_epoch_ != 0 && d->record.epoch > deposed_epoch_) {
      auto it = d->record.cut.find(deposed_epoch_);
      bool clean = deposed_max_ts_ == 0 || (it != d->record.cut.end() && it->second >= deposed_max_ts_);
      if (!clean) dirty_now = true;
      std::fprintf(stderr, "rolis-repl %u: record of epoch %lu: the commits of epoch %lu led here (up to ts %lu) %s\n",
                   opts_.id, static_cast<unsigned long>(d->record.epoch), static_cast<unsigned long>(deposed_epoch_),
                   static_cast<unsigned long>(deposed_max_ts_),
                   clean ? "all survive" : "do not all survive: state transfer");
      deposed_epoch_ = 0;
      deposed_max_ts_ = 0;
    }
  }
  if (dirty_now) member_.dirty.store(true);
  if (member_.dirty.load()) {
    StartStateTransfer();
  } else if (member_.role.load() == Role::kCatchingUp && member_.voting.load() && !member_.needs_transfer.load()) {
    member_.role.store(Role::kFollower);
  }
  if (d->leader_id != opts_.id) LearnLeader(d->record.epoch, d->leader_id, "");
}

void Replica::StartStateTransfer() {
  member_.dirty.store(true);
  member_.needs_transfer.store(true);
  if (member_.role.load() != Role::kLeader) member_.role.store(Role::kCatchingUp);
  catch_cv_.notify_all();
}

PromiseReply Replica::HandlePromise(const PromiseMsg& m) {
  PromiseReply r;
  if (!member_.voting.load(std::memory_order_acquire)) {
    // No vote while probing or catching up; say whether it holds anything
    // (members of a new cluster probe each other at start).
    r.from = opts_.id;
    r.amnesic = true;
    r.promised_epoch = acceptor_.promised();
    bool any_slot = false;
    for (uint32_t t = 0; t < opts_.streams; t++) any_slot = any_slot || acceptor_.next_slot(t) > 0;
    r.virgin = !any_slot && !control_.HasAccepted();
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
  bool any_slot = false;
  for (const auto& s : r.streams) any_slot = any_slot || !s.slots.empty() || s.first_slot > 0;
  // Nothing was ever decided or accepted here (promises of a first
  // election in progress may exist: see "Members that lose their memory").
  r.virgin = !any_slot && !control_.HasAccepted();
  if (m.peek) return r;
  if (r.ok && m.from != opts_.id) {
    // A candidate of a newer epoch: this member's own leadership (if any)
    // is over, its acceptor will refuse its accepts.
    bool leading;
    {
      std::lock_guard<std::mutex> g(lmu_);
      leading = lmode_ != LMode::kIdle && lepoch_ < m.epoch;
    }
    if (leading) StepDown(m.epoch, "promised a candidate of a newer epoch");
    // A candidate is running: the built-in election gives it a timeout to
    // finish before running its own (two candidates split the vote).
    member_.NoteLeaderContact();
    std::lock_guard<std::mutex> g(pending_mu_);
    if (pending_ && pending_->epoch < m.epoch) {
      pending_.reset();
      if (member_.role.load() == Role::kCandidate) member_.role.store(Role::kFollower);
    }
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

bool Replica::DrainLeader(std::chrono::milliseconds timeout) {
  // Stop taking writes (the role check refuses them), let transactions in
  // progress finish, close every buffer, and wait until G covers every
  // commit of this epoch: then nothing of it can be lost by the failover.
  member_.role.store(Role::kCandidate, std::memory_order_release);
  for (uint32_t t = 0; t < opts_.streams; t++) {
    std::mutex* mu = t < worker_mu_.size() ? worker_mu_[t] : nullptr;
    if (!mu) continue;
    std::lock_guard<std::mutex> g(*mu);
    LStream& s = *lstreams_[t];
    uint64_t e = s.leading.load();
    if (e != 0 && s.count > 0) CloseBatch(s, e, true);
  }
  uint64_t max_ts = 0;
  for (auto& s : lstreams_) max_ts = std::max(max_ts, s->epoch_max_ts.load());
  auto deadline = SteadyClock::now() + timeout;
  while (SteadyClock::now() < deadline) {
    if (!open_.load()) return false;
    if (covered_ts_.load() >= max_ts) return true;
    kick_.store(true);
    loop_cv_.notify_one();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return false;
}

// ---------------------------------------------------------------------------
// Failover (driven through the admin API).

Status Replica::PrepareFailover(uint64_t new_epoch, const Decided& last_decided, PrepareResult* out) {
  std::lock_guard<std::mutex> op(op_mu_);
  if (!member_.voting.load() || member_.needs_transfer.load()) {
    return Status::FailedPrecondition("this member is catching up (state transfer): choose another candidate");
  }
  if (member_.dirty.load()) {
    return Status::FailedPrecondition(
        "this member holds commits that a failover discarded and needs a state transfer: choose another candidate");
  }
  if (last_decided.record.epoch >= new_epoch) {
    return Status::InvalidArgument("the new epoch must be above the last decided one");
  }
  if (DecidedPtr d = Latest(); !member_.InConfig(d)) {
    return Status::FailedPrecondition("this member is not in configuration " + std::to_string(d ? d->config : 0) +
                                      " " + MembersString(member_.ConfigOf(d)) + ": it does not vote; choose another candidate");
  }
  if (new_epoch < acceptor_.promised()) {
    return Status::Aborted("epoch " + std::to_string(acceptor_.promised()) + " was already promised here");
  }
  // The current leader hands over: what it committed gets on a majority
  // first, so that it stays a valid candidate with nothing to lose.
  bool leading;
  {
    std::lock_guard<std::mutex> g(lmu_);
    leading = lmode_ == LMode::kOpen;
  }
  if (leading) DrainLeader(opts_.rpc_timeout);
  StepDown(new_epoch, "failover to a new epoch");
  uint64_t my_led = 0, my_max = 0;
  {
    std::lock_guard<std::mutex> g(lmu_);
    my_led = deposed_epoch_;
    my_max = deposed_max_ts_;
  }
  Role before = member_.role.load();
  member_.role.store(Role::kCandidate);
  auto fail = [&](Status s) {
    member_.role.store(member_.dirty.load() ? Role::kCatchingUp : (before == Role::kCandidate ? Role::kFollower : before));
    if (member_.role.load() == Role::kCandidate || member_.role.load() == Role::kLeader) member_.role.store(Role::kFollower);
    return s;
  };

  // 1. Promise(e') on every member; a majority of the latest decided
  //    configuration must grant it (CheckPrepareQuorum: the configuration
  //    may be newer than the one this member knows).
  PromiseMsg pm;
  pm.from = opts_.id;
  pm.epoch = new_epoch;
  DecidedPtr known = Latest();
  if (last_decided.record.epoch > 0) {
    auto ld = std::make_shared<const Decided>(last_decided);
    if (IsBetterDecided(ld, known)) known = ld;
  }
  const std::vector<MemberAddr> initial = member_.initial();
  auto replies = calls_.PromiseAll(pm, true, [&known, &initial, new_epoch](const std::vector<std::pair<uint32_t, PromiseReply>>& rs) {
    for (const auto& [id, r] : rs) {
      if (!r.ok && !r.amnesic && r.promised_epoch > new_epoch) return true;
    }
    return CheckPrepareQuorum(known, initial, rs).ok;
  });
  std::vector<const PromiseReply*> oks;
  for (auto& [id, r] : replies) {
    if (r.ok && !r.amnesic) {
      oks.push_back(&r);
    } else if (!r.amnesic && r.promised_epoch > new_epoch) {
      return fail(Status::Aborted("member " + std::to_string(id) + " promised epoch " +
                                  std::to_string(r.promised_epoch) + " already"));
    }
  }
  PrepareQuorum quorum_check = CheckPrepareQuorum(known, initial, replies);
  if (!quorum_check.ok) {
    return fail(Unavailable("epoch " + std::to_string(new_epoch) + " needs " + quorum_check.Describe()));
  }
  DecidedPtr newest = quorum_check.newest;
  if (IsBetterDecided(Latest(), newest)) newest = Latest();
  if (!member_.InConfig(newest)) {
    LearnRecord(newest);
    return fail(Status::FailedPrecondition("this member is not in configuration " +
                                           std::to_string(newest ? newest->config : 0) + " " +
                                           MembersString(member_.ConfigOf(newest)) + ": choose another candidate"));
  }
  if (newest && newest->record.epoch > last_decided.record.epoch) {
    LearnRecord(newest);
    return fail(Status::FailedPrecondition("the record of epoch " + std::to_string(newest->record.epoch) +
                                           " is decided: start the failover from it"));
  }

  // 2-4. Merge, walk, G' and V' (failover_plan.h).
  std::vector<BatchPtr> payloads;
  std::vector<std::vector<std::vector<AcceptedSlot>>> quorum(oks.size());
  std::vector<StreamBase> bases(opts_.streams);
  for (size_t i = 0; i < oks.size(); i++) {
    const PromiseReply& r = *oks[i];
    quorum[i].resize(opts_.streams);
    for (uint32_t t = 0; t < opts_.streams && t < r.streams.size(); t++) {
      const StreamSlots& ss = r.streams[t];
      // The walk starts where the member that compacted most stopped.
      if (ss.first_slot > bases[t].first_slot) {
        bases[t] = StreamBase{ss.first_slot, ss.base_key, ss.base_barrier};
      } else if (ss.first_slot == bases[t].first_slot) {
        bases[t].base_key = std::max(bases[t].base_key, ss.base_key);
        bases[t].base_barrier = std::max(bases[t].base_barrier, ss.base_barrier);
      }
      for (const Slot& s : ss.slots) {
        if (!s.value) continue;
        payloads.push_back(s.value);
        quorum[i][t].push_back(AcceptedSlot{
            s.index, s.ballot, SlotValue{s.value->kind, s.value->epoch, s.value->last_ts, payloads.size()}});
      }
    }
  }
  FailoverPlan plan = PlanFailoverFrom(new_epoch, last_decided.record, quorum, bases);

  // This member's store must hold every compacted entry (it replays the rest).
  for (uint32_t t = 0; t < opts_.streams; t++) {
    if (replayer_.replayed_next(t) < bases[t].first_slot) {
      return fail(Status::FailedPrecondition("this member has replayed stream " + std::to_string(t) + " up to slot " +
                                             std::to_string(replayer_.replayed_next(t)) + " but a member compacted up to " +
                                             std::to_string(bases[t].first_slot) + ": choose another candidate"));
    }
  }
  // A member that led an epoch keeps its commits in its store: they must all
  // survive the new cut, or it cannot lead.
  if (my_led != 0 && my_max != 0) {
    auto it = plan.record.cut.find(my_led);
    if (it == plan.record.cut.end() || it->second < my_max) {
      member_.dirty.store(true);
      member_.needs_transfer.store(true);
      catch_cv_.notify_all();
      return fail(Status::FailedPrecondition("this member led epoch " + std::to_string(my_led) +
                                             " and holds commits beyond the new cut: choose another candidate"));
    }
  }

  auto pending = std::make_unique<Pending>();
  pending->epoch = new_epoch;
  // The new epoch keeps the configuration in force.
  pending->proposed = Decided{plan.record, opts_.id, plan.watermark, newest ? newest->config : 0, member_.ConfigOf(newest)};
  pending->bases = bases;
  pending->led_epoch = my_led;
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
  out->proposed = pending->proposed;
  out->promised_by.clear();
  for (const PromiseReply* r : oks) out->promised_by.push_back(r->from);
  {
    std::lock_guard<std::mutex> g(pending_mu_);
    pending_ = std::move(pending);
  }
  std::fprintf(stderr, "rolis-repl %u: prepared epoch %lu: G' = %s\n", opts_.id, static_cast<unsigned long>(new_epoch),
               KeyStr(plan.watermark).c_str());
  return Status::OK();
}

Status Replica::DecideEpoch(const Decided& record, uint64_t expected_previous, bool* decided, DecidedPtr* current) {
  std::lock_guard<std::mutex> ctl(ctl_mu_);
  *decided = false;
  if (!member_.voting.load()) return Status::FailedPrecondition("this member is catching up: ask another member");
  if (record.record.epoch <= expected_previous) {
    return Status::InvalidArgument("the record's epoch must be above the expected previous epoch");
  }
  DecidedPtr latest = Latest();
  if (!latest || latest->record.epoch < expected_previous) {
    ControlMsg q;
    q.kind = ControlMsg::Kind::kQuery;
    q.from = opts_.id;
    const size_t maj = MajorityOf(member_.ConfigOf(latest).size());
    for (auto& [id, r] : calls_.ControlAll(q, [maj](const auto& rs) { return rs.size() >= maj; })) LearnRecord(r.latest);
    latest = Latest();
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
  Status s = ProposeNext(prev, std::make_shared<const Decided>(record), current);
  if (!s.ok()) return s;
  *decided = **current == record;
  return Status::OK();
}

Status Replica::ProposeNext(const DecidedPtr& prev, const DecidedPtr& mine, DecidedPtr* current) {
  const uint64_t instance = InstanceAfter(prev.get());
  const std::vector<uint32_t> acceptors = MemberIds(member_.ConfigOf(prev));
  auto newer = [&prev](const DecidedPtr& d) { return d && (!prev || NewerRecord(*d, *prev)); };
  auto quorum = [&acceptors](const std::vector<std::pair<uint32_t, ControlReply>>& rs) {
    std::vector<uint32_t> ok;
    for (const auto& [id, r] : rs) {
      if (r.ok) ok.push_back(id);
    }
    return HasMajority(acceptors, ok);
  };
  auto settled = [&](const std::vector<std::pair<uint32_t, ControlReply>>& rs) {
    for (const auto& [id, r] : rs) {
      if (newer(r.latest)) return true;
    }
    return quorum(rs);
  };
  DecidedPtr chosen;
  uint64_t round = 1;
  std::mt19937_64 rng(opts_.id * 7919 + mine->record.epoch + mine->config);
  for (int attempt = 0; attempt < 20 && !chosen && !member_.stopping.load(); attempt++) {
    const uint64_t ballot = (round << 8) | (opts_.id & 0xFF);
    ControlMsg pm;
    pm.kind = ControlMsg::Kind::kPrepare;
    pm.from = opts_.id;
    pm.instance = instance;
    pm.ballot = ballot;
    pm.prev = prev;
    uint64_t best_ballot = 0;
    DecidedPtr value = mine;
    uint64_t highest = 0;
    auto promises = calls_.ControlAll(pm, settled);
    for (auto& [id, r] : promises) {
      if (newer(r.latest)) {
        LearnRecord(r.latest);
        *current = r.latest;
        return Status::OK();
      }
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
      auto accepts = calls_.ControlAll(am, settled);
      for (auto& [id, r] : accepts) {
        if (newer(r.latest)) {
          LearnRecord(r.latest);
          *current = r.latest;
          return Status::OK();
        }
        highest = std::max(highest, r.promised);
      }
      if (quorum(accepts)) chosen = value;
    }
    if (!chosen) {
      round = std::max(round, highest >> 8) + 1;
      std::this_thread::sleep_for(std::chrono::milliseconds(2 + rng() % 20));
    }
  }
  if (!chosen) {
    return Unavailable("no majority of " + MembersString(member_.ConfigOf(prev)) + " answered the control stream");
  }
  LearnRecord(chosen);
  ControlMsg lm;
  lm.kind = ControlMsg::Kind::kLearn;
  lm.from = opts_.id;
  lm.instance = instance;
  lm.value = chosen;
  calls_.ControlAll(lm, [](const auto&) { return true; });  // tell the others; do not wait
  *current = chosen;
  return Status::OK();
}

Status Replica::OpenEpoch(const Decided& record, LogKey* watermark) {
  std::lock_guard<std::mutex> op(op_mu_);
  const uint64_t e = record.record.epoch;
  // Waits until this member leads epoch e (or gives up on it), up to the
  // open timeout.
  auto await_open = [&](std::unique_lock<std::mutex>& lk) {
    open_cv_.wait_for(lk, opts_.open_timeout,
                      [&] { return lmode_ == LMode::kOpen || lepoch_ != e || member_.stopping.load(); });
    if (lmode_ == LMode::kOpen && lepoch_ == e) {
      *watermark = g_;
      return Status::OK();
    }
    if (lepoch_ != e) return Status::Aborted("stepped down while opening: a newer epoch was promised");
    return Unavailable("the re-proposals of epoch " + std::to_string(e) +
                       " are not on a majority yet; this member opens as soon as they are");
  };
  {
    // The same record again, while this member opens it or leads it: the
    // operator retries after UNAVAILABLE ("not on a majority yet") or after
    // losing the answer. Wait for the opening like the first call instead
    // of refusing a request that is already being carried out.
    std::unique_lock<std::mutex> lk(lmu_);
    if (record.leader_id == opts_.id && lmode_ != LMode::kIdle && lepoch_ == e && ldecided_ &&
        ldecided_->record == record.record) {
      return await_open(lk);
    }
  }
  std::unique_ptr<Pending> pending;
  {
    std::lock_guard<std::mutex> g(pending_mu_);
    if (!pending_ || pending_->epoch != e || pending_->proposed.record != record.record ||
        record.leader_id != opts_.id) {
      return Status::FailedPrecondition("OpenEpoch must follow this member's PrepareFailover of epoch " +
                                        std::to_string(e) + ", with the record it proposed");
    }
    pending = std::move(pending_);
  }
  if (member_.role.load() != Role::kCandidate) return Status::FailedPrecondition("this member is no longer the candidate");
  if (acceptor_.promised() > e) {
    member_.role.store(Role::kFollower);
    return Status::Aborted("epoch " + std::to_string(acceptor_.promised()) + " was promised since");
  }
  auto dec = std::make_shared<const Decided>(record);
  // Decided (by DecideEpoch or by the operator's compare-and-set).
  LearnRecord(dec);

  // The re-proposals, as found, with ballot e; this member's own vote first.
  std::vector<uint64_t> self_need(opts_.streams);
  for (uint32_t t = 0; t < opts_.streams; t++) {
    for (const Slot& s : pending->repropose[t]) {
      if (!acceptor_.AcceptLocal(t, s, e, pending->bases[t].first_slot, &self_need[t])) {
        member_.role.store(Role::kFollower);
        return Status::Aborted("a newer epoch was promised here");
      }
    }
  }
  // The new leader's state: replay of the valid entries at or below G'.
  {
    std::vector<Slot> barriers;
    for (uint32_t t = 0; t < opts_.streams; t++) barriers.push_back(pending->repropose[t].back());
    replayer_.ReplayForOpening(dec, barriers);
  }
  member_.Know(member_.ConfigOf(dec));
  {
    std::lock_guard<std::mutex> g(lmu_);
    lepoch_ = e;
    ldecided_ = dec;
    lcfgs_ = {MemberIds(member_.ConfigOf(dec))};
    learners_.clear();
    RefreshPeersLocked();
    g_ = {};
    auto now = SteadyClock::now();
    for (uint32_t t = 0; t < opts_.streams; t++) {
      LStream& s = *lstreams_[t];
      s.log.clear();
      s.log_start = pending->bases[t].first_slot;
      s.base_reach = {};
      s.walk_reach = pending->bases[t].base_key;
      s.walk_barrier = pending->bases[t].base_barrier;
      LogKey reach{};
      for (const Slot& sl : pending->repropose[t]) {
        if (sl.value->kind != BatchKind::kNoop) reach = std::max(reach, sl.value->key());
        s.Append(sl.index, sl.value, reach);
      }
      s.next_index = pending->repropose[t].back().index + 1;
      s.barrier_index = pending->repropose[t].back().index;
      s.self_prefix = self_need[t];
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
    lmode_ = LMode::kOpening;
    loop_kick_ = true;
  }
  loop_cv_.notify_all();

  std::unique_lock<std::mutex> lk(lmu_);
  Status st = await_open(lk);
  if (st.ok()) {
    std::fprintf(stderr, "rolis-repl %u: leading epoch %lu (G' %s)\n", opts_.id, static_cast<unsigned long>(e),
                 KeyStr(record.watermark).c_str());
  }
  return st;
}

void Replica::AbandonCandidacy(uint64_t epoch) {
  std::lock_guard<std::mutex> op(op_mu_);  // not while an OpenEpoch runs
  {
    std::lock_guard<std::mutex> g(pending_mu_);
    if (!pending_ || pending_->epoch != epoch) return;
    pending_.reset();
  }
  LeaveCandidateRole();
}

Status Replica::AnnounceLeader(const Decided& record, const std::string& leader_client_address) {
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
// Membership changes (docs/replication.md, "Membership").

Status Replica::ChangeMembership(const std::vector<MemberAddr>& target, std::chrono::milliseconds timeout,
                                 DecidedPtr* now) {
  std::lock_guard<std::mutex> one(member_mu_);
  const auto deadline = SteadyClock::now() + timeout;
  uint64_t e = 0;
  {
    std::lock_guard<std::mutex> g(lmu_);
    if (lmode_ == LMode::kOpen) e = lepoch_;
  }
  DecidedPtr cur = Latest();
  if (e == 0 || !cur || cur->record.epoch != e) {
    std::string who = leader_client_address();
    return Status::FailedPrecondition("this member is not the open leader" +
                                      (who.empty() ? std::string() : " (the leader serves clients at " + who + ")") +
                                      ": ask the leader");
  }
  const std::vector<MemberAddr> from = member_.ConfigOf(cur);
  MembershipChange ch;
  Status s = CheckMembershipChange(from, target, opts_.id, &ch);
  if (!s.ok()) return s;

  // Waits (bounded) until a majority of every counted configuration holds
  // the log up to `mark`; then only the newest configuration is counted.
  auto settle = [&](const std::vector<uint64_t>& mark) -> Status {
    while (!LogHeldSince(mark)) {
      if (member_.stopping.load() || SteadyClock::now() > deadline) {
        return Unavailable("configuration " + std::to_string(Latest()->config) +
                           " is decided; a majority of it does not hold the log yet: send the same request again");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    std::lock_guard<std::mutex> g(lmu_);
    if (lmode_ != LMode::kOpen || lepoch_ != e) return Status::Aborted("stepped down during the membership change");
    lcfgs_ = {MemberIds(member_.ConfigOf(Latest()))};
    learners_.clear();
    RefreshPeersLocked();
    return Status::OK();
  };
  auto marks = [&] {
    std::lock_guard<std::mutex> g(lmu_);
    std::vector<uint64_t> m;
    for (auto& st : lstreams_) m.push_back(st->next_index);
    return m;
  };

  if (ch.same) {
    // An idempotent retry: wait for the change in force to settle, if it has not.
    bool settling;
    {
      std::lock_guard<std::mutex> g(lmu_);
      settling = lcfgs_.size() > 1;
    }
    if (settling) {
      if (Status ss = settle(marks()); !ss.ok()) return ss;
    }
    *now = cur;
    return Status::OK();
  }
  bool resume = false;  // a change whose decision was left unknown: decide it again
  {
    std::lock_guard<std::mutex> g(lmu_);
    if (lcfgs_.size() > 1) {
      if (lcfgs_[1] != MemberIds(ch.members)) {
        std::vector<MemberAddr> pending;
        for (uint32_t id : lcfgs_[1]) pending.push_back(MemberAddr{id, ""});
        return Status::FailedPrecondition("the change to " + MembersString(pending) +
                                          " is not known to be decided yet: send that request again first");
      }
      resume = true;
    }
  }

  // 1. A new member catches up before it counts: it is sent the log (it
  //    catches up by state transfer if the log no longer reaches back to
  //    what it holds) and must hold all of it as it was when we started.
  if (ch.add && !resume) {
    member_.Know({ch.member});
    std::vector<uint64_t> want;
    {
      std::lock_guard<std::mutex> g(lmu_);
      learners_.insert(ch.member.id);
      RefreshPeersLocked();
      for (auto& st : lstreams_) want.push_back(st->next_index);
    }
    std::string behind;
    for (;;) {
      behind.clear();
      {
        std::lock_guard<std::mutex> g(lmu_);
        if (lmode_ != LMode::kOpen || lepoch_ != e) {
          learners_.erase(ch.member.id);
          return Status::Aborted("stepped down while member " + std::to_string(ch.member.id) + " caught up");
        }
        int p = PeerPos(ch.member.id);
        if (p < 0) behind = "not sent to";
        for (uint32_t t = 0; t < opts_.streams && p >= 0; t++) {
          const PeerState& ps = lstreams_[t]->peers[p];
          if (ps.acked < want[t]) {
            behind = "stream " + std::to_string(t) + " holds slots up to " + std::to_string(ps.acked) + " of " +
                     std::to_string(want[t]);
            break;
          }
        }
      }
      if (behind.empty()) break;
      if (member_.stopping.load() || SteadyClock::now() > deadline) {
        std::lock_guard<std::mutex> g(lmu_);
        learners_.erase(ch.member.id);
        RefreshPeersLocked();
        return Unavailable("new member " + std::to_string(ch.member.id) + " at " + ch.member.address +
                           " did not catch up within " + std::to_string(timeout.count()) + " ms (" + behind +
                           "; is it running, started with --peers listing the new membership?): nothing changed");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }

  // 2. From here on the leader counts a majority of both configurations
  //    (joint), so whichever one a later failover finds, it intersects
  //    every majority that acknowledged; then the next configuration is
  //    decided in the control-stream instance after the record in force.
  std::vector<uint64_t> mark;
  {
    std::lock_guard<std::mutex> g(lmu_);
    lcfgs_ = {MemberIds(from), MemberIds(ch.members)};
    RefreshPeersLocked();
    for (auto& st : lstreams_) mark.push_back(st->next_index);
  }
  auto next = std::make_shared<Decided>(*cur);
  next->config = cur->config + 1;
  next->members = ch.members;
  DecidedPtr chosen;
  {
    std::lock_guard<std::mutex> ctl(ctl_mu_);
    s = ProposeNext(cur, next, &chosen);
  }
  if (!s.ok()) {
    // It may or may not have been chosen: keep counting both (safe either
    // way); the same request again finishes it.
    return Status(s.code(), s.message() + " (the change may or may not be decided: send the same request again)");
  }
  if (chosen->record.epoch != e) {
    return Status::Aborted("epoch " + std::to_string(chosen->record.epoch) + " was decided: this member no longer leads");
  }
  uint64_t told = 0;  // a slot of stream 0 sent with the new record
  {
    std::lock_guard<std::mutex> g(lmu_);
    if (lmode_ == LMode::kOpen && lepoch_ == e) {
      ldecided_ = chosen;  // accepts carry the record: followers learn the configuration
      lcfgs_ = {MemberIds(from), MemberIds(member_.ConfigOf(chosen))};
      RefreshPeersLocked();
      told = lstreams_[0]->next_index + 1;
    }
  }
  if (!ch.add) {
    // Best effort (1 s): the removed member learns that it no longer votes
    // before it is no longer sent to (else it would still run for leader,
    // and learn it only from the promises it asks for).
    auto until = std::min(deadline, SteadyClock::now() + std::chrono::seconds(1));
    while (SteadyClock::now() < until) {
      {
        std::lock_guard<std::mutex> g(lmu_);
        int p = PeerPos(ch.member.id);
        if (p < 0 || lstreams_[0]->peers[p].acked >= told) break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  // 3. Settled: a majority of the new configuration holds the whole log
  //    (what a majority of the old one held is copied onto it), so the
  //    next change may go, and the old configuration is no longer counted.
  if (Status ss = settle(mark); !ss.ok()) return ss;
  *now = chosen;
  if (*chosen != *next) {
    return Status::Aborted("another membership change was decided first: the membership is now " +
                           MembersString(member_.ConfigOf(chosen)) + "; send the request again if it still applies");
  }
  std::fprintf(stderr, "rolis-repl %u: configuration %lu: %s\n", opts_.id, static_cast<unsigned long>(chosen->config),
               MembersString(member_.ConfigOf(chosen)).c_str());
  return Status::OK();
}

// ---------------------------------------------------------------------------
// State transfer.

SnapshotReply Replica::HandleSnapshot(const SnapshotMsg& m) {
  if (member_.role.load() == Role::kLeader) return LeaderSnapshot();
  return FollowerSnapshot();
}

bool Replica::AwaitEngineSnapshot(std::chrono::milliseconds limit) {
  const uint64_t e0 = db_->Stats().current_epoch;
  const auto deadline = SteadyClock::now() + limit;
  while (db_->Stats().snapshot_epoch < e0) {
    if (SteadyClock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

Status Replica::ScanStore(Transaction* txn, std::vector<SnapshotWrite>* out) {
  for (TableId id = 0;; id++) {
    Table* table = nullptr;
    if (!db_->GetTable(id, &table).ok()) break;
    Status s = txn->Scan(table, "", "", 0, [&](std::string_view k, std::string_view v) {
      out->push_back(SnapshotWrite{id, std::string(k), std::string(v)});
      return true;
    });
    if (!s.ok()) {
      out->clear();
      return Status(s.code(), "scan: " + s.message());
    }
  }
  return Status::OK();
}

SnapshotReply Replica::FollowerSnapshot() {
  SnapshotReply r;
  if (!member_.voting.load() || member_.dirty.load() || member_.needs_transfer.load() || member_.role.load() != Role::kFollower || !db_) {
    r.error = "not a caught-up follower";
    return r;
  }
  std::lock_guard<std::mutex> sg(snap_mu_);
  std::unique_ptr<Transaction> txn;
  {
    // Replay pauses while the snapshot is fixed: the store then holds exactly
    // the transactions replay applied (a prefix of the key order).
    auto hold = replayer_.Hold();
    if (!replayer_.FollowingLocked()) {
      r.error = "not following an open leader";
      return r;
    }
    replayer_.SnapshotPositionLocked(&r);
    r.decided = Latest();
    // A read-only transaction sees the engine's snapshot epoch: wait until
    // it covers every write replay made.
    replayer_.QuiesceLocked();
    if (!AwaitEngineSnapshot(std::chrono::seconds(2))) {
      r.error = "the engine's snapshot epoch does not advance";
      return r;
    }
    txn = snapshot_worker_->BeginReadOnly();
  }
  Status s = ScanStore(txn.get(), &r.writes);
  (void)txn->Commit();
  txn.reset();
  snapshot_worker_->Quiesce();
  if (!s.ok()) {
    r.error = s.message();
    return r;
  }
  r.ok = true;
  return r;
}

SnapshotReply Replica::LeaderSnapshot() {
  // Only when no caught-up follower can give one (a member asks the leader
  // last): in a cluster of three, one member down and the other leading.
  // Writes pause while it is fixed: every worker is held, its batch closed,
  // and heartbeats sent until G covers every commit of the epoch. The store
  // then holds exactly the slots below each stream's majority-accepted end,
  // every one of them chosen, which is what a caught-up follower's holds.
  SnapshotReply r;
  if (!db_) {
    r.error = "no engine attached";
    return r;
  }
  std::lock_guard<std::mutex> sg(snap_mu_);
  const uint64_t E = lstreams_[0]->leading.load(std::memory_order_acquire);
  if (E == 0 || !open_.load()) {
    r.error = "not an open leader";
    return r;
  }
  std::vector<std::mutex*> held = LockEach(worker_mu_);
  auto release = [&] {
    for (std::mutex* mu : held) mu->unlock();
    held.clear();
  };
  auto fail = [&](const std::string& why) {
    release();
    r = SnapshotReply{};
    r.error = "the leader's snapshot: " + why;
    return r;
  };
  uint64_t max_ts = 0;
  for (auto& sp : lstreams_) {
    LStream& s = *sp;
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
    for (auto& sp : lstreams_) {
      if (!sp->ring.Full()) PushHeartbeat(*sp, E);
    }
    WakeLoop();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  {
    // Not a plain lock: a member that opens an epoch takes the workers'
    // mutexes under lmu_ (OpenNow), and this thread holds them.
    std::unique_lock<std::mutex> lk(lmu_, std::defer_lock);
    while (!lk.try_lock()) {
      if (SteadyClock::now() > deadline) return fail("its leader state stayed busy");
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    if (lmode_ != LMode::kOpen || lepoch_ != E) return fail("it stopped leading");
    r.at = g_;
    r.leader_epoch = E;
    r.decided = ldecided_ ? ldecided_ : Latest();
    auto hold = replayer_.Hold();
    replayer_.QuiesceLocked();  // it last replayed as a follower
    for (uint32_t t = 0; t < opts_.streams; t++) {
      const LStream& s = *lstreams_[t];
      LogKey reach;
      uint64_t barrier;
      WalkReachBelow(s, s.c_end, &reach, &barrier);
      r.next_slot.push_back(s.c_end);
      r.skip.push_back(0);
      r.stream_key.push_back(std::max(reach, replayer_.StreamReachLocked(t)));
      r.stream_barrier.push_back(std::max(barrier, replayer_.StreamBarrierLocked(t)));
    }
  }
  // An open client transaction holds the engine's snapshot epoch back, and
  // with its worker held it cannot end: under interactive load there is
  // nearly always one (a deposed leader waited 15 s to 30 s+ for a moment
  // without). They are aborted, as a failover would (clients retry), and the
  // held workers quiesced (an idle one still publishes its last epoch).
  const size_t aborted = unpin_snapshot_epoch_ ? unpin_snapshot_epoch_() : 0;
  if (!AwaitEngineSnapshot(std::chrono::milliseconds(250))) {
    return fail("the engine's snapshot epoch does not advance");
  }
  std::unique_ptr<Transaction> txn = snapshot_worker_->BeginReadOnly();
  release();  // later commits are in later engine epochs: the snapshot does not see them
  std::vector<SnapshotWrite> writes;
  Status s = ScanStore(txn.get(), &writes);
  (void)txn->Commit();
  txn.reset();
  snapshot_worker_->Quiesce();
  if (!s.ok()) {
    r = SnapshotReply{};
    r.error = "the leader's snapshot: " + s.message();
    return r;
  }
  r.writes = std::move(writes);
  r.ok = true;
  leader_snapshots_.fetch_add(1);
  std::fprintf(stderr,
               "rolis-repl %u: served a snapshot of %zu keys at %s (no caught-up follower could; %zu open "
               "transactions aborted)\n",
               opts_.id, r.writes.size(), KeyStr(r.at).c_str(), aborted);
  return r;
}

void Replica::CatchUpLoop() {
  NameThisThread("rolis-catch-up");
  int failures = 0;
  // A member that cannot catch up says why, once it has tried for a while
  // (at start the others may just not be listening yet) and then now and then.
  const auto first_report = std::chrono::seconds(2), report_every = std::chrono::seconds(10);
  SteadyClock::time_point failing_since{}, reported{};
  while (!member_.stopping.load()) {
    bool work = !member_.voting.load() || member_.needs_transfer.load();
    if (!work) MaybeCheckpoint();
    if (work) {
      Status s = !member_.voting.load() ? Probe() : TransferState();
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
        std::fprintf(stderr,
                     "rolis-repl %u: not voting yet, catching up for %lld s: %s (it counts toward a majority only "
                     "once it has; `rolisctl status` shows which members are up)\n",
                     opts_.id,
                     static_cast<long long>(std::chrono::duration_cast<std::chrono::seconds>(now - failing_since).count()),
                     s.message().c_str());
      }
    }
    std::unique_lock<std::mutex> lk(catch_mu_);
    // A probe retries sooner: at a new cluster's start the others come up
    // within moments, and a member that has not decided by the first
    // election must then catch up by a state transfer. A transfer (which
    // may have had a follower scan its whole store) retries more slowly.
    const int step_ms = member_.voting.load() || member_.needs_transfer.load() ? 50 : 20;
    auto wait = work ? std::chrono::milliseconds(step_ms * (1 + failures)) : std::chrono::milliseconds(200);
    catch_cv_.wait_for(lk, wait, [&] { return member_.stopping.load(); });
  }
}

Status Replica::Probe() {
  // Did this member restart empty (the others know more than it does), or
  // is the whole cluster new? It decides only when it knows: a member that
  // forgot its votes must not vote before it catches up.
  PromiseMsg pm;
  pm.from = opts_.id;
  pm.peek = true;
  const size_t need_virgin = std::min<size_t>(member_.peers().size(), majority());
  auto replies = calls_.PromiseAll(pm, false, [need_virgin](const std::vector<std::pair<uint32_t, PromiseReply>>& rs) {
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
    member_.needs_transfer.store(true);
    Status s = TransferState();
    if (!s.ok()) NoteProbe(others_know, 1 + virgin);
    if (!s.ok()) return Status(s.code(), "the others hold state this member lacks, and its state transfer failed: " + s.message());
    return s;
  }
  if (virgin >= std::min<size_t>(member_.peers().size(), majority())) {
    member_.voting.store(true);
    member_.role.store(Role::kFollower);
    std::fprintf(stderr, "rolis-repl %u: new cluster (%zu other members have no state): voting\n", opts_.id, virgin);
    return Status::OK();
  }
  return Unavailable(std::to_string(replies.size()) + " of the " +
                     std::to_string(member_.peers().size()) + " other members answered its probe (" + std::to_string(virgin) +
                     " without state; " + std::to_string(need_virgin) + " needed to call the cluster new)");
}

Status Replica::TransferState() {
  if (!db_) return Status::FailedPrecondition("no engine attached");
  DecidedPtr known = Latest();
  uint64_t my_epoch = 0;
  {
    std::lock_guard<std::mutex> g(lmu_);
    if (lmode_ != LMode::kIdle) return Status::FailedPrecondition("leading");
    my_epoch = std::max(led_epoch_, deposed_epoch_);
  }
  // The votes of a majority of the configuration in force (membership.h):
  // this member adopts them, so whatever it voted for before it lost its
  // memory is still counted. A member that did not lose it (it kept voting:
  // a deposed leader whose commits did not survive, or a follower left
  // behind the leader's log) counts its own.
  struct Votes {
    std::vector<MemberAddr> cfg;
    bool self = false;
    size_t need = 0;
    std::vector<std::pair<uint32_t, PromiseReply>> replies;
    std::vector<const PromiseReply*> oks;  // into replies
  };
  auto read_votes = [&](const DecidedPtr& record, Votes* v) -> Status {
    v->cfg = member_.ConfigOf(record);
    member_.Know(v->cfg);
    v->self = member_.voting.load() && Contains(v->cfg, opts_.id);
    std::set<uint32_t> voters;
    for (const MemberAddr& m : v->cfg) {
      if (m.id != opts_.id || v->self) voters.insert(m.id);
    }
    v->need = std::min(MajorityOf(v->cfg.size()), voters.size());
    PromiseMsg pm;
    pm.from = opts_.id;
    pm.peek = true;
    const size_t need = v->need;
    v->replies = calls_.PromiseAll(pm, v->self, [need, &voters](const std::vector<std::pair<uint32_t, PromiseReply>>& rs) {
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
  };
  // 0. Only if those votes can be had is a snapshot worth asking for (the
  //    leader's pauses its writes).
  {
    Votes first;
    if (Status s = read_votes(known, &first); !s.ok()) return s;
  }
  // 1. A snapshot from a caught-up follower; from the leader only when none
  //    can give one.
  SnapshotReply snap;
  bool got = false;
  std::string why;
  std::vector<uint32_t> sources = member_.peers();
  const uint32_t leader_id = member_.leader().id;
  std::stable_partition(sources.begin(), sources.end(), [leader_id](uint32_t p) { return p != leader_id; });
  for (uint32_t p : sources) {
    SnapshotMsg sm;
    sm.from = opts_.id;
    SnapshotReply r;
    Status s = transport_->Snapshot(p, sm, &r, opts_.rpc_timeout * 5);
    if (!s.ok() || !r.ok) {
      why += " member " + std::to_string(p) + ": " + (s.ok() ? r.error : s.message()) + ";";
      continue;
    }
    // A store that led an epoch holds commits of it: the snapshot must be of
    // a later epoch so that its writes win over them.
    if (r.at.epoch <= my_epoch) {
      why += " member " + std::to_string(p) + ": snapshot of epoch " + std::to_string(r.at.epoch) + " not past " +
             std::to_string(my_epoch) + ";";
      continue;
    }
    if (r.next_slot.size() != opts_.streams) {
      why += " member " + std::to_string(p) + ": snapshot of another number of streams;";
      continue;
    }
    snap = std::move(r);
    got = true;
    break;
  }
  if (!got) {
    if (!why.empty() && why.back() == ';') why.pop_back();
    return Unavailable("no snapshot:" + why);
  }
  // 2. The votes again, after the snapshot, so that they cover every slot
  //    after it.
  Votes votes;
  if (Status s = read_votes(IsBetterDecided(snap.decided, known) ? snap.decided : known, &votes); !s.ok()) return s;
  const std::vector<const PromiseReply*>& oks = votes.oks;
  uint64_t max_promised = 0;
  DecidedPtr newest = snap.decided;
  for (const PromiseReply* r : oks) {
    max_promised = std::max(max_promised, r->promised_epoch);
    if (IsBetterDecided(r->decided, newest)) newest = r->decided;
  }
  std::vector<StreamSlots> adopted(opts_.streams);
  for (uint32_t t = 0; t < opts_.streams; t++) {
    adopted[t].first_slot = snap.next_slot[t];
    adopted[t].base_key = snap.stream_key[t];
    adopted[t].base_barrier = snap.stream_barrier[t];
    std::map<uint64_t, Slot> best;
    for (const PromiseReply* r : oks) {
      if (t >= r->streams.size()) continue;
      for (const Slot& s : r->streams[t].slots) {
        if (s.index < snap.next_slot[t] || !s.value) continue;
        auto [it, fresh] = best.try_emplace(s.index, s);
        if (!fresh && s.ballot > it->second.ballot) it->second = s;
      }
    }
    for (auto& [i, s] : best) adopted[t].slots.push_back(s);
  }

  // 3. The store becomes the snapshot: every snapshot write, and a delete of
  //    every local key it lacks, installed with the snapshot's key (above
  //    anything a deposed epoch left here, below everything replayed next).
  {
    auto hold = replayer_.Hold();
    replayer_.SetPausedLocked(true);
    std::set<std::pair<TableId, std::string>> in_snapshot;
    for (const SnapshotWrite& w : snap.writes) in_snapshot.insert({w.table, w.key});
    std::vector<std::pair<TableId, std::string>> stale;
    {
      std::lock_guard<std::mutex> sg(snap_mu_);
      replayer_.QuiesceLocked();
      if (!AwaitEngineSnapshot(std::chrono::seconds(2))) {
        replayer_.SetPausedLocked(false);
        return Unavailable("the engine's snapshot epoch does not advance (a worker stays inside a transaction)");
      }
      auto txn = snapshot_worker_->BeginReadOnly();
      for (TableId id = 0;; id++) {
        Table* table = nullptr;
        if (!db_->GetTable(id, &table).ok()) break;
        Status s = txn->Scan(table, "", "", 0, [&](std::string_view k, std::string_view) {
          if (!in_snapshot.count({id, std::string(k)})) stale.push_back({id, std::string(k)});
          return true;
        });
        (void)s;
      }
      (void)txn->Commit();
      txn.reset();
      snapshot_worker_->Quiesce();
    }
    for (const auto& [table, key] : stale) {
      WriteRecord w{table, key, {}, true};
      (void)db_->ApplyReplicated(replayer_.worker_locked(), w, snap.at.epoch, snap.at.ts);
    }
    for (const SnapshotWrite& sw : snap.writes) {
      WriteRecord w{sw.table, sw.key, sw.value, false};
      (void)db_->ApplyReplicated(replayer_.worker_locked(), w, snap.at.epoch, snap.at.ts);
    }
    replayer_.QuiesceLocked();
    replayer_.RestartAfterSnapshotLocked(snap);
    acceptor_.Reset(adopted, max_promised);
    if (newest && control_.Learn(newest)) member_.Know(member_.ConfigOf(newest));
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
    control_.Adopt(vote);
    replayer_.ResumeLocked();  // the log after the snapshot may be here already
  }
  replayer_.Notify();
  CheckpointAfterTransfer(snap);
  SetDataLoss("");
  {
    std::lock_guard<std::mutex> g(lmu_);
    deposed_epoch_ = deposed_max_ts_ = 0;
    for (auto& s : lstreams_) s->orphan.store(false);
  }
  member_.dirty.store(false);
  member_.needs_transfer.store(false);
  member_.voting.store(true);
  member_.role.store(Role::kFollower);
  state_transfers_.fetch_add(1);
  if (newest && newest->leader_id != opts_.id) LearnLeader(newest->record.epoch, newest->leader_id, "");
  std::fprintf(stderr, "rolis-repl %u: state transfer done: %zu keys at %s, votes of %zu members adopted\n", opts_.id,
               snap.writes.size(), KeyStr(snap.at).c_str(), oks.size());
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
  st.state_transfers = state_transfers_.load();
  st.leader_snapshots = leader_snapshots_.load();
  st.durable = durability_ != nullptr;
  if (durability_) st.durability = durability_->Describe();
  {
    std::lock_guard<std::mutex> g(data_loss_mu_);
    st.data_loss_suspected = !data_loss_.empty();
    st.data_loss_reason = data_loss_;
  }
  {
    const MemberState::Leader leader = member_.leader();
    st.epoch = leader.epoch;
    st.leader_id = leader.id;
    st.leader_address = leader.client_address;
  }
  st.streams.resize(opts_.streams);
  bool leading = false;
  {
    std::lock_guard<std::mutex> g(lmu_);
    if (lmode_ == LMode::kOpen) {
      leading = true;
      st.watermark = g_;
      st.replayed = g_;
      for (uint32_t t = 0; t < opts_.streams; t++) {
        const LStream& s = *lstreams_[t];
        st.streams[t].committed_slot = s.c_end;
        st.streams[t].committed_key = s.c_key;
        st.streams[t].replayed_key = s.c_key;
      }
    }
  }
  if (!leading) replayer_.FillStatus(&st);
  for (uint32_t t = 0; t < opts_.streams; t++) {
    st.streams[t].first_slot = acceptor_.first_slot(t);
    st.streams[t].next_slot = acceptor_.next_slot(t);
  }
  return st;
}

}  // namespace rolis::replication
