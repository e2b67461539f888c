#include "server/service.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <deque>
#include <thread>

#include "server/batch_stream.h"
#include "server/logging.h"

namespace rolis::server {

void NoteStatus(Method method, const grpc::Status& st) {
  switch (st.error_code()) {
    case grpc::StatusCode::INTERNAL:
    case grpc::StatusCode::UNKNOWN:
    case grpc::StatusCode::DATA_LOSS:
      LogErrorClass(std::string(MethodName(method)) + "/INTERNAL", st.error_message());
      break;
    default:
      if (!st.ok()) SPDLOG_DEBUG("{}: {} {}", MethodName(method), static_cast<int>(st.error_code()), st.error_message());
      break;
  }
}

namespace {

constexpr char kLeaderTrailer[] = "rolis-leader";

// Replies to a unary call once the watermark passes its commit timestamp (or
// the versions it read). api = kCount: no latency observed.
class UnaryWatermarkWaiter final : public WatermarkWaiter {
 public:
  UnaryWatermarkWaiter(UnaryCall* call, ClientService* service, Metrics* metrics, Method method, LatencyApi api,
                       Clock::time_point start, bool inflight)
      : call_(call),
        service_(service),
        metrics_(metrics),
        method_(method),
        api_(api),
        start_(start),
        inflight_(inflight) {
    service_->AckWaitStarted();
  }

  void OnWatermark(const grpc::Status& status) override {
    grpc::Status st = status.ok() ? grpc::Status::OK : Unacknowledged(status);
    if (api_ != LatencyApi::kCount) metrics_->ObserveLatency(api_, Clock::now() - start_);
    metrics_->CountRequest(method_, st.error_code());
    if (inflight_) metrics_->AddInflight(-1);
    NoteStatus(method_, st);
    service_->AckWaitDone();
    call_->Reply(st);
    delete this;
  }

