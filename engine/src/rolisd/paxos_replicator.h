// The replicated member of rolisd: server::Replicator over a Replica, the
// gRPC transport and the Replication service on this member's replication
// address (--peers entry of --id). rolisd's main constructs it when --peers
// is given (see MakeReplicator).
#pragma once

#include <grpcpp/grpcpp.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "grpc_transport.h"
#include "peer_tls.h"
#include "replication/replica.h"
#include "server/config.h"
#include "server/replicator.h"
#include "server/tls_or_plaintext_port.h"

namespace rolis::durability {
class DurableMember;
}

namespace rolis::replication {

struct PaxosReplicatorOptions {
  server::ServerConfig config;
  uint32_t batch_size = server::kDefaultBatchSize;
  std::chrono::microseconds batch_timeout{1000};
  uint32_t max_inflight_batches = 64;
  std::string drop_peers_file;  // tests only (GrpcTransport::Options)
  // Built-in election (--election=builtin): a member that hears nothing from
  // an open leader for this long runs the failover itself.
  std::chrono::milliseconds election_timeout{1500};
  // ChangeMembership: how long a new member may take to catch up, and the
  // change to settle (below the operator's 10 s call deadline, so that it
  // gets the reason rather than DEADLINE_EXCEEDED; a retry goes on from
  // what the new member holds by then).
  std::chrono::milliseconds membership_timeout{8000};
};

class PaxosReplicator final : public server::Replicator {
 public:
  explicit PaxosReplicator(PaxosReplicatorOptions o);
  ~PaxosReplicator() override;

  void OnCommit(WorkerId worker, uint64_t commit_ts, const CommittedWrites& writes) override {
    replica_->OnCommit(worker, commit_ts, writes);
  }
  void RegisterStream(WorkerId worker, uint32_t stream) override { replica_->RegisterStream(worker, stream); }
  void Attach(Database* db, std::vector<std::mutex*> worker_mutexes) override;
  void SetSnapshotEpochUnpinner(std::function<size_t()> f) override { replica_->SetSnapshotEpochUnpinner(std::move(f)); }
  // --durability=disk: recovers --data-dir into the member (durable_member.h).
  Status Recover() override;
  void Start() override;
  void Stop() override;

  Role role() const override;
  uint64_t epoch() const override { return replica_->epoch(); }
  std::string leader_client_address() const override { return replica_->leader_client_address(); }
  bool WatermarkCovers(uint64_t commit_ts) const override { return replica_->WatermarkCovers(commit_ts); }
  bool AwaitWatermark(uint64_t commit_ts, WatermarkWaiter* waiter) override;
  uint64_t ReadFence() const override { return replica_->ReadFence(); }
  uint64_t watermark_ts() const override;
  ReplicationLag replication_lag() const override;
  uint64_t flow_control_wait_nanos() const override { return replica_->flow_control_wait_nanos(); }
  size_t accept_stream_connections() const override { return transport_->accept_stream_connections(); }
  TransferCounts transfer_counts() const override;

  void FillStatus(v1::StatusResponse* out) const override;
  grpc::Status PrepareFailover(const v1::PrepareFailoverRequest& req, v1::PrepareFailoverResponse* resp) override;
  grpc::Status DecideEpoch(const v1::DecideEpochRequest& req, v1::DecideEpochResponse* resp) override;
  grpc::Status OpenEpoch(const v1::OpenEpochRequest& req, v1::OpenEpochResponse* resp) override;
  grpc::Status AnnounceLeader(const v1::AnnounceLeaderRequest& req, v1::AnnounceLeaderResponse* resp) override;
  grpc::Status ChangeMembership(const v1::ChangeMembershipRequest& req, v1::ChangeMembershipResponse* resp) override;

  Replica* replica() { return replica_.get(); }
  // The failover steps with this member as the candidate (what the built-in
  // election runs; rolis-bench's in-process leader uses it at start).
  grpc::Status RunElection();

 private:
  v1::Member Self() const;
  v1::Member OnHello(const v1::Member& caller);
  std::vector<MemberAddr> HelloTargets() const;
  void HelloLoop();
  void ElectionLoop();

  PaxosReplicatorOptions o_;
  std::string repl_address_;
  PeerCredentials creds_;     // of the replication port and of calls to peers
  std::string creds_error_;  // why creds_ could not be made (Start logs it and does not listen)
  uint64_t nanos_before_open_ = 0;
  std::atomic<uint64_t> nanos_after_open_{UINT64_MAX};
  std::unique_ptr<GrpcTransport> transport_;
  std::unique_ptr<Replica> replica_;
  Database* db_ = nullptr;
  // After replica_: destroyed first (its sync thread calls the replica),
  // once Stop has stopped the replica's threads.
  std::unique_ptr<durability::DurableMember> durable_;
  std::unique_ptr<ReplicationService> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<server::TlsOrPlaintextPort> front_;  // --tls-accept-plaintext
  mutable std::mutex members_mu_;
  std::map<uint32_t, v1::Member> members_;  // learned by Hello
  std::atomic<bool> stop_{false};
  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  std::thread hello_thread_, election_thread_;
  bool started_ = false;
};

// What rolisd's main hands to RolisServer: a PaxosReplicator when peers are
// configured.
std::unique_ptr<server::Replicator> MakeReplicator(const server::ServerConfig& config);

}  // namespace rolis::replication
