// The scaffolding that ExecuteStream (execute_stream.h) and
// ExecuteBatchStream (batch_stream.h) share: registration with the service
// and draining at shutdown, flow control (a stream is not read while
// max_inflight transactions are read and not yet answered), one write at a
// time, and how a stream ends. A reactor adds what it reads into, how it
// executes what it read, and what it writes.
//
// Every transaction runs on the gRPC callback thread that read it: the next
// read is started first, so the transactions of one stream run concurrently.
// A reply that shows a commit or reads waits for the watermark to pass them
// (docs/replication.md, "Normal operation"); the stream does not finish while
// any is in flight.
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <functional>
#include <mutex>
#include <set>

#include "rolis/v1/client.pb.h"
#include "server/call_outcome.h"
#include "server/metrics.h"
#include "server/node.h"
#include "server/replicator.h"

namespace rolis::server {

// A bidirectional stream that ClientService ends on shutdown. Start begins
// reading; Drain makes it stop reading, answer what it has read and finish
// with UNAVAILABLE. Reference-counted: the registry holds a reference while
// draining it, gRPC's OnDone drops the stream's own.
class DrainableStream {
 public:
  virtual ~DrainableStream() = default;
  virtual void Start() = 0;
  virtual void Drain() = 0;
  void Ref() { refs_.fetch_add(1); }
  void Unref() {
    if (refs_.fetch_sub(1) == 1) delete this;
  }

 private:
  std::atomic<int> refs_{1};
};

// The open streams of a service.
class StreamRegistry {
 public:
  // Adds the stream and starts it; once draining, it ends at once with
  // UNAVAILABLE instead.
  void Register(DrainableStream* r);
  void Unregister(DrainableStream* r);
  // Shutdown: every open stream (and every later one) stops reading,
  // answers what it has read, and ends with UNAVAILABLE.
  void DrainAll();
  size_t size() const;

 private:
  mutable std::mutex mu_;
  std::set<DrainableStream*> streams_;
  bool draining_ = false;  // guarded by mu_
};

// What a stream uses of the service that opened it (none owned).
struct StreamEnv {
  Node* node = nullptr;
  Replicator* replicator = nullptr;
  Metrics* metrics = nullptr;
  PendingAcks* acks = nullptr;
  StreamRegistry* registry = nullptr;
  uint32_t max_inflight = 0;  // --max-stream-inflight
  // Checks each request before it runs (a client-readonly caller's: authz.h);
  // empty: every request may run.
  std::function<grpc::Status(const v1::ExecuteRequest&)> authorize;
};

template <typename In, typename Out>
class ExecuteStreamBase : public grpc::ServerBidiReactor<In, Out>, public DrainableStream {
 public:
  // Called once registered.
  void Start() override {
    std::lock_guard<std::mutex> g(mu_);
    reading_ = true;
    this->StartRead(ReadTarget());
  }

  void Drain() override {
    std::lock_guard<std::mutex> g(mu_);
    draining_ = true;
    MaybeFinishLocked();
  }

  void OnWriteDone(bool ok) override {
    std::lock_guard<std::mutex> g(mu_);
    writing_ = false;
    inflight_ -= WrittenLocked();
    if (!ok) {
      // The client is gone; the stream ends without further writes, and
      // responses are dropped as they complete.
      broken_ = true;
      inflight_ -= DropQueuedLocked();
    }
    WriteNextLocked();
    MaybeReadLocked();
    MaybeFinishLocked();
  }

  void OnDone() override {
    env_.registry->Unregister(this);
    Unref();
  }

 protected:
  ExecuteStreamBase(const StreamEnv& env, Method method) : env_(env), method_(method) {}

  // Where the next read goes.
  virtual In* ReadTarget() = 0;
  // Starts the next write when one is due and none is outstanding (sets writing_).
  virtual void WriteNextLocked() = 0;
  // The write in flight completed: frees it, returns how many transactions it answered.
  virtual uint32_t WrittenLocked() = 0;
  // The stream broke: drops the responses not yet written, returns how many.
  virtual uint32_t DropQueuedLocked() = 0;