 private:
  UnaryCall* call_;
  ClientService* service_;
  Metrics* metrics_;
  Method method_;
  LatencyApi api_;
  Clock::time_point start_;
  bool inflight_;
};

}  // namespace

grpc::Status Unacknowledged(const grpc::Status& replication) {
  return grpc::Status(grpc::StatusCode::UNKNOWN,
                      "outcome unknown: the transaction committed on this member but replication did not "
                      "acknowledge it (" +
                          replication.error_message() + "); it may or may not survive a failover");
}

void SetStreamError(v1::ExecuteResponse* resp, const grpc::Status& st) {
  uint64_t seq = resp->seq();
  resp->Clear();
  resp->set_seq(seq);
  resp->set_error_code(st.error_code());
  resp->set_error_message(st.error_message());
}

// ---------------------------------------------------------------------------
// ExecuteStream: pipelined one-shot transactions. The next read is started
// before a request is executed, so requests of one stream run concurrently on
// gRPC's callback threads; responses go out in completion order (they carry
// the request's seq). At most max_inflight requests of a stream are between
// read and written; beyond that the stream is not read (flow control).

class ExecuteStreamReactor final : public grpc::ServerBidiReactor<v1::ExecuteRequest, v1::ExecuteResponse>,
                                   public DrainableStream {
 public:
  using RequestPtr = std::unique_ptr<v1::ExecuteRequest>;
  using ResponsePtr = std::unique_ptr<v1::ExecuteResponse>;

  ExecuteStreamReactor(ClientService* service, uint32_t max_inflight)
      : service_(service), max_inflight_(max_inflight), request_(new v1::ExecuteRequest) {}

  // Called once registered.
  void Start() override {
    std::lock_guard<std::mutex> g(mu_);
    reading_ = true;
    StartRead(request_.get());
  }

  void OnReadDone(bool ok) override {
    RequestPtr req;
    {
      std::lock_guard<std::mutex> g(mu_);
      reading_ = false;
      if (!ok || finished_) {
        reads_done_ = true;
        MaybeFinishLocked();
        return;
      }
      // Keep the request; the next read goes into a recycled message.
      req = std::move(request_);
      request_ = TakeRequestLocked();
      inflight_++;
      MaybeReadLocked();
    }
    Run(std::move(req));
  }

  void OnWriteDone(bool ok) override {
    std::lock_guard<std::mutex> g(mu_);
    writing_ = false;
    RecycleLocked(std::move(queue_.front()));
    queue_.pop_front();
    inflight_--;
    if (!ok) {
      // The client is gone; the stream ends without further writes.
      broken_ = true;
      inflight_ -= static_cast<uint32_t>(queue_.size());
      queue_.clear();
    }
    WriteNextLocked();
    MaybeReadLocked();
    MaybeFinishLocked();
  }

  void OnDone() override {
    service_->Unregister(this);
    Unref();
  }

  void Drain() override {
    std::lock_guard<std::mutex> g(mu_);
    draining_ = true;
    MaybeFinishLocked();
  }

  // Delivers the response of one request (from Run or a watermark waiter).
  void Complete(ResponsePtr resp) {
    std::lock_guard<std::mutex> g(mu_);
    if (broken_) {
      inflight_--;
      RecycleLocked(std::move(resp));
      MaybeReadLocked();
      MaybeFinishLocked();
      return;
    }
    queue_.push_back(std::move(resp));
    WriteNextLocked();
  }

 private:
  class Waiter final : public WatermarkWaiter {
   public:
    Waiter(ExecuteStreamReactor* r, ResponsePtr resp, Clock::time_point start)
        : r_(r), resp_(std::move(resp)), start_(start) {
      r_->service_->AckWaitStarted();
    }
    void OnWatermark(const grpc::Status& status) override {
      Metrics* m = r_->service_->metrics_;
      if (!status.ok()) SetStreamError(resp_.get(), Unacknowledged(status));
      m->ObserveLatency(LatencyApi::kExecute, Clock::now() - start_);
      m->CountRequest(Method::kExecuteStream, resp_->error_code());
      m->AddInflight(-1);
      r_->service_->AckWaitDone();
      r_->Complete(std::move(resp_));
      delete this;
    }

   private:
    ExecuteStreamReactor* r_;
    ResponsePtr resp_;
    Clock::time_point start_;
  };

  void Run(RequestPtr req) {
    Metrics* m = service_->metrics_;
    Clock::time_point start = Clock::now();
    m->AddInflight(1);
    ResponsePtr resp;
    {
      std::lock_guard<std::mutex> g(mu_);
      resp = TakeResponseLocked();
    }
    CallContext cc;
    grpc::Status st = service_->node_->Execute(*req, resp.get(), &cc);
    uint64_t seq = req->seq();
    {
      // Cleared messages keep their buffers for the next parse.
      req->Clear();
      std::lock_guard<std::mutex> g(mu_);
      if (free_requests_.size() < kPoolSize) free_requests_.push_back(std::move(req));
    }
    resp->set_seq(seq);
    if (!st.ok()) {
      SetStreamError(resp.get(), st);
      NoteStatus(Method::kExecuteStream, st);
    } else if (cc.commit_ts != 0 && !service_->replicator_->WatermarkCovers(cc.commit_ts)) {
      auto* w = new Waiter(this, std::move(resp), start);
      if (service_->replicator_->AwaitWatermark(cc.commit_ts, w)) w->OnWatermark(grpc::Status::OK);
      return;  // the waiter completes it
    }
    m->ObserveLatency(LatencyApi::kExecute, Clock::now() - start);
    m->CountRequest(Method::kExecuteStream, st.error_code());
    m->AddInflight(-1);
    Complete(std::move(resp));
  }

  RequestPtr TakeRequestLocked() {
    if (free_requests_.empty()) return RequestPtr(new v1::ExecuteRequest);
    RequestPtr r = std::move(free_requests_.back());
    free_requests_.pop_back();
    return r;
  }
  ResponsePtr TakeResponseLocked() {
    if (free_responses_.empty()) return ResponsePtr(new v1::ExecuteResponse);
    ResponsePtr r = std::move(free_responses_.back());
    free_responses_.pop_back();
    return r;
  }
  void RecycleLocked(ResponsePtr r) {
    if (free_responses_.size() < kPoolSize) {
      r->Clear();
      free_responses_.push_back(std::move(r));
    }
  }

  void WriteNextLocked() {
    if (writing_ || queue_.empty() || finished_) return;
    writing_ = true;
    // No buffer hint: a hinted write may complete only when something else
    // flushes the connection, and the next write waits for that completion
    // (see batch_stream.cc).
    StartWrite(queue_.front().get());
  }

  void MaybeReadLocked() {
    if (reading_ || reads_done_ || finished_ || draining_ || broken_) return;
    if (inflight_ >= max_inflight_) return;
    reading_ = true;
    StartRead(request_.get());
  }

  void MaybeFinishLocked() {
    if (finished_ || inflight_ != 0 || writing_) return;
    if (broken_) {
      finished_ = true;
      Finish(grpc::Status(grpc::StatusCode::CANCELLED, "stream broken"));
    } else if (draining_) {
      finished_ = true;
      Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "server is shutting down"));
    } else if (reads_done_) {
      finished_ = true;
      Finish(grpc::Status::OK);
    }
  }

  static constexpr size_t kPoolSize = 64;  // recycled messages kept per stream

  ClientService* service_;
  const uint32_t max_inflight_;

  std::mutex mu_;
  RequestPtr request_;                    // target of the outstanding read
  std::deque<ResponsePtr> queue_;         // front is being written
  std::vector<RequestPtr> free_requests_;
  std::vector<ResponsePtr> free_responses_;
  uint32_t inflight_ = 0;                 // read and not yet written
  bool reading_ = false;
  bool writing_ = false;
  bool reads_done_ = false;
  bool draining_ = false;
  bool broken_ = false;
  bool finished_ = false;
};

