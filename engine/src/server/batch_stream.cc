#include "server/batch_stream.h"

#include <fmt/format.h>

namespace rolis::server {

// One transaction whose reply waits for the watermark. Holds its response
// until then; the reactor stays alive meanwhile (it does not finish while a
// transaction is in flight).
class ExecuteBatchReactor::Waiter final : public WatermarkWaiter {
 public:
  Waiter(ExecuteBatchReactor* r, Clock::time_point start) : r_(r), start_(start) {
    r_->service_->AckWaitStarted();
  }
  v1::ExecuteResponse* response() { return reply_.add_responses(); }

  void OnWatermark(const grpc::Status& status) override {
    ClientService* service = r_->service_;
    v1::ExecuteResponse* resp = reply_.mutable_responses(0);
    if (!status.ok()) SetStreamError(resp, Unacknowledged(status));
    Metrics* m = service->metrics_;
    m->ObserveLatency(LatencyApi::kExecute, Clock::now() - start_);
    m->CountRequest(Method::kExecuteBatchStream, resp->error_code());
    m->AddInflight(-1);
    service->AckWaitDone();
    r_->Deliver(&reply_, false);  // r_ may be gone after this
    delete this;
  }

 private:
  ExecuteBatchReactor* r_;
  Clock::time_point start_;
  v1::ExecuteBatchResponse reply_;  // of one response
};

ExecuteBatchReactor::ExecuteBatchReactor(ClientService* service, uint32_t max_inflight)
    : service_(service),
      max_inflight_(max_inflight),
      building_(new v1::ExecuteBatchResponse),
      writing_(new v1::ExecuteBatchResponse) {}

void ExecuteBatchReactor::Start() {
  std::lock_guard<std::mutex> g(mu_);
  reading_ = true;
  StartRead(&read_buf_);
}

void ExecuteBatchReactor::Drain() {
  std::lock_guard<std::mutex> g(mu_);
  draining_ = true;
  MaybeFinishLocked();
}

void ExecuteBatchReactor::OnReadDone(bool ok) {
  BatchPtr batch;
  if (ok) {
    {
      std::lock_guard<std::mutex> g(mu_);
      if (!free_.empty()) {
        batch = std::move(free_.back());
        free_.pop_back();
      }
    }
    if (!batch) batch.reset(new v1::ExecuteBatchRequest);
    // No read is outstanding: read_buf_ is ours until the next StartRead.
    if (!grpc::SerializationTraits<v1::ExecuteBatchRequest>::Deserialize(&read_buf_, batch.get()).ok()) {
      std::lock_guard<std::mutex> g(mu_);
      reading_ = false;
      reads_done_ = true;
      malformed_ = true;
      MaybeFinishLocked();
      return;
    }
  }
  {
    std::lock_guard<std::mutex> g(mu_);
    reading_ = false;
    if (!ok || finished_) {
      reads_done_ = true;
      MaybeFinishLocked();
      return;
    }
    inflight_ += static_cast<uint32_t>(batch->requests_size());
    executing_++;
    MaybeReadLocked();
  }
  Run(std::move(batch));
}

void ExecuteBatchReactor::Run(BatchPtr batch) {
  Metrics* m = service_->metrics_;
  Node* node = service_->node_;
  Replicator* replicator = service_->replicator_;
  // Responses answered at once, built on this thread without the lock. The
  // message (and the cleared responses it keeps) is reused by the thread.
  thread_local v1::ExecuteBatchResponse done;
  const int n = batch->requests_size();
  Clock::time_point start = Clock::now();
  m->AddInflight(n);
  grpc::Status too_many;
  if (static_cast<uint32_t>(n) > max_inflight_) {
    too_many = grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                            fmt::format("batch of {} transactions exceeds the limit of {} (--max-stream-inflight)", n,
                                        max_inflight_));
  }
  int answered = 0;
  for (int i = 0; i < n; i++) {
    const v1::ExecuteRequest& req = batch->requests(i);
    v1::ExecuteResponse* resp = done.add_responses();
    CallContext cc;
    grpc::Status st = too_many.ok() ? node->Execute(req, resp, &cc) : too_many;
    resp->set_seq(req.seq());
    if (!st.ok()) {
      SetStreamError(resp, st);
      NoteStatus(Method::kExecuteBatchStream, st);
    } else if (cc.commit_ts != 0 && !replicator->WatermarkCovers(cc.commit_ts)) {
      auto* w = new Waiter(this, start);
      w->response()->Swap(resp);
      done.mutable_responses()->RemoveLast();
      if (replicator->AwaitWatermark(cc.commit_ts, w)) w->OnWatermark(grpc::Status::OK);
      continue;
    }
    m->CountRequest(Method::kExecuteBatchStream, resp->error_code());
    answered++;
  }
  Clock::duration latency = Clock::now() - start;
  for (int i = 0; i < answered; i++) m->ObserveLatency(LatencyApi::kExecute, latency);
  m->AddInflight(-answered);
  batch->Clear();  // keeps its buffers for the next read
  {
    std::lock_guard<std::mutex> g(mu_);
    if (free_.size() < kPoolSize) free_.push_back(std::move(batch));
  }
  Deliver(&done, true);
}