  // Runs one transaction into `resp` (`refused`: answer it with this error
  // instead). Returns the timestamp its reply waits for, or 0 when the
  // response is final now. A final response is counted here; the caller
  // observes its latency and its end of being in flight.
  uint64_t ExecuteOne(const v1::ExecuteRequest& req, v1::ExecuteResponse* resp,
                      const grpc::Status& refused = grpc::Status::OK) {
    CallContext cc;
    grpc::Status st = refused;
    if (st.ok() && env_.authorize) st = env_.authorize(req);
    if (st.ok()) st = env_.node->Execute(req, resp, &cc);
    resp->set_seq(req.seq());
    if (!st.ok()) {
      SetStreamError(resp, st);
      NoteStatus(method_, st);
    } else if (cc.commit_ts != 0 && !env_.replicator->WatermarkCovers(cc.commit_ts)) {
      return cc.commit_ts;
    }
    env_.metrics->CountRequest(method_, resp->error_code());
    return 0;
  }

  // Hands `w` the wait for the watermark to pass `ts` (it may be notified at once).
  void AwaitWatermark(uint64_t ts, WatermarkWaiter* w) {
    env_.acks->Started();
    if (env_.replicator->AwaitWatermark(ts, w)) w->Done(true, {});
  }
  // A waiter's response is final: `ok` and `why` from the watermark wait,
  // `start` when its transaction was read. Counts it; the caller then
  // delivers it.
  void Acknowledged(v1::ExecuteResponse* resp, bool ok, const std::string& why, Clock::time_point start) {
    Metrics* m = env_.metrics;
    if (!ok) SetStreamError(resp, Unacknowledged(why));
    m->ObserveLatency(LatencyApi::kExecute, Clock::now() - start);
    m->CountRequest(method_, resp->error_code());
    m->AddInflight(-1);
    env_.acks->Done();
  }

  // After a read completed: false when the stream reads no more (it then
  // finishes once the rest is answered).
  bool ReadDoneLocked(bool ok) {
    reading_ = false;
    if (!ok || finished_) {
      reads_done_ = true;
      MaybeFinishLocked();
      return false;
    }
    return true;
  }
  // A message could not be decoded: nothing more is read, and the stream
  // ends with INVALID_ARGUMENT once what was read before is answered.
  void MalformedLocked() {
    reading_ = false;
    reads_done_ = true;
    malformed_ = true;
    MaybeFinishLocked();
  }
  // `n` responses completed after the stream broke: they are dropped.
  void DroppedLocked(uint32_t n) {
    inflight_ -= n;
    MaybeReadLocked();
    MaybeFinishLocked();
  }

  void MaybeReadLocked() {
    if (reading_ || reads_done_ || finished_ || draining_ || broken_) return;
    if (inflight_ >= env_.max_inflight) return;
    reading_ = true;
    this->StartRead(ReadTarget());
  }

  void MaybeFinishLocked() {
    if (finished_ || inflight_ != 0 || writing_ || executing_ != 0) return;
    if (broken_) {
      FinishLocked(grpc::Status(grpc::StatusCode::CANCELLED, "stream broken"));
    } else if (malformed_) {
      FinishLocked(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                std::string("malformed request: a stream message is not a ") +
                                    v1::ExecuteBatchRequest::descriptor()->full_name()));
    } else if (draining_) {
      FinishLocked(grpc::Status(grpc::StatusCode::UNAVAILABLE, "server is shutting down"));
    } else if (reads_done_) {
      FinishLocked(grpc::Status::OK);
    }
  }

  const StreamEnv env_;
  const Method method_;

  std::mutex mu_;
  uint32_t inflight_ = 0;   // transactions read and not yet written
  uint32_t executing_ = 0;  // messages being executed (a stream does not finish meanwhile)
  bool reading_ = false;
  bool writing_ = false;
  bool reads_done_ = false;
  bool malformed_ = false;
  bool draining_ = false;
  bool broken_ = false;
  bool finished_ = false;

 private:
  void FinishLocked(const grpc::Status& st) {
    finished_ = true;
    this->Finish(st);
  }
};

}  // namespace rolis::server
