#include "server/execute_stream.h"

namespace rolis::server {

// One request whose reply waits for the watermark. Holds its response until
// then; the reactor stays alive meanwhile (it does not finish while a
// request is in flight).
class ExecuteStreamReactor::Waiter final : public WatermarkWaiter {
 public:
  Waiter(ExecuteStreamReactor* r, ResponsePtr resp, Clock::time_point start)
      : r_(r), resp_(std::move(resp)), start_(start) {}

  void Done(bool ok, const std::string& why) override {
    r_->Acknowledged(resp_.get(), ok, why, start_);
    r_->Complete(std::move(resp_));
    delete this;
  }

 private:
  ExecuteStreamReactor* r_;
  ResponsePtr resp_;
  Clock::time_point start_;
};

ExecuteStreamReactor::ExecuteStreamReactor(const StreamEnv& env)
    : ExecuteStreamBase(env, Method::kExecuteStream), request_(new v1::ExecuteRequest) {}

void ExecuteStreamReactor::OnReadDone(bool ok) {
  RequestPtr req;
  {
    std::lock_guard<std::mutex> g(mu_);
    if (!ReadDoneLocked(ok)) return;
    // Keep the request; the next read goes into a recycled message.
    req = std::move(request_);
    request_ = TakeRequestLocked();
    inflight_++;
    MaybeReadLocked();
  }
  Run(std::move(req));
}

void ExecuteStreamReactor::Run(RequestPtr req) {
  Metrics* m = env_.metrics;
  Clock::time_point start = Clock::now();
  m->AddInflight(1);
  ResponsePtr resp;
  {
    std::lock_guard<std::mutex> g(mu_);
    resp = TakeResponseLocked();
  }
  uint64_t wait_ts = ExecuteOne(*req, resp.get());
  {
    // Cleared messages keep their buffers for the next parse.
    req->Clear();
    std::lock_guard<std::mutex> g(mu_);
    if (free_requests_.size() < kPoolSize) free_requests_.push_back(std::move(req));
  }
  if (wait_ts != 0) {
    AwaitWatermark(wait_ts, new Waiter(this, std::move(resp), start));
    return;  // the waiter completes it
  }
  m->ObserveLatency(LatencyApi::kExecute, Clock::now() - start);
  m->AddInflight(-1);
  Complete(std::move(resp));
}

void ExecuteStreamReactor::Complete(ResponsePtr resp) {
  std::lock_guard<std::mutex> g(mu_);
  if (broken_) {
    RecycleLocked(std::move(resp));
    DroppedLocked(1);
    return;
  }
  queue_.push_back(std::move(resp));
  WriteNextLocked();
}

void ExecuteStreamReactor::WriteNextLocked() {
  if (writing_ || queue_.empty() || finished_) return;
  writing_ = true;
  // No buffer hint: a hinted write may complete only when something else
  // flushes the connection, and the next write waits for that completion
  // (see batch_stream.cc).
  StartWrite(queue_.front().get());
}

uint32_t ExecuteStreamReactor::WrittenLocked() {
  RecycleLocked(std::move(queue_.front()));
  queue_.pop_front();
  return 1;
}

uint32_t ExecuteStreamReactor::DropQueuedLocked() {
  auto n = static_cast<uint32_t>(queue_.size());
  queue_.clear();
  return n;
}

ExecuteStreamReactor::RequestPtr ExecuteStreamReactor::TakeRequestLocked() {
  if (free_requests_.empty()) return RequestPtr(new v1::ExecuteRequest);
  RequestPtr r = std::move(free_requests_.back());
  free_requests_.pop_back();
  return r;
}

ExecuteStreamReactor::ResponsePtr ExecuteStreamReactor::TakeResponseLocked() {
  if (free_responses_.empty()) return ResponsePtr(new v1::ExecuteResponse);
  ResponsePtr r = std::move(free_responses_.back());
  free_responses_.pop_back();
  return r;
}

void ExecuteStreamReactor::RecycleLocked(ResponsePtr r) {
  if (free_responses_.size() < kPoolSize) {
    r->Clear();
    free_responses_.push_back(std::move(r));
  }
}

}  // namespace rolis::server
