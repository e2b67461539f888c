// One member of a replicated Rolis cluster (docs/replication.md): the
// leader's per-worker streams and watermark, the follower's replay, the
// failover steps the admin API drives, the control stream's epoch
// decisions, and the catch-up of a member that restarted empty.
//
// Threads:
//   - workers call OnCommit (the CommitHook) holding their worker mutex;
//   - the leader loop closes timed-out batches, sends Accepts, takes
//     replies, advances G and completes the waiters;
//   - the replay loop applies what the leader's G covers (followers);
//   - the catch-up loop runs the start-up probe and state transfers;
//   - transport threads call the ReplicaHandler methods;
//   - admin threads call PrepareFailover/DecideEpoch/OpenEpoch/Announce.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <set>
#include <memory>
#include <mutex>
#include <queue>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "acceptor.h"
#include "codec.h"
#include "member_calls.h"
#include "member_durability.h"
#include "member_state.h"
#include "membership.h"
#include "replayer.h"
#include "replay_apply.h"
#include "rolis/db.h"
#include "spsc.h"
#include "transport.h"

namespace rolis::replication {

struct ReplicaOptions {
  uint32_t id = 1;
  // The members the cluster started with (--peers), this one included: the
  // configuration until a decided record names another (membership.h).
  std::vector<uint32_t> members;
  std::map<uint32_t, std::string> addresses;  // their replication addresses, if known
  uint32_t streams = 1;           // worker streams (the same on every member)
  uint32_t batch_size = 50;       // a batch closes at this many transactions (rolisd: --batch-size) ...
  std::chrono::microseconds batch_timeout{1000};  // ... or after this long (idle: an empty batch)
  // An idle stream's empty batch (heartbeat) goes out every batch_timeout
  // only while a commit of this epoch is above G or a read waits for G;
  // otherwise every idle_heartbeat (followers' failure detection must allow
  // for it: the built-in election sets it well below its timeout). Each
  // costs every follower a message, a reply and a few thread wakeups per
  // stream, which an idle cluster of 8 streams paid 160 times a second at
  // 100 ms.
  std::chrono::milliseconds idle_heartbeat{250};
  uint32_t max_inflight = 64;     // per stream: batches beyond the majority-accepted prefix
  uint32_t peer_window = 64;      // per stream and peer: batches sent and not acknowledged
  std::chrono::milliseconds retransmit{100};   // resend what a peer has not acknowledged
  std::chrono::milliseconds rpc_timeout{2000};  // Promise, Control, Snapshot calls
  std::chrono::milliseconds open_timeout{5000};  // OpenEpoch waits this long for a majority
  std::chrono::milliseconds live_window{3000};   // a peer silent longer no longer holds back compaction
  // A peer further behind than either bound (per stream) no longer holds
  // back compaction: it catches up by state transfer.
  uint64_t max_log_slots = 20000;
  uint64_t max_log_bytes = uint64_t{256} << 20;
  uint64_t compact_every = 64;     // compact once this many slots can go
  // Per stream, the leader keeps its newest slots whatever the peers say, up
  // to whichever bound comes first. In bytes too: TPC-C batches of 50 are
  // ~125 KB, so 4096 slots would hold half a gigabyte, all freshly faulted.
  uint64_t min_retained = 4096;
  uint64_t min_retained_bytes = uint64_t{16} << 20;
  std::string client_address;      // announced to followers (redirects)
  // Start-up probe: find out from the other members whether this member
  // restarted empty (then it catches up by state transfer before it votes).
  bool probe_at_start = true;
  // Clock of commit timestamps (see Clock below); default: CLOCK_MONOTONIC
  // based bounds set by the caller through SetClock.
};

// Bounds of the engine's commit-timestamp clock: floor() is at or below
// every ts a worker may assign from now on, ceiling() at or above every ts
// assigned so far. (The engine's ts is (clock ticks << 8) | worker.)
struct TsClock {
  std::function<uint64_t()> floor;
  std::function<uint64_t()> ceiling;
};
// The engine's clock is CLOCK_MONOTONIC nanoseconds since the Database was
// opened. Reading CLOCK_MONOTONIC just before and just after Open gives
// bases between which the engine's lies: ticks from the later base are a
// floor, ticks from the earlier one a ceiling.
TsClock MonotonicTsClock(uint64_t nanos_before_open, uint64_t nanos_after_open);
uint64_t MonotonicNanos();

// Completion of an AwaitWatermark: ok, or not (the member stopped leading
// before G passed the key; the transaction's outcome is unknown).
class WatermarkWaiter {
 public:
  virtual ~WatermarkWaiter() = default;
  virtual void Done(bool ok, const std::string& why) = 0;
};

struct StreamStatus {
  uint64_t first_slot = 0, next_slot = 0, committed_slot = 0;
  LogKey committed_key{}, replayed_key{};
};
struct ReplicaStatus {
  uint32_t id = 0;
  Role role = Role::kFollower;
  uint64_t epoch = 0;           // the epoch this member is in (its leader's)
  uint64_t promised_epoch = 0;
  LogKey watermark{};           // G as this member knows it
  LogKey replayed{};
  uint32_t leader_id = 0;
  std::string leader_address;
  DecidedPtr decided;
  std::vector<StreamStatus> streams;
  uint64_t config = 0;          // the configuration in force (membership.h) ...
  std::vector<MemberAddr> members;  // ... and its voting members
  bool dirty = false;           // holds commits a failover discarded: needs a state transfer
  uint64_t log_bytes = 0;
  uint64_t state_transfers = 0;
  uint64_t leader_snapshots = 0;  // snapshots it served while leading (its writes paused)
  // Durability (docs/replication.md, "Durability").
  bool durable = false;         // a data directory keeps its votes
  std::string durability;       // what it recovered and checkpointed
  bool data_loss_suspected = false;
  std::string data_loss_reason;
};

struct PrepareResult {
  Decided proposed;                 // (new epoch, V') with leader and G'
  std::vector<uint32_t> promised_by;
};

class Replica final : public CommitHook, public ReplicaHandler {
 public:
  // `transport` must outlive the Replica.
  Replica(ReplicaOptions options, Transport* transport, TsClock clock);
  ~Replica() override;

