#include "server/service.h"

#include <fmt/format.h>

#include <type_traits>

#include "server/batch_stream.h"
#include "server/execute_stream.h"

namespace rolis::server {

namespace {

constexpr char kLeaderTrailer[] = "rolis-leader";

// Replies to a unary call once the watermark passes its commit timestamp (or
// the versions it read). api = kCount: no latency observed.
class UnaryWatermarkWaiter final : public WatermarkWaiter {
 public:
  UnaryWatermarkWaiter(UnaryCall* call, PendingAcks* acks, Metrics* metrics, Method method, LatencyApi api,
                       Clock::time_point start, bool inflight)
      : call_(call),
        acks_(acks),
        metrics_(metrics),
        method_(method),
        api_(api),
        start_(start),
        inflight_(inflight) {
    acks_->Started();
  }

  void Done(bool ok, const std::string& why) override {
    grpc::Status st = ok ? grpc::Status::OK : Unacknowledged(why);
    if (api_ != LatencyApi::kCount) metrics_->ObserveLatency(api_, Clock::now() - start_);
    metrics_->CountRequest(method_, st.error_code());
    if (inflight_) metrics_->AddInflight(-1);
    NoteStatus(method_, st);
    acks_->Done();
    call_->Reply(st);
    delete this;
  }

 private:
  UnaryCall* call_;
  PendingAcks* acks_;
  Metrics* metrics_;
  Method method_;
  LatencyApi api_;
  Clock::time_point start_;
  bool inflight_;
};

// A stream refused before it starts: it ends at once with `st`.
template <typename In, typename Out>
class RefusedStream final : public grpc::ServerBidiReactor<In, Out> {
 public:
  explicit RefusedStream(const grpc::Status& st) { this->Finish(st); }
  void OnDone() override { delete this; }
};

}  // namespace

std::string RpcName(Method m) {
  return fmt::format("rolis.v1.{}/{}", m < Method::kStatus ? "Rolis" : "Admin", MethodName(m));
}

// ---------------------------------------------------------------------------

ClientService::ClientService(Node* node, Replicator* replicator, Metrics* metrics, uint32_t max_stream_inflight,
                             const Authorizer* authz)
    : node_(node),
      replicator_(replicator),
      metrics_(metrics),
      max_stream_inflight_(max_stream_inflight),
      authz_(authz) {}

ClientService::~ClientService() = default;

// A unary call whose request and response the service decodes and encodes
// itself (gRPC's raw callback methods): bytes that are not the request
// message get INVALID_ARGUMENT, where gRPC's typed handler would answer
// UNIMPLEMENTED with an empty message.
template <typename Req, typename Resp>
class RawUnaryCall final : public grpc::ServerUnaryReactor, public UnaryCall {
 public:
  explicit RawUnaryCall(grpc::ByteBuffer* out) : out_(out) {}

  bool Parse(const grpc::ByteBuffer* in) {
    grpc::ByteBuffer copy(*in);  // shares the slices; Deserialize consumes it
    return grpc::SerializationTraits<Req>::Deserialize(&copy, &req).ok();
  }
  void Reply(const grpc::Status& st) override {
    grpc::Status final = st;
    bool own = false;
    if (st.ok() && !grpc::SerializationTraits<Resp>::Serialize(resp, out_, &own).ok()) {
      final = grpc::Status(grpc::StatusCode::INTERNAL, "cannot encode the response");
    }
    Finish(final);
  }
  void OnDone() override { delete this; }

  Req req;
  Resp resp;

