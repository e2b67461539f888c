#include "server/batch_stream.h"

#include <fmt/format.h>

namespace rolis::server {

// One transaction whose reply waits for the watermark. Holds its response
// until then; the reactor stays alive meanwhile (it does not finish while a
// transaction is in flight).
class ExecuteBatchReactor::Waiter final : public WatermarkWaiter {
 public:
  Waiter(ExecuteBatchReactor* r, Clock::time_point start) : r_(r), start_(start) {}
  v1::ExecuteResponse* response() { return reply_.add_responses(); }

  void Done(bool ok, const std::string& why) override {
    r_->Acknowledged(reply_.mutable_responses(0), ok, why, start_);
    r_->Deliver(&reply_, false);  // r_ may be gone after this
    delete this;
  }

 private:
  ExecuteBatchReactor* r_;
  Clock::time_point start_;
  v1::ExecuteBatchResponse reply_;  // of one response
};

ExecuteBatchReactor::ExecuteBatchReactor(const StreamEnv& env)
    : ExecuteStreamBase(env, Method::kExecuteBatchStream),
      building_(new v1::ExecuteBatchResponse),
      writing_reply_(new v1::ExecuteBatchResponse) {}

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
      MalformedLocked();
      return;
    }
  }
  {
    std::lock_guard<std::mutex> g(mu_);
    if (!ReadDoneLocked(ok)) return;
    inflight_ += static_cast<uint32_t>(batch->requests_size());
    executing_++;
    MaybeReadLocked();
  }
  Run(std::move(batch));
}

void ExecuteBatchReactor::Run(BatchPtr batch) {
  Metrics* m = env_.metrics;
  // Responses answered at once, built on this thread without the lock. The
  // message (and the cleared responses it keeps) is reused by the thread.
  thread_local v1::ExecuteBatchResponse done;
  const int n = batch->requests_size();
  Clock::time_point start = Clock::now();
  m->AddInflight(n);
  grpc::Status too_many;
  if (static_cast<uint32_t>(n) > env_.max_inflight) {
    too_many = grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                            fmt::format("batch of {} transactions exceeds the limit of {} (--max-stream-inflight)", n,
                                        env_.max_inflight));
  }
  int answered = 0;
  for (int i = 0; i < n; i++) {
    v1::ExecuteResponse* resp = done.add_responses();
    if (uint64_t wait_ts = ExecuteOne(batch->requests(i), resp, too_many); wait_ts != 0) {
      auto* w = new Waiter(this, start);
      w->response()->Swap(resp);
      done.mutable_responses()->RemoveLast();
      AwaitWatermark(wait_ts, w);
      continue;
    }
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
      DroppedLocked(count);
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

uint32_t ExecuteBatchReactor::WrittenLocked() {
  writing_reply_->Clear();
  return writing_count_;
}

uint32_t ExecuteBatchReactor::DropQueuedLocked() {
  auto n = static_cast<uint32_t>(building_->responses_size());
  building_->Clear();
  return n;
}

void ExecuteBatchReactor::WriteNextLocked() {
  // No buffer hint on these writes: a hinted write may complete only when
  // something else flushes the connection, and with one write outstanding at
  // a time nothing else would (the client waits for the held replies; that
  // stalled the stream under load).
  if (writing_ || finished_ || broken_ || building_->responses_size() == 0) return;
  std::swap(building_, writing_reply_);
  writing_count_ = static_cast<uint32_t>(writing_reply_->responses_size());
  bool own = false;
  write_buf_.Clear();  // the encoder wants an empty buffer
  if (!grpc::SerializationTraits<v1::ExecuteBatchResponse>::Serialize(*writing_reply_, &write_buf_, &own).ok()) {
    // Cannot happen with a valid message; end the stream rather than drop
    // replies silently.
    broken_ = true;
    inflight_ -= writing_count_;
    writing_reply_->Clear();
    return;
  }
  writing_ = true;
  StartWrite(&write_buf_);
}

}  // namespace rolis::server
