// ExecuteBatchStream: pipelined one-shot transactions, many per stream
// message. The cost of a gRPC message (a read, a write, their callbacks and
// locks) is paid once per batch instead of once per transaction.
//
// A batch is read, then the next read is started and the batch runs on the
// gRPC callback thread that read it (so several batches of one stream run
// at once when the client sends them faster than one thread executes them).
// Each transaction's response joins the reply being built as soon as it is
// acknowledged: at once when the watermark already covers it (standalone),
// else when it does. One reply is written at a time; what completes
// meanwhile goes into the next, so replies grow with the load. Messages are
// recycled (cleared messages keep their buffers), so the steady state does
// not allocate per transaction.
//
// Flow control, draining and how the stream ends are shared with
// ExecuteStream (stream_reactor.h).
//
// The stream is a raw one (bytes): the reactor decodes each message itself,
// so that bytes that are not an ExecuteBatchRequest end the stream with
// INVALID_ARGUMENT (after what was read before is answered); gRPC's typed
// stream would take them for the end of the stream.
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>
#include <vector>

#include "rolis/v1/client.grpc.pb.h"  // the messages' SerializationTraits
#include "server/stream_reactor.h"

namespace rolis::server {

class ExecuteBatchReactor final : public ExecuteStreamBase<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  explicit ExecuteBatchReactor(const StreamEnv& env);

  void OnReadDone(bool ok) override;

 private:
  class Waiter;
  using BatchPtr = std::unique_ptr<v1::ExecuteBatchRequest>;
  using ReplyPtr = std::unique_ptr<v1::ExecuteBatchResponse>;

  grpc::ByteBuffer* ReadTarget() override { return &read_buf_; }
  void WriteNextLocked() override;
  uint32_t WrittenLocked() override;
  uint32_t DropQueuedLocked() override;

  // Executes every transaction of the batch and hands the answered ones to
  // the reply; those that wait for the watermark get a Waiter.
  void Run(BatchPtr batch);
  // Moves the responses of `done` into the reply being built and clears
  // `done`. `executed`: called by Run at the end of a batch.
  void Deliver(v1::ExecuteBatchResponse* done, bool executed);

  static constexpr size_t kPoolSize = 16;  // recycled batch messages kept

  grpc::ByteBuffer read_buf_;   // target of the outstanding read
  grpc::ByteBuffer write_buf_;  // the encoded reply being written

  std::vector<BatchPtr> free_;  // recycled batches
  ReplyPtr building_;          // responses not yet written
  ReplyPtr writing_reply_;     // the reply being written
  uint32_t writing_count_ = 0;
};

}  // namespace rolis::server