  // The engine to replay into and the mutex each worker's user holds around
  // every transaction on it (the leader loop try-locks it to close a batch
  // on timeout: no commit can be half done while it holds it). Call before
  // Start, after the Database is open.
  void Attach(Database* db, std::vector<std::mutex*> worker_mutexes);
  // Aborts the open read-write client transactions and quiesces the workers;
  // called with every worker's mutex held (server::Replicator::SetSnapshotEpochUnpinner).
  // Before Start.
  void SetSnapshotEpochUnpinner(std::function<size_t()> f) { unpin_snapshot_epoch_ = std::move(f); }
  void RegisterStream(WorkerId worker, uint32_t stream);
  void Start();
  void Stop();

  // CommitHook (the worker's thread, worker mutex held).
  void OnCommit(WorkerId worker, uint64_t commit_ts, const CommittedWrites& writes) override;

  Role role() const { return member_.role.load(std::memory_order_acquire); }
  uint64_t epoch() const;
  std::string leader_client_address() const;
  // On the open leader: G covers (epoch, ts) of this epoch, or ts is of
  // another member's clock (an older epoch, at or below G'). On a caught-up
  // follower: always (it only holds what a leader's G covered). Otherwise
  // (candidate, catching up): never, and AwaitWatermark fails.
  bool WatermarkCovers(uint64_t ts) const;
  // True when covered now; otherwise `w` is completed later, exactly once,
  // from another thread.
  bool AwaitWatermark(uint64_t commit_ts, WatermarkWaiter* w);
  // A read on the leader must not show what a failover could discard: the
  // ts that G must pass before such a read is answered (every version of
  // this epoch installed so far is at or below it).
  uint64_t ReadFence() const { return clock_.ceiling(); }
  ReplicaStatus GetStatus() const;
  // Time the workers spent waiting for room in their stream's ring of
  // closed batches (flow control: a majority falling behind), in total.
  uint64_t flow_control_wait_nanos() const { return flow_wait_nanos_.load(std::memory_order_relaxed); }
  // When this member last took an accept from an open leader, or promised
  // another candidate a newer epoch (or started).
  SteadyClock::time_point last_leader_contact() const { return member_.last_leader_contact(); }

