// The seam between the server and replication. The server
//   - installs the Replicator as the engine's CommitHook (every committed
//     read-write transaction's write set reaches OnCommit on its worker),
//   - asks role() at every write entry point (a follower redirects writes),
//   - before replying to a committed read-write transaction, waits until the
//     commit watermark G has passed the transaction's key (AwaitWatermark),
//   - fills the admin Status from it and forwards the failover RPCs to it.
// StandaloneReplicator is the single-node implementation: the watermark is
// immediate, every failover RPC is UNIMPLEMENTED. The replication issue adds
// a MultiPaxos implementation behind the same interface.
#pragma once

#include <grpcpp/support/status.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "rolis/db.h"
#include "rolis/role.h"
#include "rolis/watermark_waiter.h"
#include "rolis/v1/admin.pb.h"

namespace rolis::server {

// Role and RoleName: rolis/role.h, shared with the replication layer.
v1::Role RoleProto(Role r);

class Replicator : public CommitHook {
 public:
  ~Replicator() override = default;

  // Maps the engine's WorkerId of stream `stream` (0 .. streams-1). Called
  // for every worker before serving.
  virtual void RegisterStream(WorkerId worker, uint32_t stream) = 0;
  // The engine (opened with this replicator as its commit hook) and, per
  // stream, the mutex held around every transaction on its worker. Called
  // once the Node has started, before Start.
  virtual void Attach(Database* db, std::vector<std::mutex*> worker_mutexes) {}
  // How to let the engine's snapshot epoch advance while the caller holds
  // every worker's mutex: abort every open read-write client transaction
  // (returns how many) and quiesce the workers. A leader that serves a
  // snapshot holds its workers, and an open transaction, which could not end
  // then, or an idle worker's last epoch would keep the snapshot epoch
  // back. Called before Start.
  virtual void SetSnapshotEpochUnpinner(std::function<size_t()> abort_with_workers_held) {}
  // After Attach, before Start: the member's durable state, if it keeps
  // one (docs/operations.md, "Durability"). An error refuses to start.
  virtual Status Recover() { return Status::OK(); }
  virtual void Start() {}
  virtual void Stop() {}

  virtual Role role() const = 0;
  virtual uint64_t epoch() const = 0;
  // Client address of the current leader ("" when unknown); sent to clients
  // in the "rolis-leader" trailer when a write reaches a follower.
  virtual std::string leader_client_address() const = 0;
  // True when writes may be served (standalone, or leader open in its epoch).
  bool writable() const {
    Role r = role();
    return r == Role::kStandalone || r == Role::kLeader;
  }

  // True when the watermark already covers (epoch(), commit_ts): the caller
  // replies at once (the hot path; no allocation).
  virtual bool WatermarkCovers(uint64_t commit_ts) const = 0;
  // Returns true when the watermark covers commit_ts now (`waiter` is not
  // used). Otherwise `waiter` (rolis/watermark_waiter.h) is completed later,
  // exactly once, from another thread, and must stay alive until then; the
  // replication layer completes it directly (nothing is allocated per
  // acknowledgement). Where it completes, the server turns a failed wait
  // into Unacknowledged (call_outcome.h).
  virtual bool AwaitWatermark(uint64_t commit_ts, WatermarkWaiter* waiter) = 0;
  // A reply that shows what a transaction read must not show what a
  // failover could discard: before it is sent, the watermark must cover this
  // ts (every version this member installed so far is at or below it).
  // 0: nothing to wait for (standalone).
  virtual uint64_t ReadFence() const { return 0; }
  // G's ts (tests and the standalone status).
  virtual uint64_t watermark_ts() const { return 0; }
  // For the metrics (docs/operations.md, "Metrics"): when G was read, on
  // this host's CLOCK_MONOTONIC (0: unknown), and per stream how far this
  // member's replay is behind G in seconds of the leader's clock (negative:
  // unknown, its replayed key is of another epoch).
  struct ReplicationLag {
    int64_t watermark_mono_ns = 0;
    std::vector<double> stream_lag_seconds;
  };
  virtual ReplicationLag replication_lag() const { return {}; }
  // Total time the workers waited for the replication log to take their
  // batches (flow control); 0 when nothing replicates.
  virtual uint64_t flow_control_wait_nanos() const { return 0; }
  // Connections this member serves on its accept stream (a leader's, one
  // per stream, when it follows).
  virtual size_t accept_stream_connections() const { return 0; }
  // State transfers this member caught up by, snapshots it served while
  // leading (its writes paused meanwhile), and state transfers it served
  // from its checkpoint while leading; all since it started.
  struct TransferCounts {
    uint64_t completed = 0, leader_snapshots = 0, checkpoint_snapshots = 0;
  };
  virtual TransferCounts transfer_counts() const { return {}; }

