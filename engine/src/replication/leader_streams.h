// The leader's side of replication (docs/replication.md, "Normal operation"
// and "How the leader runs the streams"): the commit path the workers call,
// the leader loop that closes batches, sends Accepts, takes replies,
// advances the watermark G and compacts, the waiters for G, and the
// opening and stepping down of an epoch this member leads.
//
// Invariants kept here:
//   - I1 (fencing): a slot is appended only while this member's own
//     acceptor takes it at the led epoch; a reply or promise of a newer
//     epoch steps the leader down.
//   - I3 (no acknowledged transaction is lost): G is the minimum over the
//     streams of the majority-accepted prefix's key, counted in a majority
//     of every configuration in force (membership.h), and waiters are
//     completed only up to G.
//   - I4 (states only grow): an epoch opens for writes only once every
//     stream's re-proposals and barrier are on a majority ("Failover").
//   - Compaction ("Compaction"): a slot goes only once every live member
//     has replayed it, or is too far behind (it catches up by transfer).
//
// Threads: workers call OnCommit holding their worker mutex; the leader
// loop (its own thread) runs everything else under mu_; admin threads call
// the failover and membership steps.
//
// Lock order: a worker mutex, then mu_ (OpenNow takes the worker mutexes
// under mu_ only while no worker pushes; a leader snapshot, holding them,
// only try-locks mu_), then the replayer's lock, then the leaf locks
// (inbox_mu_, the waiters', the member state's, the acceptor's).
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "acceptor.h"
#include "leader_stream.h"
#include "member_durability.h"
#include "member_state.h"
#include "replayer.h"
#include "replica_options.h"
#include "replica_status.h"
#include "rolis/db.h"
#include "transport.h"
#include "watermark_waiters.h"

namespace rolis::replication {

// The worker mutexes a caller holds (every distinct one, locked in order);
// unlocked by Release or when it goes.
class HeldWorkers {
 public:
  explicit HeldWorkers(const std::vector<std::mutex*>& mutexes);
  ~HeldWorkers() { Release(); }
  HeldWorkers(const HeldWorkers&) = delete;
  HeldWorkers& operator=(const HeldWorkers&) = delete;
  void Release();

 private:
  std::vector<std::mutex*> held_;
};

class LeaderStreams {
 public:
  // `on_stepped_down` runs (no lock held) after this member stopped leading.
  LeaderStreams(const ReplicaOptions& opts, TsClock clock, MemberState* member, Acceptor* acceptor,
                Transport* transport, Replayer* replayer, std::function<void()> on_stepped_down);
  ~LeaderStreams();

  // Before Start (see Replica::Attach).
  void Attach(Database* db, std::vector<std::mutex*> worker_mutexes);
  void RegisterStream(WorkerId worker, uint32_t stream);
  void Start();
  // Stop: wakes the loop and joins it, then fails every waiter.
  void Wake();
  void Join();
  void Shutdown();

  // The commit path (the worker's thread, worker mutex held).
  void OnCommit(WorkerId worker, uint64_t commit_ts, const CommittedWrites& writes);

  // Watermark waiters (see Replica).
  bool WatermarkCovers(uint64_t ts) const;
  bool AwaitWatermark(uint64_t commit_ts, WatermarkWaiter* w);
  uint64_t ReadFence() const { return clock_.ceiling(); }
  uint64_t flow_control_wait_nanos() const { return flow_wait_nanos_.load(std::memory_order_relaxed); }

  // Replies and link resets from the transport: to the loop.
  void OnAcceptReply(uint32_t peer, const AcceptReply& r);
  void OnLinkReset(uint32_t peer, uint32_t stream);

  // --- Epochs (driven by FailoverCoordinator) ---
  bool IsOpen() const;
  // This member leads (opening or open) an epoch below `epoch`.
  bool LeadsBelow(uint64_t epoch) const;
  // Stops leading (if it does): the store keeps the majority-accepted
  // prefix, replay goes on from there, and every waiter fails.
  void StepDown(uint64_t newer_epoch, const char* why);
  // Drains an open leader before a failover: no new writes (the member
  // becomes a candidate), every buffer closed, and G covering every commit
  // of the epoch (false: not within `timeout`, or it stopped leading).
  bool Drain(std::chrono::milliseconds timeout);
  // The epoch this member led and stepped down from (0: none), and the
  // largest ts committed in it: its commits are checked against the next
  // record.
  std::pair<uint64_t, uint64_t> Deposed() const;
  // The commits of the deposed epoch against `d`, a record of a later
  // epoch: false if some did not survive (the store needs a transfer).
  // Forgets the deposed epoch once a later record is known.
  bool DeposedCommitsSurvive(const DecidedPtr& d);
  // Not leading; *epoch: the newest epoch it led or was deposed from.
  bool Idle(uint64_t* epoch) const;
  // A state transfer replaced the store: nothing deposed or orphaned remains.
  void ForgetDeposed();
  // Opening `record`: the log of each stream is its re-proposals (ending
  // with a barrier) above the base the promises gave; this member's own
  // acceptor holds them up to self_need. Opens once all are on a majority.
  struct Opening {
    DecidedPtr record;
    std::vector<StreamBase> bases;                // per stream
    std::vector<std::vector<Slot>> repropose;     // per stream
    std::vector<uint64_t> self_need;              // per stream
  };
  void BeginOpening(const Opening& o);
  // Waits (up to open_timeout) until this member leads epoch `e`; *watermark
  // is G then. Aborted if it stepped down, unavailable if not yet open.
  Status AwaitOpen(uint64_t e, LogKey* watermark);
  // The same record again while this member opens or leads it: true, and
  // *st is what AwaitOpen says.
  bool AwaitReopen(const Decided& record, LogKey* watermark, Status* st);

