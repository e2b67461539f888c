// Follower replay (docs/replication.md, "Normal operation" and "Failover"):
// applies to the engine, in key order, the transactions of every stream up
// to the watermark G of the leader this member follows. Its own thread
// runs when kicked (an accept, a new G, a state transfer done).
//
// Invariants kept here:
//   - I5 (followers never run ahead): nothing above the leader's G is
//     applied, and the applied set is a prefix of the key order across all
//     streams (a stream that is blocked on a missing slot holds the others
//     back), so the store is a consistent state a failover cannot undo.
//   - I6 (followers replay chosen values only): a slot is applied only when
//     it is held at the ballot of the leader whose G covers it; the heads
//     not yet started are dropped when a new leader appears.
//   - Only entries valid under the leader's decided record are applied
//     (the cut of the failover).
//
// Lock order: mu_ comes after the leader's lock (LeaderStreams::mu_) and
// before the snapshot lock (SnapshotSource) and the leaf locks (the member
// state's, the acceptor's). Replay pauses while this member leads (its store
// is its own) and while a state transfer replaces the store.
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "acceptor.h"
#include "codec.h"
#include "member_state.h"
#include "replay_apply.h"
#include "rolis/db.h"
#include "types.h"

namespace rolis::replication {

struct ReplicaStatus;

class Replayer {
 public:
  // `on_diverged` is called (replay lock held) when a write did not apply:
  // the store no longer follows the log and needs a state transfer.
  Replayer(uint32_t streams, MemberState* member, Acceptor* acceptor, std::function<void()> on_diverged);
  ~Replayer();

  // The engine to replay into (its replay worker is registered here).
  void Attach(Database* db);
  void Start();
  // Stop: wakes the loop (MemberState::stopping is set) and joins it; then
  // the replay worker is given back.
  void Wake();
  void Join();
  void ReleaseWorker();

  // First slot of stream t not yet replayed (lock-free: accept replies carry it).
  uint64_t replayed_next(uint32_t t) const { return replayed_next_[t].load(std::memory_order_acquire); }

  // An accept of the leader of m.epoch was taken: a newer leader restarts
  // replay at its ballot; a newer G lets it go further.
  void OnAccepted(const AcceptMsg& m);

  // Where a leader that stepped down stands in one stream: its
  // majority-accepted prefix [.., end), the largest key in it, and the
  // failover walk's reach and last barrier over it.
  struct LeaderPrefix {
    uint64_t end = 0;
    LogKey end_key{};
    LogKey reach{};
    uint64_t barrier = 0;
  };
  // This member stopped leading: replay goes on as a follower, after the
  // majority-accepted prefix of every stream when it was open (`prefix`,
  // one per stream: the store holds it), from where it was otherwise (null).
  void ResumeAfterLeading(const std::vector<LeaderPrefix>* prefix);

  // Opening epoch `record`: replays every valid entry at or below its G',
  // then stands after each stream's barrier (`barriers`, one per stream)
  // and pauses: a leader's store is its own.
  void ReplayForOpening(const DecidedPtr& record, const std::vector<Slot>& barriers);

  // Status of a member that does not lead: G as it knows it, the replayed
  // key, and per stream the replayed key and slot.
  void FillStatus(ReplicaStatus* st) const;

  // Replay held still, for a snapshot or a state transfer: nothing is
  // applied while the lock this returns is held. The *Locked calls below
  // need it.
  std::unique_lock<std::mutex> Hold() const { return std::unique_lock<std::mutex>(mu_); }
  // Following an open leader (a caught-up follower can give a snapshot).
  bool FollowingLocked() const { return epoch_ != 0 && !paused_ && record_; }
  // The snapshot position: the replayed key, the leader's epoch, and per
  // stream the next slot, the transactions of it already applied and the
  // failover walk's reach and last barrier.
  void SnapshotPositionLocked(SnapshotReply* r) const;
  // The failover walk's reach and last barrier over the replayed slots.
  LogKey StreamReachLocked(uint32_t t) const { return streams_[t]->reach; }
  uint64_t StreamBarrierLocked(uint32_t t) const { return streams_[t]->barrier; }
  // The replay worker leaves its engine epoch (the engine's snapshots and
  // reclamation wait for it). Null before Attach.
  void QuiesceLocked() const {
    if (worker_) worker_->Quiesce();
  }
  Worker* worker_locked() const { return worker_.get(); }
  void SetPausedLocked(bool paused) { paused_ = paused; }
  // The store now holds `snap`: replay starts after it, with no leader yet.
  void RestartAfterSnapshotLocked(const SnapshotReply& snap);
  // A member restarted from its checkpoint (docs/replication.md,
  // "Durability"): as above, and its status shows the checkpoint's key as
  // the G it knows until a leader's accept brings the leader's.
  void RestartFromCheckpointLocked(const SnapshotReply& snap) {
    RestartAfterSnapshotLocked(snap);
    watermark_ = snap.at;
  }
  // Ends a hold that changed the store or the log: replay resumes at once.
  void ResumeLocked() {
    paused_ = false;
    kick_ = true;
  }
  void Notify() { cv_.notify_one(); }