 private:
  grpc::ByteBuffer* out_;
};

template <typename Req, typename Resp, typename Fn>
grpc::ServerUnaryReactor* ClientService::Raw(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* in,
                                             grpc::ByteBuffer* out, Method method, Access access, Fn&& run) {
  auto* call = new RawUnaryCall<Req, Resp>(out);
  if (!call->Parse(in)) {
    grpc::Status st(grpc::StatusCode::INVALID_ARGUMENT,
                    fmt::format("malformed request: the bytes are not a {} message", Req::descriptor()->full_name()));
    metrics_->CountRequest(method, st.error_code());
    call->Reply(st);
    return call;
  }
  if (authz_->enabled()) {
    if constexpr (std::is_same_v<Req, v1::ExecuteRequest>) {
      if (ExecuteWrites(call->req)) access = Access::kClientWrite;
    }
    if (grpc::Status st = authz_->Check(*ctx, access, RpcName(method)); !st.ok()) {
      metrics_->CountRequest(method, st.error_code());
      call->Reply(st);
      return call;
    }
  }
  run(ctx, call->req, &call->resp, call);
  return call;
}

void ClientService::Respond(grpc::CallbackServerContext* ctx, UnaryCall* call, Method method, const grpc::Status& st,
                            const CallContext& cc, LatencyApi api, Clock::time_point start, bool inflight) {
  if (!cc.leader.empty()) ctx->AddTrailingMetadata(kLeaderTrailer, cc.leader);
  // A reply that shows reads or a commit waits until a failover cannot undo them.
  if (st.ok() && cc.commit_ts != 0 && !replicator_->WatermarkCovers(cc.commit_ts)) {
    auto* w = new UnaryWatermarkWaiter(call, &acks_, metrics_, method, api, start, inflight);
    if (replicator_->AwaitWatermark(cc.commit_ts, w)) w->Done(true, {});
    return;
  }
  if (api != LatencyApi::kCount) metrics_->ObserveLatency(api, Clock::now() - start);
  metrics_->CountRequest(method, st.error_code());
  if (inflight) metrics_->AddInflight(-1);
  NoteStatus(method, st);
  call->Reply(st);
}

// The interactive calls other than Commit: no latency observed.
template <typename Req, typename Resp>
grpc::ServerUnaryReactor* ClientService::Interactive(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* in,
                                                     grpc::ByteBuffer* out, Method method, Access access,
                                                     grpc::Status (Node::*fn)(const Req&, Resp*, CallContext*)) {
  return Raw<Req, Resp>(ctx, in, out, method, access,
                        [this, method, fn](grpc::CallbackServerContext* ctx, const Req& req, Resp* resp,
                                           UnaryCall* call) {
                          CallContext cc;
                          grpc::Status st = (node_->*fn)(req, resp, &cc);
                          Respond(ctx, call, method, st, cc, LatencyApi::kCount, Clock::now(), false);
                        });
}

grpc::ServerUnaryReactor* ClientService::Begin(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* in,
                                               grpc::ByteBuffer* out) {
  return Interactive(ctx, in, out, Method::kBegin, Access::kClientRead, &Node::Begin);
}
grpc::ServerUnaryReactor* ClientService::Get(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* in,
                                             grpc::ByteBuffer* out) {
  return Interactive(ctx, in, out, Method::kGet, Access::kClientRead, &Node::Get);
}
grpc::ServerUnaryReactor* ClientService::Scan(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* in,
                                              grpc::ByteBuffer* out) {
  return Interactive(ctx, in, out, Method::kScan, Access::kClientRead, &Node::Scan);
}
grpc::ServerUnaryReactor* ClientService::Put(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* in,
                                             grpc::ByteBuffer* out) {
  return Interactive(ctx, in, out, Method::kPut, Access::kClientWrite, &Node::Put);
}
grpc::ServerUnaryReactor* ClientService::Delete(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* in,
                                                grpc::ByteBuffer* out) {
  return Interactive(ctx, in, out, Method::kDelete, Access::kClientWrite, &Node::Delete);
}
grpc::ServerUnaryReactor* ClientService::Abort(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* in,
                                               grpc::ByteBuffer* out) {
  return Interactive(ctx, in, out, Method::kAbort, Access::kClientRead, &Node::Abort);
}

grpc::ServerUnaryReactor* ClientService::Commit(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* in,
                                                grpc::ByteBuffer* out) {
  return Raw<v1::CommitRequest, v1::CommitResponse>(
      ctx, in, out, Method::kCommit, Access::kClientRead,
      [this](grpc::CallbackServerContext* ctx, const v1::CommitRequest& req, v1::CommitResponse* resp,
             UnaryCall* call) {
        CallContext cc;
        grpc::Status st = node_->Commit(req, resp, &cc);
        Respond(ctx, call, Method::kCommit, st, cc, st.ok() ? LatencyApi::kCommit : LatencyApi::kCount,
                cc.begin_time, false);
      });
}

grpc::ServerUnaryReactor* ClientService::Execute(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* in,
                                                 grpc::ByteBuffer* out) {
  return Raw<v1::ExecuteRequest, v1::ExecuteResponse>(
      ctx, in, out, Method::kExecute, Access::kClientRead,
      [this](grpc::CallbackServerContext* ctx, const v1::ExecuteRequest& req, v1::ExecuteResponse* resp,
             UnaryCall* call) {
        Clock::time_point start = Clock::now();
        metrics_->AddInflight(1);
        CallContext cc;
        grpc::Status st = node_->Execute(req, resp, &cc);
        resp->set_seq(req.seq());
        Respond(ctx, call, Method::kExecute, st, cc, LatencyApi::kExecute, start, true);
      });
}

bool ClientService::StreamEnvironment(grpc::CallbackServerContext* ctx, Method method, StreamEnv* env,
                                      grpc::Status* refused) {
  *env = StreamEnv{node_, replicator_, metrics_, &acks_, &streams_, max_stream_inflight_, nullptr};
  if (authz_->Skips(*ctx)) return true;
  PeerIdentity id = authz_->IdentityOf(*ctx);
  if (*refused = authz_->Check(id, Access::kClientRead, RpcName(method)); !refused->ok()) {
    metrics_->CountRequest(method, refused->error_code());
    return false;
  }
  if (!Allows(id.kind, Access::kClientWrite)) {
    env->authorize = [authz = authz_, id = std::move(id), name = RpcName(method)](const v1::ExecuteRequest& req) {
      return ExecuteWrites(req) ? authz->Check(id, Access::kClientWrite, name) : grpc::Status::OK;
    };
  }
  return true;
}

grpc::ServerBidiReactor<v1::ExecuteRequest, v1::ExecuteResponse>* ClientService::ExecuteStream(
    grpc::CallbackServerContext* ctx) {
  StreamEnv env;
  grpc::Status refused;
  if (!StreamEnvironment(ctx, Method::kExecuteStream, &env, &refused)) {
    return new RefusedStream<v1::ExecuteRequest, v1::ExecuteResponse>(refused);
  }
  auto* r = new ExecuteStreamReactor(env);
  streams_.Register(r);
  return r;
}

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* ClientService::ExecuteBatchStream(
    grpc::CallbackServerContext* ctx) {
  StreamEnv env;
  grpc::Status refused;
  if (!StreamEnvironment(ctx, Method::kExecuteBatchStream, &env, &refused)) {
    return new RefusedStream<grpc::ByteBuffer, grpc::ByteBuffer>(refused);
  }
  auto* r = new ExecuteBatchReactor(env);
  streams_.Register(r);
  return r;
}

// ---------------------------------------------------------------------------

AdminService::AdminService(Node* node, Replicator* replicator, Metrics* metrics, std::string version,
                           const Authorizer* authz)
    : authz_(authz),
      node_(node),
      replicator_(replicator),
      metrics_(metrics),
      version_(std::move(version)),
      start_(std::chrono::steady_clock::now()) {}

grpc::ServerUnaryReactor* AdminService::Reply(grpc::CallbackServerContext* ctx, Method method,
                                              const grpc::Status& st) {
  auto* reactor = ctx->DefaultReactor();
  metrics_->CountRequest(method, st.error_code());
  reactor->Finish(st);
  return reactor;
}

grpc::Status AdminService::Authorize(grpc::CallbackServerContext* ctx, Method method) const {
  return authz_->Check(*ctx, method == Method::kStatus ? Access::kAdminStatus : Access::kAdmin, RpcName(method));
}

template <typename Fn>
grpc::ServerUnaryReactor* AdminService::Authorized(grpc::CallbackServerContext* ctx, Method method, Fn&& call) {
  grpc::Status st = Authorize(ctx, method);
  return Reply(ctx, method, st.ok() ? call() : st);
}

void AdminService::FillStatus(v1::StatusResponse* resp) const {
  replicator_->FillStatus(resp);
  resp->set_healthy(!node_->draining());
  resp->set_shutting_down(node_->draining());
  resp->set_version(version_);
  resp->set_worker_threads(static_cast<uint32_t>(node_->workers()));
  resp->set_uptime_seconds(static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - start_).count()));
  resp->set_committed_txns(metrics_->commits());
}

