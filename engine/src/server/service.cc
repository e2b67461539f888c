#include "server/service.h"

#include <spdlog/spdlog.h>

#include <deque>

#include "server/logging.h"

namespace rolis::server {
namespace {

constexpr char kLeaderTrailer[] = "rolis-leader";

// Server faults (not the client's): reported once per class and minute.
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

// Replies to a unary call once the watermark passes its commit timestamp (or
// the versions it read). api = kCount: no latency observed.
class UnaryWatermarkWaiter final : public WatermarkWaiter {
 public:
  UnaryWatermarkWaiter(grpc::ServerUnaryReactor* reactor, Metrics* metrics, Method method, LatencyApi api,
                       Clock::time_point start, bool inflight)
      : reactor_(reactor), metrics_(metrics), method_(method), api_(api), start_(start), inflight_(inflight) {}

  void OnWatermark(const grpc::Status& status) override {
    grpc::Status st = status.ok() ? grpc::Status::OK
                                  : grpc::Status(status.error_code(),
                                                 "committed locally but not acknowledged by replication: " +
                                                     status.error_message());
    if (api_ != LatencyApi::kCount) metrics_->ObserveLatency(api_, Clock::now() - start_);
    metrics_->CountRequest(method_, st.error_code());
    if (inflight_) metrics_->AddInflight(-1);
    NoteStatus(method_, st);
    reactor_->Finish(st);
    delete this;
  }

 private:
  grpc::ServerUnaryReactor* reactor_;
  Metrics* metrics_;
  Method method_;
  LatencyApi api_;
  Clock::time_point start_;
  bool inflight_;
};

}  // namespace

// ---------------------------------------------------------------------------
// ExecuteStream: pipelined one-shot transactions. The next read is started
// before a request is executed, so requests of one stream run concurrently on
// gRPC's callback threads; responses go out in completion order (they carry
// the request's seq). At most max_inflight requests of a stream are between
// read and written; beyond that the stream is not read (flow control).

class ExecuteStreamReactor final : public grpc::ServerBidiReactor<v1::ExecuteRequest, v1::ExecuteResponse> {
 public:
  using RequestPtr = std::unique_ptr<v1::ExecuteRequest>;
  using ResponsePtr = std::unique_ptr<v1::ExecuteResponse>;

  ExecuteStreamReactor(ClientService* service, uint32_t max_inflight)
      : service_(service), max_inflight_(max_inflight), request_(new v1::ExecuteRequest) {}

