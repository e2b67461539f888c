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
// Flow control: once max_inflight transactions are read and not yet
// answered, the stream is not read until replies go out.
//
// The stream is a raw one (bytes): the reactor decodes each message itself,
// so that bytes that are not an ExecuteBatchRequest end the stream with
// INVALID_ARGUMENT (after what was read before is answered); gRPC's typed
// stream would take them for the end of the stream.
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>
#include <mutex>
#include <vector>

#include "rolis/v1/client.grpc.pb.h"
#include "server/service.h"

namespace rolis::server {

class ExecuteBatchReactor final : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>,
                                  public DrainableStream {
 public:
  ExecuteBatchReactor(ClientService* service, uint32_t max_inflight);

  void Start() override;
  void Drain() override;
  void OnReadDone(bool ok) override;
  void OnWriteDone(bool ok) override;
  void OnDone() override;

 private:
  class Waiter;
  using BatchPtr = std::unique_ptr<v1::ExecuteBatchRequest>;
  using ReplyPtr = std::unique_ptr<v1::ExecuteBatchResponse>;

  // Executes every transaction of the batch and hands the answered ones to
  // the reply; those that wait for the watermark get a Waiter.
  void Run(BatchPtr batch);
  // Moves the responses of `done` into the reply being built and clears
  // `done`. `executed`: called by Run at the end of a batch.
  void Deliver(v1::ExecuteBatchResponse* done, bool executed);

  void WriteNextLocked();
  void MaybeReadLocked();
  void MaybeFinishLocked();

  static constexpr size_t kPoolSize = 16;  // recycled batch messages kept

  ClientService* service_;
  const uint32_t max_inflight_;

  grpc::ByteBuffer read_buf_;   // target of the outstanding read
  grpc::ByteBuffer write_buf_;  // the encoded reply being written

  std::mutex mu_;
  std::vector<BatchPtr> free_;  // recycled batches
  ReplyPtr building_;          // responses not yet written
  ReplyPtr writing_;           // the reply being written
  uint32_t writing_count_ = 0;
  uint32_t inflight_ = 0;   // transactions read and not yet written
  uint32_t executing_ = 0;  // batches in Run()
  bool reading_ = false;
  bool writing_now_ = false;
  bool reads_done_ = false;
  bool malformed_ = false;  // a message could not be decoded
  bool draining_ = false;
  bool broken_ = false;
  bool finished_ = false;
};

}  // namespace rolis::server