void ExecuteBatchReactor::Deliver(v1::ExecuteBatchResponse* done, bool executed) {
  {
    std::lock_guard<std::mutex> g(mu_);
    if (executed) executing_--;
    uint32_t count = static_cast<uint32_t>(done->responses_size());
    if (broken_) {
      inflight_ -= count;
      MaybeReadLocked();
      MaybeFinishLocked();
    } else if (building_->responses_size() == 0) {
      building_->Swap(done);  // the common case: no copy
      WriteNextLocked();
    } else {
      for (auto& r : *done->mutable_responses()) building_->add_responses()->Swap(&r);
      WriteNextLocked();
    }
  }
  done->Clear();
}

void ExecuteBatchReactor::OnWriteDone(bool ok) {
  std::lock_guard<std::mutex> g(mu_);
  writing_now_ = false;
  inflight_ -= writing_count_;
  writing_->Clear();
  if (!ok) {
    // The client is gone; later responses are dropped as they complete.
    broken_ = true;
    inflight_ -= static_cast<uint32_t>(building_->responses_size());
    building_->Clear();
  }
  WriteNextLocked();
  MaybeReadLocked();
  MaybeFinishLocked();
}

void ExecuteBatchReactor::OnDone() {
  service_->Unregister(this);
  Unref();
}

void ExecuteBatchReactor::WriteNextLocked() {
  // No buffer hint on these writes: a hinted write may complete only when
  // something else flushes the connection, and with one write outstanding at
  // a time nothing else would (the client waits for the held replies; that
  // stalled the stream under load).
  if (writing_now_ || finished_ || broken_ || building_->responses_size() == 0) return;
  std::swap(building_, writing_);
  writing_count_ = static_cast<uint32_t>(writing_->responses_size());
  bool own = false;
  write_buf_.Clear();  // the encoder wants an empty buffer
  if (!grpc::SerializationTraits<v1::ExecuteBatchResponse>::Serialize(*writing_, &write_buf_, &own).ok()) {
    // Cannot happen with a valid message; end the stream rather than drop
    // replies silently.
    broken_ = true;
    inflight_ -= writing_count_;
    writing_->Clear();
    return;
  }
  writing_now_ = true;
  StartWrite(&write_buf_);
}

void ExecuteBatchReactor::MaybeReadLocked() {
  if (reading_ || reads_done_ || finished_ || draining_ || broken_) return;
  if (inflight_ >= max_inflight_) return;
  reading_ = true;
  StartRead(&read_buf_);
}

void ExecuteBatchReactor::MaybeFinishLocked() {
  if (finished_ || inflight_ != 0 || writing_now_ || executing_ != 0) return;
  if (broken_) {
    finished_ = true;
    Finish(grpc::Status(grpc::StatusCode::CANCELLED, "stream broken"));
  } else if (malformed_) {
    finished_ = true;
    Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "malformed request: a stream message is not a rolis.v1.ExecuteBatchRequest"));
  } else if (draining_) {
    finished_ = true;
    Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "server is shutting down"));
  } else if (reads_done_) {
    finished_ = true;
    Finish(grpc::Status::OK);
  }
}

}  // namespace rolis::server