  // Admin failover steps (docs/replication.md). Errors: kFailedPrecondition
  // (this member cannot do it now; the message says why), kAborted (a newer
  // epoch won), kInternal with "unavailable" (no majority reachable).
  Status PrepareFailover(uint64_t new_epoch, const Decided& last_decided, PrepareResult* out);
  Status DecideEpoch(const Decided& record, uint64_t expected_previous, bool* decided, DecidedPtr* current);
  Status OpenEpoch(const Decided& record, LogKey* watermark);
  Status AnnounceLeader(const Decided& record, const std::string& leader_client_address);
  // The built-in election gives up its own PrepareFailover of `epoch` (its
  // record was not decided): this member stops being a candidate, so that
  // it follows whoever won. No effect once OpenEpoch has taken the record.
  void AbandonCandidacy(uint64_t epoch);

  // Membership (docs/replication.md, "Membership"), asked of the open
  // leader: moves to `target`, which must differ from the configuration in
  // force by one member (CheckMembershipChange). A new member first catches
  // up (it is sent the log, and catches up by state transfer) and must hold
  // every stream's log within `timeout`; then the next configuration is
  // decided on the control stream, and the call returns once a majority of
  // it holds the whole log. The same membership again returns at once.
  // Errors: kInvalidArgument, kFailedPrecondition (not the leader; removing
  // itself), kAborted (a newer epoch, or another change, was decided),
  // kInternal "unavailable: ..." (the new member did not catch up: nothing
  // changed; or no majority answered: retry the same request).
  Status ChangeMembership(const std::vector<MemberAddr>& target, std::chrono::milliseconds timeout, DecidedPtr* now);
  // The configuration in force as this member knows it.
  std::vector<MemberAddr> Configuration() const { return member_.ConfigOf(Latest()); }

  // ReplicaHandler.
  AcceptReply HandleAccept(const AcceptMsg& m) override;
  PromiseReply HandlePromise(const PromiseMsg& m) override;
  ControlReply HandleControl(const ControlMsg& m) override;
  SnapshotReply HandleSnapshot(const SnapshotMsg& m) override;
  void OnAcceptReply(uint32_t peer, const AcceptReply& r) override;
  void OnLinkReset(uint32_t peer, uint32_t stream) override;

  // Validates an Accept from the wire (stream, kinds, payload); empty when fine.
  std::string Validate(const AcceptMsg& m) const;

  const ReplicaOptions& options() const { return opts_; }

  // Durability (docs/replication.md, "Durability"; replica_durable.cc).
  // After Attach, before Start: the member starts from what its data
  // directory held. The store holds `checkpoint`'s writes already (null:
  // none); `restore` loads the recovered acceptor and control state; then
  // the journal is set on the acceptors and the replayer stands after the
  // checkpoint. A member that had state votes at once (no start-up probe).
  struct DiskStart {
    bool had_state = false;
    const SnapshotReply* checkpoint = nullptr;
    std::function<void(Acceptor*, ControlAcceptor*)> restore;
  };
  void StartFromDisk(MemberDurability* durability, const DiskStart& start);
  void SettleAccepts(const std::vector<AcceptedRef>& accepted, std::vector<AcceptReply>* replies) override;

 private:
  struct PeerState;
  struct LStream;
  struct Pending;
  struct Waiter {
    uint64_t ts;
    WatermarkWaiter* w;
    bool operator>(const Waiter& o) const { return ts > o.ts; }
  };
  enum class LMode { kIdle, kOpening, kOpen };

  // Majority of the members the cluster started with (the start-up probe).
  size_t majority() const { return opts_.members.size() / 2 + 1; }
  int PeerPos(uint32_t id) const;  // under lmu_

  // Membership.
  void EnsurePeerLocked(uint32_t id);                  // under lmu_
  void RefreshPeersLocked();                           // under lmu_: who is sent to
  // Single-decree Paxos in the control-stream instance after `prev` among
  // the members of its configuration; *chosen is what the instance chose.
  Status ProposeNext(const DecidedPtr& prev, const DecidedPtr& value, DecidedPtr* chosen);
  bool LogHeldSince(const std::vector<uint64_t>& mark);  // c_end >= mark on every stream

