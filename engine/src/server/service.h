// gRPC services of rolisd on gRPC's callback API: thin adapters from the wire
// to Node (client API) and to Replicator (admin API). Each unary call runs on
// a gRPC callback thread and replies inline when the watermark is immediate
// (standalone) or from the replication thread that advances it.
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <string>

#include "rolis/v1/admin.grpc.pb.h"
#include "rolis/v1/client.grpc.pb.h"
#include "server/metrics.h"
#include "server/node.h"
#include "server/replicator.h"

namespace rolis::server {

class ExecuteStreamReactor;

class ClientService final : public v1::Rolis::CallbackService {
 public:
  ClientService(Node* node, Replicator* replicator, Metrics* metrics, uint32_t max_stream_inflight);
  ~ClientService() override;

  grpc::ServerUnaryReactor* Begin(grpc::CallbackServerContext* ctx, const v1::BeginRequest* req,
                                  v1::BeginResponse* resp) override;
  grpc::ServerUnaryReactor* Get(grpc::CallbackServerContext* ctx, const v1::GetRequest* req,
                                v1::GetResponse* resp) override;
  grpc::ServerUnaryReactor* Scan(grpc::CallbackServerContext* ctx, const v1::ScanRequest* req,
                                 v1::ScanResponse* resp) override;
  grpc::ServerUnaryReactor* Put(grpc::CallbackServerContext* ctx, const v1::PutRequest* req,
                                v1::PutResponse* resp) override;
  grpc::ServerUnaryReactor* Delete(grpc::CallbackServerContext* ctx, const v1::DeleteRequest* req,
                                   v1::DeleteResponse* resp) override;
  grpc::ServerUnaryReactor* Commit(grpc::CallbackServerContext* ctx, const v1::CommitRequest* req,
                                   v1::CommitResponse* resp) override;
  grpc::ServerUnaryReactor* Abort(grpc::CallbackServerContext* ctx, const v1::AbortRequest* req,
                                  v1::AbortResponse* resp) override;
  grpc::ServerUnaryReactor* Execute(grpc::CallbackServerContext* ctx, const v1::ExecuteRequest* req,
                                    v1::ExecuteResponse* resp) override;
  grpc::ServerBidiReactor<v1::ExecuteRequest, v1::ExecuteResponse>* ExecuteStream(
      grpc::CallbackServerContext* ctx) override;

  // Shutdown: every open ExecuteStream stops reading, answers what it has
  // read, and ends with UNAVAILABLE.
  void DrainStreams();
  size_t open_streams() const;

 private:
  friend class ExecuteStreamReactor;
  template <typename Fn>
  grpc::ServerUnaryReactor* Unary(grpc::CallbackServerContext* ctx, Method method, Fn&& fn);
  void Register(ExecuteStreamReactor* r);
  void Unregister(ExecuteStreamReactor* r);

  Node* node_;
  Replicator* replicator_;
  Metrics* metrics_;
  uint32_t max_stream_inflight_;

  mutable std::mutex streams_mu_;
  std::set<ExecuteStreamReactor*> streams_;
  bool draining_ = false;  // guarded by streams_mu_
};

class AdminService final : public v1::Admin::CallbackService {
 public:
  AdminService(Node* node, Replicator* replicator, Metrics* metrics, std::string version);

  grpc::ServerUnaryReactor* Status(grpc::CallbackServerContext* ctx, const v1::StatusRequest* req,
                                   v1::StatusResponse* resp) override;
  grpc::ServerUnaryReactor* PrepareFailover(grpc::CallbackServerContext* ctx, const v1::PrepareFailoverRequest* req,
                                            v1::PrepareFailoverResponse* resp) override;
  grpc::ServerUnaryReactor* DecideEpoch(grpc::CallbackServerContext* ctx, const v1::DecideEpochRequest* req,
                                        v1::DecideEpochResponse* resp) override;
  grpc::ServerUnaryReactor* OpenEpoch(grpc::CallbackServerContext* ctx, const v1::OpenEpochRequest* req,
                                      v1::OpenEpochResponse* resp) override;
  grpc::ServerUnaryReactor* AnnounceLeader(grpc::CallbackServerContext* ctx, const v1::AnnounceLeaderRequest* req,
                                           v1::AnnounceLeaderResponse* resp) override;
  grpc::ServerUnaryReactor* ChangeMembership(grpc::CallbackServerContext* ctx,
                                             const v1::ChangeMembershipRequest* req,
                                             v1::ChangeMembershipResponse* resp) override;

  // The Status response as the Status RPC returns it.
  void FillStatus(v1::StatusResponse* resp) const;

 private:
  grpc::ServerUnaryReactor* Reply(grpc::CallbackServerContext* ctx, Method method, const grpc::Status& st);

  Node* node_;
  Replicator* replicator_;
  Metrics* metrics_;
  std::string version_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace rolis::server
