// One member of a replicated Rolis cluster (docs/replication.md). Replica is
// the coordinator: it owns the acceptors and one object per role, routes
// the transport's messages and the admin API's calls to them, and learns
// the leader and the decided records that every role depends on.
//
// The roles, each with its own state and lock (their headers say which
// invariants of docs/replication.md they keep):
//   - LeaderStreams (leader_streams.h): the commit path, the leader loop,
//     G and the waiters for it (WatermarkWaiters), opening and stepping down;
//   - Replayer (replayer.h): follower replay up to the leader's G;
//   - SnapshotSource and StateTransfer (snapshot_source.h,
//     state_transfer.h): snapshots served, the start-up probe and catch-up;
//   - FailoverCoordinator (failover_coordinator.h): prepare, plan, open;
//   - ControlStream (control_stream.h): epoch records and configurations
//     decided on the control stream;
//   - MembershipChanges (membership_changes.h): one member at a time;
//   - MemberState (member_state.h): role, flags, the leader followed, the
//     members known; MemberCalls (member_calls.h): fan-out to them.
//
// Threads:
//   - workers call OnCommit (the CommitHook) holding their worker mutex;
//   - the leader loop (LeaderStreams), the replay loop (Replayer) and the
//     catch-up loop (StateTransfer) each run on a thread of their own;
//   - transport threads call the ReplicaHandler methods;
//   - admin threads call PrepareFailover/DecideEpoch/OpenEpoch/Announce and
//     ChangeMembership.
//
// Lock order across the roles (a thread takes them in this order, and
// never holds one while waiting for a fan-out's replies except the first
// two): MembershipChanges' change lock, then FailoverCoordinator's step
// lock or ControlStream's proposal lock; then a worker mutex; the snapshot
// lock (SnapshotSource); the leader lock (LeaderStreams; a leader snapshot
// holding the worker mutexes only try-locks it); the replay lock
// (Replayer); and last the leaf locks (the waiters', the leader inbox, the
// pending candidacy, MemberState's, the acceptors', the fan-out's).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "acceptor.h"
#include "control_stream.h"
#include "failover_coordinator.h"
#include "leader_streams.h"
#include "member_calls.h"
#include "member_durability.h"
#include "member_state.h"
#include "membership.h"
#include "membership_changes.h"
#include "replayer.h"
#include "replica_options.h"
#include "replica_status.h"
#include "rolis/db.h"
#include "snapshot_source.h"
#include "state_transfer.h"
#include "transport.h"
#include "watermark_waiters.h"

namespace rolis::replication {

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
  void SetSnapshotEpochUnpinner(std::function<size_t()> f) { snapshots_.SetSnapshotEpochUnpinner(std::move(f)); }
  void RegisterStream(WorkerId worker, uint32_t stream);
  void Start();
  void Stop();

  // CommitHook (the worker's thread, worker mutex held).
  void OnCommit(WorkerId worker, uint64_t commit_ts, const CommittedWrites& writes) override {
    leader_.OnCommit(worker, commit_ts, writes);
  }

  Role role() const { return member_.role.load(std::memory_order_acquire); }
  uint64_t epoch() const;
  std::string leader_client_address() const;
  // On the open leader: G covers (epoch, ts) of this epoch, or ts is of
  // another member's clock (an older epoch, at or below G'). On a caught-up
  // follower: always (it only holds what a leader's G covered). Otherwise
  // (candidate, catching up): never, and AwaitWatermark fails.
  bool WatermarkCovers(uint64_t ts) const { return leader_.WatermarkCovers(ts); }
  // True when covered now; otherwise `w` is completed later, exactly once,
  // from another thread.
  bool AwaitWatermark(uint64_t commit_ts, WatermarkWaiter* w) { return leader_.AwaitWatermark(commit_ts, w); }
  // A read on the leader must not show what a failover could discard: the
  // ts that G must pass before such a read is answered (every version of
  // this epoch installed so far is at or below it).
  uint64_t ReadFence() const { return leader_.ReadFence(); }
  ReplicaStatus GetStatus() const;
  // Time the workers spent waiting for room in their stream's ring of
  // closed batches (flow control: a majority falling behind), in total.
  uint64_t flow_control_wait_nanos() const { return leader_.flow_control_wait_nanos(); }
  // When this member last took an accept from an open leader, or promised
  // another candidate a newer epoch (or started).
  SteadyClock::time_point last_leader_contact() const { return member_.last_leader_contact(); }