  // Leader.
  void LeaderLoop();
  void LeaderTick(SteadyClock::time_point now);  // under lmu_
  void CloseBatch(LStream& s, uint64_t epoch, bool wait);  // worker mutex held
  void MaybeFlush(uint32_t t, LStream& s, SteadyClock::time_point now, bool waited_on);
  void PushHeartbeat(LStream& s, uint64_t epoch);  // worker mutex held
  // The failover walk's reach and last barrier over the slots below `from`.
  void WalkReachBelow(const LStream& s, uint64_t from, LogKey* reach, uint64_t* barrier) const;  // under lmu_
  bool WaitedOnLocked();  // under lmu_: a commit above G, or a waiter
  void AppendToLog(uint32_t t, LStream& s, BatchPtr b);  // under lmu_
  void SendWindow(uint32_t t, LStream& s, size_t p, SteadyClock::time_point now);  // under lmu_
  void HandleReply(uint32_t peer, const AcceptReply& r, SteadyClock::time_point now);  // under lmu_
  void Recompute(SteadyClock::time_point now);  // under lmu_
  void OpenNow();                                // under lmu_
  void StepDownLocked(uint64_t newer_epoch, const char* why);  // under lmu_
  void StepDown(uint64_t newer_epoch, const char* why);
  void CheckDeposed();
  void FailWaiters(const std::string& why);
  void CompleteWaiters();
  bool DrainLeader(std::chrono::milliseconds timeout);

  // Follower.
  void LearnLeader(uint64_t epoch, uint32_t leader, const std::string& addr);
  // After this member's pending candidacy was dropped: a candidate becomes a
  // follower (catching up if it holds discarded commits).
  void LeaveCandidateRole();
  void LearnRecord(const DecidedPtr& d);
  void OnNewRecord(const DecidedPtr& d);
  // The store does not follow the log: stop serving and voting for itself,
  // and catch up by state transfer.
  void StartStateTransfer();
  DecidedPtr Latest() const { return control_.latest(); }

  // Catch-up.
  void CatchUpLoop();
  Status Probe();  // OK: a new cluster (voting now) or caught up by state transfer
  Status TransferState();
  // Snapshots: a caught-up follower's, or (when no follower can give one)
  // the open leader's, which pauses its writes while it is fixed.
  SnapshotReply FollowerSnapshot();
  SnapshotReply LeaderSnapshot();
  // Until the engine's read-only snapshots cover every write made so far
  // (false after `limit`: a transaction stays open).
  bool AwaitEngineSnapshot(std::chrono::milliseconds limit);
  Status ScanStore(Transaction* txn, std::vector<SnapshotWrite>* out);  // every table, in key order

  // Durability (replica_durable.cc).
  void OnDurable(uint32_t stream);  // the journal's listener (its sync thread)
  void RefreshOwnDurablePrefixLocked();  // under lmu_: the leader's own vote counts once durable
  // Under lmu_: AcceptLocal refused the leader's own vote: a newer promise,
  // or the disk (the member stops acknowledging and says why).
  void OwnVoteRefusedLocked();
  void CheckpointAfterTransfer(const SnapshotReply& snap);
  void MaybeCheckpoint();  // catch-up loop, when idle: a follower's periodic checkpoint
  // The start-up probe's view of data loss: the cluster had data (a member
  // holds state) but this member and enough others came back empty that no
  // majority holds it.
  void NoteProbe(bool others_know, size_t empty_members);
  void SetDataLoss(const std::string& why);  // empty: none

  // The ts floor: the clock's, tightened by what commits tell of the engine's
  // clock base (a commit's ts >> 8 is at most the engine's ticks, plus one).
  uint64_t Floor() const;
  void ObserveTs(uint64_t ts);

