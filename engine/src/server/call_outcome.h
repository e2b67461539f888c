// How the client service words the outcome of a call, shared by the unary
// calls and the streams: the status of a commit that replication did not
// acknowledge, the log line of a server fault, the error fields of a
// streamed response, and the count of replies waiting for the watermark.
#pragma once

#include <grpcpp/support/status.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

#include "rolis/v1/client.pb.h"
#include "server/metrics.h"

namespace rolis::server {

// The reply to a transaction that committed on this member but that the
// watermark did not pass (this member stopped leading, or shut down, before
// replication acknowledged it): UNKNOWN, "outcome unknown". The transaction
// may survive a failover or not; the client must not assume either (and must
// not blindly retry a non-idempotent write). `why`: what the failed
// watermark wait said (rolis/watermark_waiter.h).
grpc::Status Unacknowledged(const std::string& why);

// Logs server faults (not the client's), once per class and minute.
void NoteStatus(Method method, const grpc::Status& st);

// An ExecuteStream/ExecuteBatchStream response that carries `st` as its
// outcome: everything but the seq is cleared.
void SetStreamError(v1::ExecuteResponse* resp, const grpc::Status& st);

// Replies (unary or streamed) of committed transactions that wait for the
// watermark. Shutdown waits for them up to a deadline (Await) before it
// stops replication, which fails the rest with Unacknowledged.
class PendingAcks {
 public:
  void Started() { n_.fetch_add(1, std::memory_order_relaxed); }
  void Done() { n_.fetch_sub(1, std::memory_order_relaxed); }
  int64_t count() const { return n_.load(std::memory_order_relaxed); }
  // True when no reply waits any more; false at the deadline.
  bool Await(std::chrono::steady_clock::time_point deadline) const;

 private:
  std::atomic<int64_t> n_{0};
};

}  // namespace rolis::server