grpc::ServerUnaryReactor* AdminService::Status(grpc::CallbackServerContext* ctx, const v1::StatusRequest*,
                                               v1::StatusResponse* resp) {
  if (grpc::Status st = Authorize(ctx, Method::kStatus); !st.ok()) return Reply(ctx, Method::kStatus, st);
  FillStatus(resp);
  return Reply(ctx, Method::kStatus, grpc::Status::OK);
}

grpc::ServerUnaryReactor* AdminService::PrepareFailover(grpc::CallbackServerContext* ctx,
                                                        const v1::PrepareFailoverRequest* req,
                                                        v1::PrepareFailoverResponse* resp) {
  return Authorized(ctx, Method::kPrepareFailover, [&] { return replicator_->PrepareFailover(*req, resp); });
}

grpc::ServerUnaryReactor* AdminService::DecideEpoch(grpc::CallbackServerContext* ctx,
                                                    const v1::DecideEpochRequest* req, v1::DecideEpochResponse* resp) {
  return Authorized(ctx, Method::kDecideEpoch, [&] { return replicator_->DecideEpoch(*req, resp); });
}

grpc::ServerUnaryReactor* AdminService::OpenEpoch(grpc::CallbackServerContext* ctx, const v1::OpenEpochRequest* req,
                                                  v1::OpenEpochResponse* resp) {
  return Authorized(ctx, Method::kOpenEpoch, [&] { return replicator_->OpenEpoch(*req, resp); });
}

grpc::ServerUnaryReactor* AdminService::AnnounceLeader(grpc::CallbackServerContext* ctx,
                                                       const v1::AnnounceLeaderRequest* req,
                                                       v1::AnnounceLeaderResponse* resp) {
  return Authorized(ctx, Method::kAnnounceLeader, [&] { return replicator_->AnnounceLeader(*req, resp); });
}

grpc::ServerUnaryReactor* AdminService::ChangeMembership(grpc::CallbackServerContext* ctx,
                                                         const v1::ChangeMembershipRequest* req,
                                                         v1::ChangeMembershipResponse* resp) {
  return Authorized(ctx, Method::kChangeMembership, [&] { return replicator_->ChangeMembership(*req, resp); });
}

}  // namespace rolis::server