// ---------------------------------------------------------------------------

ClientService::ClientService(Node* node, Replicator* replicator, Metrics* metrics, uint32_t max_stream_inflight)
    : node_(node), replicator_(replicator), metrics_(metrics), max_stream_inflight_(max_stream_inflight) {}

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
                                             grpc::ByteBuffer* out, Method method, Fn&& run) {
  auto* call = new RawUnaryCall<Req, Resp>(out);
  if (!call->Parse(in)) {
    grpc::Status st(grpc::StatusCode::INVALID_ARGUMENT,
                    fmt::format("malformed request: the bytes are not a {} message", Req::descriptor()->full_name()));
    metrics_->CountRequest(method, st.error_code());
    call->Reply(st);
    return call;
  }
  run(ctx, call->req, &call->resp, call);
  return call;
}

void ClientService::Respond(grpc::CallbackServerContext* ctx, UnaryCall* call, Method method, const grpc::Status& st,
                            const CallContext& cc, LatencyApi api, Clock::time_point start, bool inflight) {
  if (!cc.leader.empty()) ctx->AddTrailingMetadata(kLeaderTrailer, cc.leader);
  // A reply that shows reads or a commit waits until a failover cannot undo them.
  if (st.ok() && cc.commit_ts != 0 && !replicator_->WatermarkCovers(cc.commit_ts)) {
    auto* w = new UnaryWatermarkWaiter(call, this, metrics_, method, api, start, inflight);
    if (replicator_->AwaitWatermark(cc.commit_ts, w)) w->OnWatermark(grpc::Status::OK);
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
                                                     grpc::ByteBuffer* out, Method method,
                                                     grpc::Status (Node::*fn)(const Req&, Resp*, CallContext*)) {
  return Raw<Req, Resp>(ctx, in, out, method,
                        [this, method, fn](grpc::CallbackServerContext* ctx, const Req& req, Resp* resp,
                                           UnaryCall* call) {
                          CallContext cc;
                          grpc::Status st = (node_->*fn)(req, resp, &cc);
                          Respond(ctx, call, method, st, cc, LatencyApi::kCount, Clock::now(), false);
                        });
}

grpc::ServerUnaryReactor* ClientService::Begin(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* in,
                                               grpc::ByteBuffer* out) {
  return Interactive(ctx, in, out, Method::kBegin, &Node::Begin);
}
grpc::ServerUnaryReactor* ClientService::Get(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* in,
                                             grpc::ByteBuffer* out) {
  return Interactive(ctx, in, out, Method::kGet, &Node::Get);
}
grpc::ServerUnaryReactor* ClientService::Scan(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* in,
                                              grpc::ByteBuffer* out) {
  return Interactive(ctx, in, out, Method::kScan, &Node::Scan);
}
grpc::ServerUnaryReactor* ClientService::Put(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* in,
                                             grpc::ByteBuffer* out) {
  return Interactive(ctx, in, out, Method::kPut, &Node::Put);
}
grpc::ServerUnaryReactor* ClientService::Delete(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* in,
                                                grpc::ByteBuffer* out) {
  return Interactive(ctx, in, out, Method::kDelete, &Node::Delete);
}
grpc::ServerUnaryReactor* ClientService::Abort(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* in,
                                               grpc::ByteBuffer* out) {
  return Interactive(ctx, in, out, Method::kAbort, &Node::Abort);
}

grpc::ServerUnaryReactor* ClientService::Commit(grpc::CallbackServerContext* ctx, const grpc::ByteBuffer* in,
                                                grpc::ByteBuffer* out) {
  return Raw<v1::CommitRequest, v1::CommitResponse>(
      ctx, in, out, Method::kCommit,
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
      ctx, in, out, Method::kExecute,
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

grpc::ServerBidiReactor<v1::ExecuteRequest, v1::ExecuteResponse>* ClientService::ExecuteStream(
    grpc::CallbackServerContext* ctx) {
  auto* r = new ExecuteStreamReactor(this, max_stream_inflight_);
  Register(r);
  return r;
}

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* ClientService::ExecuteBatchStream(
    grpc::CallbackServerContext* ctx) {
  auto* r = new ExecuteBatchReactor(this, max_stream_inflight_);
  Register(r);
  return r;
}

void ClientService::Register(DrainableStream* r) {
  bool drain;
  {
    std::lock_guard<std::mutex> g(streams_mu_);
    streams_.insert(r);
    drain = draining_;
  }
  if (drain) {
    r->Drain();  // ends at once with UNAVAILABLE
  } else {
    r->Start();
  }
}

void ClientService::Unregister(DrainableStream* r) {
  std::lock_guard<std::mutex> g(streams_mu_);
  streams_.erase(r);
}

void ClientService::DrainStreams() {
  std::vector<DrainableStream*> open;
  {
    std::lock_guard<std::mutex> g(streams_mu_);
    draining_ = true;
    for (auto* r : streams_) {
      r->Ref();
      open.push_back(r);
    }
  }
  for (auto* r : open) {
    r->Drain();
    r->Unref();
  }
}

size_t ClientService::open_streams() const {
  std::lock_guard<std::mutex> g(streams_mu_);
  return streams_.size();
}

bool ClientService::AwaitAcks(std::chrono::steady_clock::time_point deadline) const {
  while (ack_waits() > 0) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

// ---------------------------------------------------------------------------

AdminService::AdminService(Node* node, Replicator* replicator, Metrics* metrics, std::string version)
    : node_(node),
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
  FillStatus(resp);
  return Reply(ctx, Method::kStatus, grpc::Status::OK);
}

grpc::ServerUnaryReactor* AdminService::PrepareFailover(grpc::CallbackServerContext* ctx,
                                                        const v1::PrepareFailoverRequest* req,
                                                        v1::PrepareFailoverResponse* resp) {
  return Reply(ctx, Method::kPrepareFailover, replicator_->PrepareFailover(*req, resp));
}

grpc::ServerUnaryReactor* AdminService::DecideEpoch(grpc::CallbackServerContext* ctx,
                                                    const v1::DecideEpochRequest* req, v1::DecideEpochResponse* resp) {
  return Reply(ctx, Method::kDecideEpoch, replicator_->DecideEpoch(*req, resp));
}

grpc::ServerUnaryReactor* AdminService::OpenEpoch(grpc::CallbackServerContext* ctx, const v1::OpenEpochRequest* req,
                                                  v1::OpenEpochResponse* resp) {
  return Reply(ctx, Method::kOpenEpoch, replicator_->OpenEpoch(*req, resp));
}

grpc::ServerUnaryReactor* AdminService::AnnounceLeader(grpc::CallbackServerContext* ctx,
                                                       const v1::AnnounceLeaderRequest* req,
                                                       v1::AnnounceLeaderResponse* resp) {
  return Reply(ctx, Method::kAnnounceLeader, replicator_->AnnounceLeader(*req, resp));
}

grpc::ServerUnaryReactor* AdminService::ChangeMembership(grpc::CallbackServerContext* ctx,
                                                         const v1::ChangeMembershipRequest* req,
                                                         v1::ChangeMembershipResponse* resp) {
  return Reply(ctx, Method::kChangeMembership, replicator_->ChangeMembership(*req, resp));
}

}  // namespace rolis::server
