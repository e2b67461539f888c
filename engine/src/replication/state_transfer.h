// Catch-up of a member whose store cannot follow the log (docs/replication.md,
// "Members that lose their memory"): the start-up probe (did this member
// restart empty, or is the whole cluster new?) and the state transfer (a
// snapshot from another member, and the votes of a majority adopted). Its
// own thread runs them while the member does not vote or needs a transfer.
//
// Invariants kept here:
//   - I7 (no vote after amnesia): a member that may have lost its votes
//     votes again only after it adopted the promises, accepted slots and
//     control-stream votes of a majority of the configuration in force,
//     read after the snapshot so that they cover every slot after it.
//   - I5: the store becomes the snapshot (a state no failover can undo),
//     with the snapshot's key above anything a deposed epoch left and below
//     everything replayed next; a snapshot of an epoch not past the one this
//     member led is refused.
//
// Lock order: the snapshot source's lock, then the replayer's (held while
// the store is replaced), then the leaf locks (acceptor, control, member
// state). catch_mu_ is a leaf used only for the loop's waits.
#pragma once

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "acceptor.h"
#include "leader_streams.h"
#include "member_calls.h"
#include "member_state.h"
#include "packed_writes.h"
#include "replayer.h"
#include "replica_options.h"
#include "snapshot_source.h"
#include "transport.h"

namespace rolis::replication {

class StateTransfer {
 public:
  // `learn_leader` is told the newest record adopted by a transfer.
  StateTransfer(const ReplicaOptions& opts, MemberState* member, MemberCalls* calls, Transport* transport,
                Acceptor* acceptor, ControlAcceptor* control, Replayer* replayer, LeaderStreams* leader,
                SnapshotSource* snapshots, std::function<void(const DecidedPtr&)> learn_leader)
      : opts_(opts),
        member_(member),
        calls_(calls),
        transport_(transport),
        acceptor_(acceptor),
        control_(control),
        replayer_(replayer),
        leader_(leader),
        snapshots_(snapshots),
        learn_leader_(std::move(learn_leader)) {}
  ~StateTransfer() {
    Wake();
    Join();
  }

  void Attach(Database* db) { db_ = db; }
  void Start();
  void Wake() { cv_.notify_all(); }  // work to do (or Stop)
  void Join();

  // The store does not follow the log: stop serving and voting for itself,
  // and catch up by state transfer.
  void Request();
  uint64_t transfers() const { return transfers_.load(); }

  // Durability (docs/replication.md, "Durability"; set before Start):
  // `transferred` runs after a transfer installed the store and the votes
  // (the checkpoint that closes the log's gap), `idle` while there is
  // nothing to catch up (a member's periodic checkpoint), and
  // `cannot_catch_up` after a probe found that others hold state and the
  // transfer failed, with how many members (this one included) said they
  // have none.
  struct DurabilityHooks {
    std::function<void(const ReceivedSnapshot&)> transferred;
    std::function<void()> idle;
    std::function<void(size_t empty_members)> cannot_catch_up;
  };
  void SetDurabilityHooks(DurabilityHooks h) { hooks_ = std::move(h); }

 private:
  // The votes of a configuration's members that this member adopts.
  struct Votes {
    std::vector<MemberAddr> cfg;
    bool self = false;
    size_t need = 0;
    std::vector<std::pair<uint32_t, PromiseReply>> replies;
    std::vector<const PromiseReply*> oks;  // into replies
  };

  void Loop();
  Status Probe();  // OK: a new cluster (voting now) or caught up by state transfer
  Status Transfer();
  // The steps of a transfer.
  // Each answer carries the slots at or above from_slot[t] (types.h,
  // PromiseMsg); a member of an older version may send them all.
  Status ReadVotes(const DecidedPtr& record, std::vector<uint64_t> from_slot, Votes* v);
  // Into *snap (a fresh one per member asked; the one that completed is
  // left in it).
  Status FetchSnapshot(uint64_t my_epoch, std::unique_ptr<ReceivedSnapshot>* snap);
  Status InstallSnapshot(const ReceivedSnapshot& snap, const std::vector<StreamSlots>& adopted, uint64_t max_promised,
                         const DecidedPtr& newest, const std::vector<const PromiseReply*>& oks);
  // Majority of the members the cluster started with (the start-up probe).
  size_t majority() const { return opts_.members.size() / 2 + 1; }

  const ReplicaOptions& opts_;
  MemberState* const member_;
  MemberCalls* const calls_;
  Transport* const transport_;
  Acceptor* const acceptor_;
  ControlAcceptor* const control_;
  Replayer* const replayer_;
  LeaderStreams* const leader_;
  SnapshotSource* const snapshots_;
  const std::function<void(const DecidedPtr&)> learn_leader_;
  Database* db_ = nullptr;
  std::atomic<uint64_t> transfers_{0};
  DurabilityHooks hooks_;

  std::mutex catch_mu_;
  std::condition_variable cv_;
  std::thread thread_;
};

}  // namespace rolis::replication