  // Role, epoch, watermark, streams, members, decided record, leader.
  virtual void FillStatus(v1::StatusResponse* out) const = 0;

  // Admin failover and membership calls (see admin.proto).
  virtual grpc::Status PrepareFailover(const v1::PrepareFailoverRequest& req, v1::PrepareFailoverResponse* resp) = 0;
  virtual grpc::Status DecideEpoch(const v1::DecideEpochRequest& req, v1::DecideEpochResponse* resp) = 0;
  virtual grpc::Status OpenEpoch(const v1::OpenEpochRequest& req, v1::OpenEpochResponse* resp) = 0;
  virtual grpc::Status AnnounceLeader(const v1::AnnounceLeaderRequest& req, v1::AnnounceLeaderResponse* resp) = 0;
  virtual grpc::Status ChangeMembership(const v1::ChangeMembershipRequest& req,
                                        v1::ChangeMembershipResponse* resp) = 0;
};

// A single node without replication. With no peers it is STANDALONE, epoch 1:
// a transaction is durable (in memory) once committed, so the watermark is
// the largest commit timestamp seen and AwaitWatermark returns true at once.
//
// When peers are configured but this build has no replication layer yet, it
// reports FOLLOWER with no known leader: writes get UNAVAILABLE (never a
// split brain of several nodes each accepting writes alone).
class StandaloneReplicator final : public Replicator {
 public:
  struct Options {
    uint32_t id = 1;
    std::string client_address;  // this node's client address
    std::vector<v1::Member> members;
    bool peers_configured = false;
    uint32_t streams = 1;
  };
  explicit StandaloneReplicator(Options options);

  void OnCommit(WorkerId worker, uint64_t commit_ts, const CommittedWrites& writes) override;
  void RegisterStream(WorkerId worker, uint32_t stream) override;

  Role role() const override { return options_.peers_configured ? Role::kFollower : Role::kStandalone; }
  uint64_t epoch() const override { return options_.peers_configured ? 0 : 1; }
  std::string leader_client_address() const override {
    return options_.peers_configured ? "" : options_.client_address;
  }
  bool WatermarkCovers(uint64_t commit_ts) const override { return true; }
  bool AwaitWatermark(uint64_t commit_ts, WatermarkWaiter* waiter) override { return true; }

  uint64_t watermark_ts() const override;
  ReplicationLag replication_lag() const override;

  void FillStatus(v1::StatusResponse* out) const override;
  grpc::Status PrepareFailover(const v1::PrepareFailoverRequest& req, v1::PrepareFailoverResponse* resp) override;
  grpc::Status DecideEpoch(const v1::DecideEpochRequest& req, v1::DecideEpochResponse* resp) override;
  grpc::Status OpenEpoch(const v1::OpenEpochRequest& req, v1::OpenEpochResponse* resp) override;
  grpc::Status AnnounceLeader(const v1::AnnounceLeaderRequest& req, v1::AnnounceLeaderResponse* resp) override;
  grpc::Status ChangeMembership(const v1::ChangeMembershipRequest& req, v1::ChangeMembershipResponse* resp) override;

 private:
  static constexpr size_t kMaxWorkerIds = 1024;
  struct alignas(64) StreamState {
    std::atomic<uint64_t> committed_ts{0};
    std::atomic<uint64_t> txns{0};
  };
  StreamState& StreamOf(WorkerId worker);

  Options options_;
  // Read before the engine opens (the replicator is made first): the base of
  // the engine's commit clock, to a few microseconds.
  uint64_t clock_base_nanos_;
  std::unique_ptr<StreamState[]> streams_;
  std::array<std::atomic<uint32_t>, kMaxWorkerIds> stream_of_worker_{};
};

}  // namespace rolis::server
