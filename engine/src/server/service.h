// gRPC services of rolisd on gRPC's callback API: thin adapters from the wire
// to Node (client API) and to Replicator (admin API). Each unary call runs on
// a gRPC callback thread and replies inline when the watermark is immediate
// (standalone) or from the replication thread that advances it.
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <string>

#include "rolis/v1/admin.grpc.pb.h"
#include "rolis/v1/client.grpc.pb.h"
#include "server/authz.h"
#include "server/call_outcome.h"
#include "server/metrics.h"
#include "server/node.h"
#include "server/replicator.h"
#include "server/stream_reactor.h"

namespace rolis::server {

// The reply side of a unary call: encodes the response and finishes the call.
class UnaryCall {
 public:
  virtual ~UnaryCall() = default;
  virtual void Reply(const grpc::Status& st) = 0;
};

// "rolis.v1.Rolis/Put", "rolis.v1.Admin/Status": a method as log lines name it.
std::string RpcName(Method m);

// The unary methods and ExecuteBatchStream are gRPC "raw" methods (bytes in,
// bytes out) so that the service decodes requests itself; ExecuteStream is
// typed.
using ClientServiceBase = v1::Rolis::WithRawCallbackMethod_Begin<v1::Rolis::WithRawCallbackMethod_Get<
    v1::Rolis::WithRawCallbackMethod_Scan<v1::Rolis::WithRawCallbackMethod_Put<
        v1::Rolis::WithRawCallbackMethod_Delete<v1::Rolis::WithRawCallbackMethod_Commit<
            v1::Rolis::WithRawCallbackMethod_Abort<v1::Rolis::WithRawCallbackMethod_Execute<
                v1::Rolis::WithRawCallbackMethod_ExecuteBatchStream<
                    v1::Rolis::WithCallbackMethod_ExecuteStream<v1::Rolis::Service>>>>>>>>>>;

class ClientService final : public ClientServiceBase {
 public:
  // `authz` (not owned) checks every call (authz.h).
  ClientService(Node* node, Replicator* replicator, Metrics* metrics, uint32_t max_stream_inflight,
                const Authorizer* authz);
  ~ClientService() override;

  grpc::ServerUnaryReactor* Begin(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* req,
                                  grpc::ByteBuffer* resp) override;
  grpc::ServerUnaryReactor* Get(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* req,
                                grpc::ByteBuffer* resp) override;
  grpc::ServerUnaryReactor* Scan(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* req,
                                 grpc::ByteBuffer* resp) override;
  grpc::ServerUnaryReactor* Put(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* req,
                                grpc::ByteBuffer* resp) override;
  grpc::ServerUnaryReactor* Delete(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* req,
                                   grpc::ByteBuffer* resp) override;
  grpc::ServerUnaryReactor* Commit(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* req,
                                   grpc::ByteBuffer* resp) override;
  grpc::ServerUnaryReactor* Abort(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* req,
                                  grpc::ByteBuffer* resp) override;
  grpc::ServerUnaryReactor* Execute(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* req,
                                    grpc::ByteBuffer* resp) override;
  grpc::ServerBidiReactor<v1::ExecuteRequest, v1::ExecuteResponse>* ExecuteStream(
      grpc::CallbackServerContext* ctx) override;
  grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* ExecuteBatchStream(
      grpc::CallbackServerContext* ctx) override;

  // Shutdown: every open stream stops reading, answers what it has read,
  // and ends with UNAVAILABLE.
  void DrainStreams() { streams_.DrainAll(); }
  size_t open_streams() const { return streams_.size(); }

  // Replies (unary or streamed) of committed transactions that wait for the
  // watermark (PendingAcks).
  int64_t ack_waits() const { return acks_.count(); }
  // True when no reply waits any more; false at the deadline.
  bool AwaitAcks(std::chrono::steady_clock::time_point deadline) const { return acks_.Await(deadline); }

 private:
  // Decodes the request (INVALID_ARGUMENT when it cannot) and runs
  // run(ctx, req, resp, call), which must end with Respond.
  // A caller the authorizer refuses gets PERMISSION_DENIED and nothing runs;
  // `access` is what the call needs (an Execute that writes needs kClientWrite).
  template <typename Req, typename Resp, typename Fn>
  grpc::ServerUnaryReactor* Raw(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* in, grpc::ByteBuffer* out,
                                Method method, Access access, Fn&& run);
  template <typename Req, typename Resp>
  grpc::ServerUnaryReactor* Interactive(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* in,
                                        grpc::ByteBuffer* out, Method method, Access access,
                                        grpc::Status (Node::*fn)(const Req&, Resp*, CallContext*));
  // Replies once the response is final: at once, or when the watermark
  // passes cc.commit_ts. api = kCount: no latency observed.
  void Respond(grpc::CallbackServerContext* ctx, UnaryCall* call, Method method, const grpc::Status& st,
               const CallContext& cc, LatencyApi api, Clock::time_point start, bool inflight);
  // What the streams use of this service; false with *refused set when the
  // caller may not open the stream. A client-readonly caller's stream gets a
  // check of each request (writes refused).
  bool StreamEnvironment(grpc::CallbackServerContext* ctx, Method method, StreamEnv* env, grpc::Status* refused);

  Node* node_;
  Replicator* replicator_;
  Metrics* metrics_;
  uint32_t max_stream_inflight_;
  const Authorizer* authz_;
  PendingAcks acks_;
  StreamRegistry streams_;
};

class AdminService final : public v1::Admin::CallbackService {
 public:
  // `authz` (not owned) checks every call (authz.h).
  AdminService(Node* node, Replicator* replicator, Metrics* metrics, std::string version, const Authorizer* authz);

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
  // Not OK: the caller may not make `method`.
  grpc::Status Authorize(grpc::CallbackServerContext* ctx, Method method) const;
  // Replies with call()'s status, or the refusal without calling it.
  template <typename Fn>
  grpc::ServerUnaryReactor* Authorized(grpc::CallbackServerContext* ctx, Method method, Fn&& call);

  const Authorizer* authz_;
  Node* node_;
  Replicator* replicator_;
  Metrics* metrics_;
  std::string version_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace rolis::server
