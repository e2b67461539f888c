// Node::CallProcedure: an ExecuteRequest that names a procedure
// (procedures.h) runs it on a free worker, like a one-shot transaction: on
// the member open for writes only, and its reply waits for the watermark
// (the caller: service.cc, stream_reactor.h) to pass its commit, or the read
// fence for what reads only.
#include <fmt/format.h>

#include "server/node.h"
#include "server/procedures.h"

namespace rolis::server {

grpc::Status Node::CallProcedure(const v1::ExecuteRequest& req, v1::ExecuteResponse* resp, CallContext* ctx) {
  resp->Clear();
  const Procedure* p = FindProcedure(req.procedure());
  if (p == nullptr) {
    std::string names;
    for (const Procedure& each : AllProcedures()) names += (names.empty() ? "" : ", ") + std::string(each.name);
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        fmt::format("unknown procedure '{}' (known: {})", req.procedure().substr(0, 128), names));
  }
  if (req.ops_size() != 0) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "a request names a procedure or carries ops, not both");
  }
  if (grpc::Status st = CheckWritable(ctx); !st.ok()) return st;
  if (!p->read_only) {
    if (grpc::Status st = CheckMemory(); !st.ok()) return st;
  }
  WorkerPool::Slot* slot = pool_->LockAny();
  if (slot == nullptr) {
    return grpc::Status(grpc::StatusCode::UNAVAILABLE, "every worker is held by an open interactive transaction");
  }
  std::vector<int64_t> output;
  ProcedureOutcome out;
  grpc::Status st = procedures_->Run(*p, std::span<const uint64_t>(req.args().data(), req.args_size()),
                                     slot->worker.get(), slot->index, &output, &out);
  slot->mu.unlock();
  for (uint32_t i = 0; i < out.conflicts; i++) metrics_->CountAbort(AbortReason::kConflict);
  if (!st.ok()) {
    if (st.error_code() != grpc::StatusCode::INVALID_ARGUMENT) metrics_->CountAbort(AbortReason::kError);
    return st;
  }
  if (out.committed) metrics_->CountCommit();
  for (int64_t v : output) resp->add_output(v);
  resp->set_epoch(replicator_->epoch());
  resp->set_commit_ts(out.commit_ts);
  ctx->commit_ts = out.commit_ts != 0 ? out.commit_ts : replicator_->ReadFence();
  return grpc::Status::OK;
}

}  // namespace rolis::server