  ReplicaOptions opts_;
  Transport* transport_;
  TsClock clock_;
  std::atomic<uint64_t> base_upper_{UINT64_MAX};
  Database* db_ = nullptr;
  std::unique_ptr<Worker> snapshot_worker_;  // used under snap_mu_
  std::mutex snap_mu_;
  std::vector<std::mutex*> worker_mu_;
  std::function<size_t()> unpin_snapshot_epoch_;
  std::vector<std::unique_ptr<std::mutex>> idle_stream_mu_;  // for streams without a worker
  std::array<std::atomic<uint32_t>, 1024> stream_of_worker_{};

  MemberState member_;
  MemberCalls calls_;
  Acceptor acceptor_;
  Replayer replayer_;
  ControlAcceptor control_;

  MemberDurability* durability_ = nullptr;  // set by StartFromDisk, before Start
  mutable std::mutex data_loss_mu_;  // a leaf
  std::string data_loss_;
  SteadyClock::time_point last_checkpoint_try_{};  // the catch-up thread's

  std::atomic<uint64_t> state_transfers_{0};
  std::atomic<uint64_t> leader_snapshots_{0};
  std::atomic<uint64_t> flow_wait_nanos_{0};  // workers waiting for room in their ring

  // Lock order: op_mu_, lmu_, the replayer's, then one leaf (pending_mu_, the member state's).
  std::mutex pending_mu_;  // a leaf: pending_
  std::mutex op_mu_;  // one admin failover step at a time
  std::mutex ctl_mu_;  // one control-stream proposal at a time
  std::mutex member_mu_;  // one membership change at a time
  std::unique_ptr<Pending> pending_;

  // Leader state (lmu_).
  mutable std::mutex lmu_;
  std::condition_variable loop_cv_;
  bool loop_kick_ = false;
  bool waited_on_ = false;  // G was waited for lately: heartbeats and ticks are fast
  SteadyClock::time_point last_waited_on_{};
  LMode lmode_ = LMode::kIdle;
  uint64_t led_epoch_ = 0;           // last epoch this member led (opened)
  uint64_t deposed_epoch_ = 0;       // led and stepped down: its commits are checked against the next record
  uint64_t deposed_max_ts_ = 0;
  uint64_t lepoch_ = 0;
  DecidedPtr ldecided_;
  // The configurations the leader counts majorities in: one, or while a
  // membership change settles the old and the new one together.
  std::vector<std::vector<uint32_t>> lcfgs_;
  std::set<uint32_t> learners_;  // new members being caught up: sent to, not counted
  LogKey g_{};
  std::vector<std::unique_ptr<LStream>> lstreams_;
  std::atomic<uint64_t> covered_epoch_{0};  // G covers (covered_epoch_, covered_ts_)
  std::atomic<uint64_t> covered_ts_{0};
  std::atomic<bool> open_{false};
  std::condition_variable open_cv_;
  SteadyClock::time_point last_compact_{};

  std::mutex inbox_mu_;
  std::vector<std::pair<uint32_t, AcceptReply>> inbox_;
  std::vector<std::pair<uint32_t, uint32_t>> resets_;

  std::mutex wmu_;
  std::priority_queue<Waiter, std::vector<Waiter>, std::greater<Waiter>> waiters_;
  std::vector<std::pair<WatermarkWaiter*, std::string>> failed_;  // to complete with failure
  std::atomic<bool> kick_{false};  // the commit path wakes the loop without a lock
  void WakeLoop() {
    kick_.store(true, std::memory_order_release);
    loop_cv_.notify_one();
  }
  static constexpr size_t kWakeBacklog = 4;  // closed batches waiting that wake a fast-ticking loop
  static constexpr uint32_t kTimeoutCheckEvery = 8;  // commits between a worker's checks of its batch's age
  // A resting leader's loop ticks at most this far apart (its heartbeats
  // are idle_heartbeat apart; a commit or a read wakes it at once).
  static constexpr std::chrono::milliseconds kMaxRestTick{25};
  std::atomic<bool> resting_{false};  // the loop ticks slowly: a batch's first commit wakes it

  std::mutex catch_mu_;
  std::condition_variable catch_cv_;
  std::thread leader_thread_, catch_thread_;
  bool started_ = false;
};

}  // namespace rolis::replication