  // --- Membership (driven by MembershipChanges) ---
  uint64_t open_epoch() const;  // the epoch while open, else 0
  std::vector<uint64_t> NextSlots() const;  // per stream: the next slot to append
  // A majority of every counted configuration holds every stream up to `mark`.
  bool LogHeldSince(const std::vector<uint64_t>& mark) const;
  // Counts only `config` from now on (the change settled), if it still leads `e`.
  Status CountOnly(uint64_t e, const std::vector<uint32_t>& config);
  // The configuration being joined, while two are counted (else empty).
  std::vector<uint32_t> JoiningConfig() const;
  // A new member is sent the log (not counted); returns NextSlots().
  std::vector<uint64_t> AddLearner(uint32_t id);
  void DropLearner(uint32_t id);
  // Whether learner `id` holds every stream up to `want`: *behind says what
  // it lacks (empty: nothing). Aborted (and it is no longer a learner) if
  // this member no longer leads `e`.
  Status LearnerProgress(uint64_t e, uint32_t id, const std::vector<uint64_t>& want, std::string* behind);
  // Counts both configurations (joint); returns NextSlots().
  std::vector<uint64_t> CountJoint(const std::vector<uint32_t>& from, const std::vector<uint32_t>& to);
  // The chosen record of the change, carried by the accepts from now on, if
  // it still leads `e`: returns a slot of stream 0 sent with it (0: not leading).
  uint64_t CarryRecord(uint64_t e, const DecidedPtr& chosen, const std::vector<uint32_t>& from,
                       const std::vector<uint32_t>& to);
  // Peer `id` holds stream 0 up to `slot` (or is not sent to).
  bool PeerHolds(uint32_t id, uint64_t slot) const;

  // --- Snapshots ---
  // Fixes a leader snapshot's position (see SnapshotSource::LeaderSnapshot):
  // every worker held (in *held), its batch closed, G covering every commit
  // of the epoch. On failure, what to answer (the workers are released).
  std::string HoldForSnapshot(SnapshotReply* r, std::unique_ptr<HeldWorkers>* held);
  // Why a hold of the workers would wait on a stalled log: a stream whose
  // ring and window of slots not yet on a majority are full, with no slot
  // newly on a majority for live_window (empty: none).
  std::string StalledWithoutMajority() const;

  // Status of an open leader (false: not open).
  bool FillStatus(ReplicaStatus* st) const;

  // --- Durability (leader_durable.cc; docs/replication.md, "Durability") ---
  // The acceptor has a journal: the leader's own vote counts once durable.
  // Before Start.
  void SetDurable(bool on) { durable_ = on; }
  // The journal's listener: a stream's durable position moved.
  void OnDurable();
  // Where this open leader's next checkpoint derived from its log stands:
  // G and, per stream, the end of the majority-accepted prefix that is
  // durable on its own disk (empty; else why not now).
  std::string CheckpointPosition(LogCheckpointPosition* pos) const;
  // A snapshot at `h` (a checkpoint's header) can serve a state transfer:
  // it is of the epoch this member leads, open, and every stream's log
  // still holds the slots from its next_slot on.
  bool LogFollows(const SnapshotReply& h) const;

 private:
  enum class Mode { kIdle, kOpening, kOpen };

  // Commit path (leader_commit_path.cc).
  LeaderStream& StreamOf(WorkerId worker);
  void CloseBatch(LeaderStream& s, uint64_t epoch, bool wait);  // worker mutex held
  void PushHeartbeat(LeaderStream& s, uint64_t epoch);          // worker mutex held
  void MaybeFlush(uint32_t t, LeaderStream& s, SteadyClock::time_point now, bool waited_on);
  // The ts floor: the clock's, tightened by what commits tell of the
  // engine's clock base (a commit's ts >> 8 is at most the engine's ticks, plus one).
  uint64_t Floor() const;
  void ObserveTs(uint64_t ts);
  void WakeLoop() {
    wake_.store(true, std::memory_order_release);
    loop_cv_.notify_one();
  }

