// Snapshots of this member's store (docs/replication.md, "Members that lose
// their memory"): the one it serves to a member that catches up, and the
// scan of its own keys that a state transfer needs. A caught-up follower
// gives one with replay held still; the open leader only when no follower
// can, pausing its writes while the position is fixed.
//
// Invariant kept here: a snapshot is a state a failover cannot undo. A
// follower's holds exactly what replay applied (a prefix of the key order at
// or below its leader's G: I5); a leader's, exactly the majority-accepted
// prefix of every stream (G covers every commit of the epoch when it is
// fixed). Each comes with the per-stream slot after it and the failover
// walk's reach over it, so that the receiver replays on from there.
//
// The writes go into a SnapshotSink as the scan reaches them (a peer's
// stream, a checkpoint file): the read-only transaction stays open, and the
// snapshot worker's lock held, until the sink has them all or fails.
//
// Lock order: mu_ (the snapshot worker) first, then a worker mutex, the
// leader's lock (only try-locked), the replayer's; a state transfer takes
// mu_ before it holds replay (StateTransfer::InstallSnapshot).
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "acceptor.h"
#include "leader_streams.h"
#include "member_state.h"
#include "replayer.h"
#include "packed_writes.h"
#include "rolis/db.h"
#include "snapshot_sink.h"

namespace rolis::replication {

class SnapshotSource {
 public:
  SnapshotSource(MemberState* member, Replayer* replayer, LeaderStreams* leader, const ControlAcceptor* control)
      : member_(member), replayer_(replayer), leader_(leader), control_(control) {}

  // The engine (its snapshot worker is registered here), and what aborts the
  // open client transactions before a leader snapshot (see
  // Replica::SetSnapshotEpochUnpinner).
  void Attach(Database* db);
  void SetSnapshotEpochUnpinner(std::function<size_t()> f) { unpin_snapshot_epoch_ = std::move(f); }
  void ReleaseWorker();

  // A snapshot for another member, into `sink`: the leader's, or a
  // caught-up follower's. OK once the sink's End returned OK (the
  // contract of SnapshotSink: snapshot_sink.h).
  Status Serve(SnapshotSink* sink);
  uint64_t leader_snapshots() const { return leader_snapshots_.load(); }
  // A caught-up follower's snapshot for its own checkpoint (docs/replication.md,
  // "Durability"); refused on a leader or a member that is not caught up.
  Status ForCheckpoint(SnapshotSink* sink) { return FollowerSnapshot(sink); }

  // For a state transfer: the lock of the snapshot worker (take it before
  // holding replay), and under it (replay held and quiesced) the local keys
  // that `snapshot` lacks (KeysNotInSnapshot, stale_keys.h: a merge walk,
  // no set of its keys; a warning is logged if its writes were not in scan
  // order). False if the engine's snapshot does not advance.
  std::unique_lock<std::mutex> Lock() { return std::unique_lock<std::mutex>(mu_); }
  bool KeysNotInLocked(const PackedWrites& snapshot, std::vector<std::pair<TableId, std::string>>* stale);

 private:
  Status FollowerSnapshot(SnapshotSink* sink);
  Status LeaderSnapshot(SnapshotSink* sink);
  // Until the engine's read-only snapshots cover every write made so far
  // (false after `limit`: a transaction stays open).
  bool AwaitEngineSnapshot(std::chrono::milliseconds limit);
  // Every table, in key order, into `sink` (Begin with `header` first, End
  // after); *writes counts them. Ends `txn` and quiesces the worker.
  Status ScanInto(std::unique_ptr<Transaction> txn, const SnapshotReply& header, SnapshotSink* sink,
                  uint64_t* writes);

  MemberState* const member_;
  Replayer* const replayer_;
  LeaderStreams* const leader_;
  const ControlAcceptor* const control_;
  Database* db_ = nullptr;
  std::function<size_t()> unpin_snapshot_epoch_;
  std::atomic<uint64_t> leader_snapshots_{0};  // served while leading (its writes paused)
  std::mutex mu_;
  std::unique_ptr<Worker> worker_;  // the snapshot worker, under mu_
};

}  // namespace rolis::replication