  // Called once registered.
  void Begin() {
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
      executing_++;
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

  void Drain() {
    std::lock_guard<std::mutex> g(mu_);
    draining_ = true;
    MaybeFinishLocked();
  }

  void Ref() { refs_.fetch_add(1); }
  void Unref() {
    if (refs_.fetch_sub(1) == 1) delete this;
  }

  // Delivers the response of one request (from Run or a watermark waiter).
  // `executed`: it comes straight from Run (not from a watermark waiter).
  void Complete(ResponsePtr resp, bool executed) {
    std::lock_guard<std::mutex> g(mu_);
    if (executed) executing_--;
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
        : r_(r), resp_(std::move(resp)), start_(start) {}
    void OnWatermark(const grpc::Status& status) override {
      Metrics* m = r_->service_->metrics_;
      if (!status.ok()) {
        uint64_t seq = resp_->seq();
        resp_->Clear();
        resp_->set_seq(seq);
        resp_->set_error_code(status.error_code());
        resp_->set_error_message("committed locally but not acknowledged by replication: " + status.error_message());
      }
      m->ObserveLatency(LatencyApi::kExecute, Clock::now() - start_);
      m->CountRequest(Method::kExecuteStream, resp_->error_code());
      m->AddInflight(-1);
      r_->Complete(std::move(resp_), false);
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
      resp->Clear();
      resp->set_seq(seq);
      resp->set_error_code(st.error_code());
      resp->set_error_message(st.error_message());
      NoteStatus(Method::kExecuteStream, st);
    } else if (cc.commit_ts != 0 && !service_->replicator_->WatermarkCovers(cc.commit_ts)) {
      {
        std::lock_guard<std::mutex> g(mu_);
        executing_--;  // waiting for the watermark is not executing
      }
      auto* w = new Waiter(this, std::move(resp), start);
      if (service_->replicator_->AwaitWatermark(cc.commit_ts, w)) w->OnWatermark(grpc::Status::OK);
      return;  // the waiter completes it
    }
    m->ObserveLatency(LatencyApi::kExecute, Clock::now() - start);
    m->CountRequest(Method::kExecuteStream, st.error_code());
    m->AddInflight(-1);
    Complete(std::move(resp), true);
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
    grpc::WriteOptions options;
    // Another response will follow at once (one is queued behind this one,
    // or a request is executing right now): let gRPC buffer this one and
    // send them together, one syscall for several responses. Not when the
    // only others wait for the watermark, which may take a while.
    if (queue_.size() > 1 || executing_ > 0) options.set_buffer_hint();
    StartWrite(queue_.front().get(), options);
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
  std::atomic<int> refs_{1};

  std::mutex mu_;
  RequestPtr request_;                    // target of the outstanding read
  std::deque<ResponsePtr> queue_;         // front is being written
  std::vector<RequestPtr> free_requests_;
  std::vector<ResponsePtr> free_responses_;
  uint32_t inflight_ = 0;                 // read and not yet written
  uint32_t executing_ = 0;                // read and running in Run()
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

template <typename Fn>
grpc::ServerUnaryReactor* ClientService::Unary(grpc::CallbackServerContext* ctx, Method method, Fn&& fn) {
  auto* reactor = ctx->DefaultReactor();
  CallContext cc;
  grpc::Status st = fn(&cc);
  if (!cc.leader.empty()) ctx->AddTrailingMetadata(kLeaderTrailer, cc.leader);
  // A reply that shows reads waits until they cannot be undone by a failover.
  if (st.ok() && cc.commit_ts != 0 && !replicator_->WatermarkCovers(cc.commit_ts)) {
    auto* w = new UnaryWatermarkWaiter(reactor, metrics_, method, LatencyApi::kCount, Clock::now(), false);
    if (replicator_->AwaitWatermark(cc.commit_ts, w)) w->OnWatermark(grpc::Status::OK);
    return reactor;
  }
  metrics_->CountRequest(method, st.error_code());
  NoteStatus(method, st);
  reactor->Finish(st);
  return reactor;
}

grpc::ServerUnaryReactor* ClientService::Begin(grpc::CallbackServerContext* ctx, const v1::BeginRequest* req,
                                               v1::BeginResponse* resp) {
  return Unary(ctx, Method::kBegin, [&](CallContext* cc) { return node_->Begin(*req, resp, cc); });
}

grpc::ServerUnaryReactor* ClientService::Get(grpc::CallbackServerContext* ctx, const v1::GetRequest* req,
                                             v1::GetResponse* resp) {
  return Unary(ctx, Method::kGet, [&](CallContext* cc) { return node_->Get(*req, resp, cc); });
}

grpc::ServerUnaryReactor* ClientService::Scan(grpc::CallbackServerContext* ctx, const v1::ScanRequest* req,
                                              v1::ScanResponse* resp) {
  return Unary(ctx, Method::kScan, [&](CallContext* cc) { return node_->Scan(*req, resp, cc); });
}

grpc::ServerUnaryReactor* ClientService::Put(grpc::CallbackServerContext* ctx, const v1::PutRequest* req,
                                             v1::PutResponse* resp) {
  return Unary(ctx, Method::kPut, [&](CallContext* cc) { return node_->Put(*req, resp, cc); });
}

grpc::ServerUnaryReactor* ClientService::Delete(grpc::CallbackServerContext* ctx, const v1::DeleteRequest* req,
                                                v1::DeleteResponse* resp) {
  return Unary(ctx, Method::kDelete, [&](CallContext* cc) { return node_->Delete(*req, resp, cc); });
}

grpc::ServerUnaryReactor* ClientService::Abort(grpc::CallbackServerContext* ctx, const v1::AbortRequest* req,
                                               v1::AbortResponse* resp) {
  return Unary(ctx, Method::kAbort, [&](CallContext* cc) { return node_->Abort(*req, resp, cc); });
}

grpc::ServerUnaryReactor* ClientService::Commit(grpc::CallbackServerContext* ctx, const v1::CommitRequest* req,
                                                v1::CommitResponse* resp) {
  auto* reactor = ctx->DefaultReactor();
  CallContext cc;
  grpc::Status st = node_->Commit(*req, resp, &cc);
  if (!cc.leader.empty()) ctx->AddTrailingMetadata(kLeaderTrailer, cc.leader);
  if (st.ok() && cc.commit_ts != 0 && !replicator_->WatermarkCovers(cc.commit_ts)) {
    auto* w = new UnaryWatermarkWaiter(reactor, metrics_, Method::kCommit, LatencyApi::kCommit, cc.begin_time, false);
    if (replicator_->AwaitWatermark(cc.commit_ts, w)) w->OnWatermark(grpc::Status::OK);
    return reactor;
  }
  if (st.ok()) metrics_->ObserveLatency(LatencyApi::kCommit, Clock::now() - cc.begin_time);
  metrics_->CountRequest(Method::kCommit, st.error_code());
  NoteStatus(Method::kCommit, st);
  reactor->Finish(st);
  return reactor;
}

grpc::ServerUnaryReactor* ClientService::Execute(grpc::CallbackServerContext* ctx, const v1::ExecuteRequest* req,
                                                 v1::ExecuteResponse* resp) {
  Clock::time_point start = Clock::now();
  metrics_->AddInflight(1);
  auto* reactor = ctx->DefaultReactor();
  CallContext cc;
  grpc::Status st = node_->Execute(*req, resp, &cc);
  resp->set_seq(req->seq());
  if (!cc.leader.empty()) ctx->AddTrailingMetadata(kLeaderTrailer, cc.leader);
  if (st.ok() && cc.commit_ts != 0 && !replicator_->WatermarkCovers(cc.commit_ts)) {
    auto* w = new UnaryWatermarkWaiter(reactor, metrics_, Method::kExecute, LatencyApi::kExecute, start, true);
    if (replicator_->AwaitWatermark(cc.commit_ts, w)) w->OnWatermark(grpc::Status::OK);
    return reactor;
  }
  metrics_->ObserveLatency(LatencyApi::kExecute, Clock::now() - start);
  metrics_->CountRequest(Method::kExecute, st.error_code());
  metrics_->AddInflight(-1);
  NoteStatus(Method::kExecute, st);
  reactor->Finish(st);
  return reactor;
}

grpc::ServerBidiReactor<v1::ExecuteRequest, v1::ExecuteResponse>* ClientService::ExecuteStream(
    grpc::CallbackServerContext* ctx) {
  auto* r = new ExecuteStreamReactor(this, max_stream_inflight_);
  Register(r);
  return r;
}

void ClientService::Register(ExecuteStreamReactor* r) {
  bool drain;
  {
    std::lock_guard<std::mutex> g(streams_mu_);
    streams_.insert(r);
    drain = draining_;
  }
  if (drain) {
    r->Drain();  // ends at once with UNAVAILABLE
  } else {
    r->Begin();
  }
}

void ClientService::Unregister(ExecuteStreamReactor* r) {
  std::lock_guard<std::mutex> g(streams_mu_);
  streams_.erase(r);
}

void ClientService::DrainStreams() {
  std::vector<ExecuteStreamReactor*> open;
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