  // The loop (leader_loop.cc), under mu_.
  void Loop();
  void Tick(SteadyClock::time_point now);
  bool WaitedOnLocked();  // a commit above G, or a waiter
  void PullClosedBatches(uint32_t t, LeaderStream& s);
  void AppendToLog(uint32_t t, LeaderStream& s, BatchPtr b);
  void SendWindow(uint32_t t, LeaderStream& s, size_t p, SteadyClock::time_point now);
  void HandleReply(uint32_t peer, const AcceptReply& r, SteadyClock::time_point now);
  void AdvanceWatermark();
  // Durability (leader_durable.cc), under mu_.
  static uint64_t HeldFrom(const AcceptReply& r) { return r.held_from ? std::max(r.held_from, r.need_from) : r.need_from; }
  void RefreshOwnDurablePrefixLocked();  // the own vote counts once durable
  // AcceptLocal refused the own vote: a newer promise, or the disk (the
  // member stops acknowledging and says why).
  void OwnVoteRefusedLocked();
  void Compact(SteadyClock::time_point now);
  uint64_t CompactBelow(const LeaderStream& s, SteadyClock::time_point now) const;

  // Epochs (leader_epochs.cc), under mu_.
  void OpenNow();
  void StepDownLocked(uint64_t newer_epoch, const char* why);
  Status AwaitOpenLocked(uint64_t e, LogKey* watermark, std::unique_lock<std::mutex>& lk);
  // The failover walk's reach and last barrier over the slots below `from`.
  void WalkReachBelow(const LeaderStream& s, uint64_t from, LogKey* reach, uint64_t* barrier) const;
  void FinishStepDown();  // no lock held: waiters, then on_stepped_down_
  int PeerPos(uint32_t id) const;
  void EnsurePeerLocked(uint32_t id);
  void RefreshPeersLocked();  // who is sent to: counted configurations and learners
  std::vector<uint64_t> NextSlotsLocked() const;

  static constexpr size_t kWakeBacklog = 4;  // closed batches waiting that wake a fast-ticking loop
  static constexpr uint32_t kTimeoutCheckEvery = 8;  // commits between a worker's checks of its batch's age
  // A resting leader's loop ticks at most this far apart (its heartbeats
  // are idle_heartbeat apart; a commit or a read wakes it at once).
  static constexpr std::chrono::milliseconds kMaxRestTick{25};

  const ReplicaOptions& opts_;
  const TsClock clock_;
  MemberState* const member_;
  Acceptor* const acceptor_;
  Transport* const transport_;
  Replayer* const replayer_;
  const std::function<void()> on_stepped_down_;

  // Set by Attach.
  Database* db_ = nullptr;
  std::vector<std::mutex*> worker_mutexes_;  // per stream
  std::vector<std::unique_ptr<std::mutex>> idle_stream_mu_;  // for streams without a worker
  std::array<std::atomic<uint32_t>, 1024> stream_of_worker_{};

  // Lock-free, for the commit path and readers.
  std::atomic<uint64_t> engine_base_upper_{UINT64_MAX};  // bound on the engine's clock base
  std::atomic<uint64_t> flow_wait_nanos_{0};  // workers waiting for room in their ring
  std::atomic<uint64_t> covered_epoch_{0};  // G covers (covered_epoch_, covered_ts_)
  std::atomic<uint64_t> covered_ts_{0};
  std::atomic<bool> open_{false};
  std::atomic<bool> wake_{false};     // the commit path wakes the loop without a lock
  std::atomic<bool> resting_{false};  // the loop ticks slowly: a batch's first commit wakes it

  WatermarkWaiters waiters_{&open_, &covered_ts_};

  // Replies and resets from the transport, to the loop.
  std::mutex inbox_mu_;
  std::vector<std::pair<uint32_t, AcceptReply>> replies_;
  std::vector<std::pair<uint32_t, uint32_t>> resets_;

  // Leader state (mu_).
  mutable std::mutex mu_;
  std::condition_variable loop_cv_;
  std::condition_variable open_cv_;
  bool loop_kick_ = false;
  bool waited_on_ = false;  // G was waited for lately: heartbeats and ticks are fast
  SteadyClock::time_point last_waited_on_{};
  SteadyClock::time_point last_compact_{};
  Mode mode_ = Mode::kIdle;
  uint64_t epoch_ = 0;           // the epoch it opens or leads (0: idle)
  DecidedPtr record_;            // that epoch's decided record (the newest, after membership changes)
  uint64_t led_epoch_ = 0;       // last epoch this member led (opened)
  uint64_t deposed_epoch_ = 0;   // led and stepped down: its commits are checked against the next record
  uint64_t deposed_max_ts_ = 0;
  // The configurations the leader counts majorities in: one, or while a
  // membership change settles the old and the new one together.
  std::vector<std::vector<uint32_t>> counted_configs_;
  std::set<uint32_t> learners_;  // new members being caught up: sent to, not counted
  LogKey watermark_{};           // G
  std::vector<std::unique_ptr<LeaderStream>> streams_;
  bool durable_ = false;  // set before Start

  std::thread thread_;
};

}  // namespace rolis::replication