 private:
  struct ReplayStream {
    uint64_t cursor = 0;  // slot of the head
    BatchPtr batch;       // the head batch being applied (keeps the views alive)
    DecodedBatch txns;    // the head batch decoded (reused from batch to batch)
    size_t pos = 0;
    size_t skip = 0;      // txns of the batch at cursor already in the store (state transfer)
    LogKey consumed{};    // largest key applied or passed in this stream
    LogKey beyond{};      // head known above G (heartbeat or barrier): nothing of this stream up to it
    bool blocked = false;
    LogKey reach{};       // the failover walk's reach over the slots below cursor
    uint64_t barrier = 0; // ... and the epoch of the last barrier among them
    void DropHead() {
      batch.reset();
      txns.clear();
      pos = 0;
    }
  };

  void Loop();
  // One round (under mu_): fills every stream's head, then applies the
  // smallest heads in key order; true if it made progress.
  bool ReplayOnce();
  // Moves stream t's head past no-ops, barriers and empty batches at or
  // below G to its next transactions; stops at a missing slot (or one not
  // yet at ballot `epoch`). True if the cursor moved.
  bool FillHead(uint32_t t, uint64_t epoch, LogKey G, const EpochRecord& rec);
  // The stream whose head holds the smallest key, if one is safe to apply
  // (at or below G, and no blocked stream could still hold a smaller one).
  int NextToApply(LogKey G, LogKey* key) const;
  void Advance(uint32_t t, ReplayStream& rs);  // past the head slot
  // Heads not yet started may be values of an older ballot: dropped.
  void DropUnstartedHeadsLocked();
  LogKey ReplayedKeyLocked() const;

  // Transactions one ReplayOnce applies while it holds mu_, which an
  // incoming accept also takes: 4096 TPC-C transactions held it ~30 ms and
  // delayed the acknowledgements (the leader's worker fell behind).
  static constexpr int kTxnsPerHold = 256;
  // The loop runs when kicked; without a kick it wakes this often, to
  // refresh the replay horizon. (A 5 ms poll woke every idle member 200
  // times a second.)
  static constexpr std::chrono::milliseconds kIdleWait{50};

  const uint32_t stream_count_;
  MemberState* const member_;
  Acceptor* const acceptor_;
  const std::function<void()> on_diverged_;
  Database* db_ = nullptr;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool kick_ = false;
  bool paused_ = false;    // while this member leads, or a state transfer installs
  uint64_t epoch_ = 0;     // epoch of the leader whose G we replay to
  LogKey watermark_{};     // that leader's G as last heard
  // Offset of that leader's clock on this host's CLOCK_MONOTONIC: the least
  // (arrival time - G's ticks) over its accepts, in two windows so that a
  // drift between the hosts' clocks ages out (docs/operations.md, "Metrics").
  // G is read before an accept is sent, so the estimate errs towards an
  // older G by the shortest delivery time.
  static constexpr int64_t kNoOffset = INT64_MAX;
  void SampleLeaderClockLocked(LogKey g);
  int64_t LeaderClockOffsetLocked() const { return std::min(offset_now_, offset_before_); }
  int64_t offset_now_ = kNoOffset, offset_before_ = kNoOffset;
  uint64_t offset_window_start_ = 0;
  DecidedPtr record_;      // its decided record (the cut)
  std::vector<std::unique_ptr<ReplayStream>> streams_;
  std::unique_ptr<Worker> worker_;            // the engine worker replay applies with
  std::unique_ptr<ReplayApplier> applier_;    // on worker_
  std::unique_ptr<std::atomic<uint64_t>[]> replayed_next_;  // per stream
  std::thread thread_;
};

}  // namespace rolis::replication
