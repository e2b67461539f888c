// ExecuteStream: pipelined one-shot transactions, one per stream message.
// Requests of one stream run concurrently on gRPC's callback threads;
// responses go out in completion order (they carry the request's seq).
// Messages are recycled (cleared messages keep their buffers). The shared
// flow control, draining and ending are in stream_reactor.h.
#pragma once

#include <deque>
#include <memory>
#include <vector>

#include "rolis/v1/client.pb.h"
#include "server/stream_reactor.h"

namespace rolis::server {

class ExecuteStreamReactor final : public ExecuteStreamBase<v1::ExecuteRequest, v1::ExecuteResponse> {
 public:
  explicit ExecuteStreamReactor(const StreamEnv& env);

  void OnReadDone(bool ok) override;

 private:
  class Waiter;
  using RequestPtr = std::unique_ptr<v1::ExecuteRequest>;
  using ResponsePtr = std::unique_ptr<v1::ExecuteResponse>;

  v1::ExecuteRequest* ReadTarget() override { return request_.get(); }
  void WriteNextLocked() override;
  uint32_t WrittenLocked() override;
  uint32_t DropQueuedLocked() override;

  void Run(RequestPtr req);
  // Delivers the response of one request (from Run or a watermark waiter).
  void Complete(ResponsePtr resp);

  RequestPtr TakeRequestLocked();
  ResponsePtr TakeResponseLocked();
  void RecycleLocked(ResponsePtr r);

  static constexpr size_t kPoolSize = 64;  // recycled messages kept per stream

  RequestPtr request_;             // target of the outstanding read
  std::deque<ResponsePtr> queue_;  // front is being written
  std::vector<RequestPtr> free_requests_;
  std::vector<ResponsePtr> free_responses_;
};

}  // namespace rolis::server