  // Admin failover steps (docs/replication.md). Errors: kFailedPrecondition
  // (this member cannot do it now; the message says why), kAborted (a newer
  // epoch won), kInternal with "unavailable" (no majority reachable).
  //
  // One decider per cluster (ReplicaOptions::decider; docs/replication.md,
  // "One decider per cluster"): under the operator, DecideEpoch is refused
  // (kFailedPrecondition) and so is this member's vote for a new epoch's
  // record on the control stream; under the control stream, OpenEpoch and
  // AnnounceLeader refuse any record but the newest the control stream
  // decided (ControlStream::CheckDecided; a refused announcement of a newer
  // epoch still makes a leader of an older one step down).
  Status PrepareFailover(uint64_t new_epoch, const Decided& last_decided, PrepareResult* out) {
    return failover_.PrepareFailover(new_epoch, last_decided, out);
  }
  Status DecideEpoch(const Decided& record, uint64_t expected_previous, bool* decided, DecidedPtr* current);
  Status OpenEpoch(const Decided& record, LogKey* watermark);
  Status AnnounceLeader(const Decided& record, const std::string& leader_client_address);
  // The built-in election gives up its own PrepareFailover of `epoch` (its
  // record was not decided): this member stops being a candidate, so that
  // it follows whoever won. No effect once OpenEpoch has taken the record.
  void AbandonCandidacy(uint64_t epoch) { failover_.AbandonCandidacy(epoch); }

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
  Status ChangeMembership(const std::vector<MemberAddr>& target, std::chrono::milliseconds timeout, DecidedPtr* now) {
    return membership_.Change(target, timeout, now);
  }
  // The configuration in force as this member knows it.
  std::vector<MemberAddr> Configuration() const { return member_.ConfigOf(Latest()); }

  // ReplicaHandler.
  AcceptReply HandleAccept(const AcceptMsg& m) override;
  PromiseReply HandlePromise(const PromiseMsg& m) override;
  ControlReply HandleControl(const ControlMsg& m) override;
  Status HandleSnapshot(const SnapshotMsg& m, SnapshotSink* sink) override;
  void OnAcceptReply(uint32_t peer, const AcceptReply& r) override { leader_.OnAcceptReply(peer, r); }
  void OnLinkReset(uint32_t peer, uint32_t stream) override { leader_.OnLinkReset(peer, stream); }

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
  // Test hook (docs/operations.md, "Durability", test hooks): this member
  // answers every snapshot request with an error, as a member that cannot
  // give one, so that a test can make the leader the only source.
  void RefuseSnapshotsForTest(bool on) { refuse_snapshots_for_test_.store(on); }
  uint64_t checkpoint_snapshots() const { return checkpoint_snapshots_.load(); }

 private:
  // Durability (replica_durable.cc).
  void CheckpointAfterTransfer(const ReceivedSnapshot& snap);
  // Writes the snapshot that `produce` streams into the checkpoint (as a
  // scan goes: SnapshotSource::Serve or ForCheckpoint; or from a received
  // snapshot) and logs the outcome as `what` (with `after` on success),
  // timed from `t0`; nothing if it was refused before it began.
  void StreamAndLogCheckpoint(const std::function<Status(SnapshotSink*)>& produce, SteadyClock::time_point t0,
                              const char* what, const char* after);
  void MaybeCheckpoint();  // the catch-up thread, when idle: the periodic checkpoint
  // The leader's checkpoint, derived from its disk (durable_member.h); on
  // failure why (ABORTED: not now; FAILED_PRECONDITION: the log since the
  // previous checkpoint cannot give it), logged as `what` once per reason.
  Status LeaderCheckpointFromLog(const char* what);
  // A state transfer served from the leader's newest checkpoint, derived
  // first if the one on disk is not of its epoch or the log no longer
  // follows it, into `sink`. *begun: whether the sink was begun (if not,
  // on an error, the leader's snapshot can still be served instead).
  Status LeaderCheckpointSnapshot(SnapshotSink* sink, bool* begun);
  // A member that came back empty and cannot catch up: when no majority
  // holds the cluster's data it says so (status and log).
  void NoteCannotCatchUp(size_t empty_members);
  void SetDataLoss(const std::string& why);  // empty: none
  void FillDurabilityStatus(ReplicaStatus* st) const;

  // After this member stopped leading: the record that followed the epoch
  // it led may be known already.
  void CheckDeposed();
  // A leader of `epoch` (and its client address, if known) was heard of: a
  // stale leader steps down, a candidacy for that epoch or an older one ends.
  void LearnLeader(uint64_t epoch, uint32_t leader, const std::string& addr);
  // A decided record (from an accept, a reply or the operator).
  void LearnRecord(const DecidedPtr& d);
  // A record newer than any known: its members can be called, the commits
  // of an epoch this member led are checked against it.
  void OnNewRecord(const DecidedPtr& d);
  DecidedPtr Latest() const { return control_.latest(); }

  ReplicaOptions opts_;
  Transport* transport_;
  Database* db_ = nullptr;
  bool started_ = false;

  // Declared in the order they are built: each role gets the ones above it.
  MemberState member_;
  MemberCalls calls_;
  Acceptor acceptor_;
  ControlAcceptor control_;
  Replayer replayer_;
  LeaderStreams leader_;
  SnapshotSource snapshots_;
  StateTransfer transfer_;
  ControlStream control_stream_;
  FailoverCoordinator failover_;
  MembershipChanges membership_;

  // Durability (replica_durable.cc).
  MemberDurability* durability_ = nullptr;  // set by StartFromDisk, before Start
  mutable std::mutex data_loss_mu_;  // a leaf
  std::string data_loss_;
  SteadyClock::time_point last_checkpoint_try_{};  // the catch-up thread's
  std::mutex checkpoint_log_mu_;  // a leaf: the last failure logged
  std::string last_checkpoint_error_;
  std::atomic<bool> refuse_snapshots_for_test_{false};
  std::atomic<uint64_t> checkpoint_snapshots_{0};  // state transfers served from a checkpoint
};

}  // namespace rolis::replication
