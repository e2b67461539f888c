// The interactive transactions of a Node (Begin, Get, Scan, Put, Delete,
// Commit, Abort): each is bound to one worker from Begin to its end, kept in
// the TxnTable, and ended by its client, its idle timeout (the reaper), a
// conflict, or this member no longer leading. Every operation starts with
// the same preamble (EnterOp).
#include <fmt/format.h>

#include <algorithm>

#include "server/node.h"

namespace rolis::server {
namespace {

using grpc::StatusCode;

grpc::Status Err(StatusCode code, std::string msg) { return grpc::Status(code, std::move(msg)); }

}  // namespace

grpc::Status Node::Begin(const v1::BeginRequest& req, v1::BeginResponse* resp, CallContext* ctx) {
  if (draining()) return ShuttingDown();
  if (!req.read_only()) {
    grpc::Status st = CheckWritable(ctx);
    if (!st.ok()) return st;
  } else if (replicator_->role() == Role::kCatchingUp) {
    // Its store is being replaced (state transfer): nothing to read yet.
    return Err(StatusCode::UNAVAILABLE, "this member is catching up (state transfer): read elsewhere");
  }
  if (!txns_.TryReserve(options_.max_open_txns)) {
    return Err(StatusCode::RESOURCE_EXHAUSTED,
               fmt::format("too many open transactions (limit {}, --max-open-txns)", options_.max_open_txns));
  }
  WorkerPool::Slot* slot = pool_->PickForInteractive(!multi_txn_);
  if (slot == nullptr) {
    txns_.Unreserve();
    return Err(StatusCode::RESOURCE_EXHAUSTED,
               "too many open transactions: this engine allows one open transaction per worker and every "
               "worker that may hold one does");
  }
  auto t = std::make_shared<OpenTxn>();
  t->id = txns_.NewId();
  t->slot = slot;
  t->read_only = req.read_only();
  t->begin_time = Clock::now();
  auto timeout = req.idle_timeout_ms() == 0 ? options_.txn_idle_timeout
                                            : Clock::duration(std::chrono::milliseconds(req.idle_timeout_ms()));
  t->idle_timeout = std::min(timeout, options_.max_txn_idle_timeout);
  {
    std::lock_guard<std::mutex> g(slot->mu);
    t->txn = t->read_only ? slot->worker->BeginReadOnly() : slot->worker->Begin();
    slot->interactive.fetch_add(1, std::memory_order_relaxed);
    t->Touch(Clock::now());
    txns_.Insert(t);
  }
  resp->set_txn_id(t->id);
  return grpc::Status::OK;
}

grpc::Status Node::Acquire(uint64_t txn_id, std::shared_ptr<OpenTxn>* out, std::unique_lock<std::mutex>* lock) {
  std::shared_ptr<OpenTxn> t = txns_.Find(txn_id);
  if (!t) {
    if (draining()) return ShuttingDown();
    return Err(StatusCode::NOT_FOUND, fmt::format("unknown or expired transaction id {}", txn_id));
  }
  std::unique_lock<std::mutex> l(t->slot->mu);
  if (t->finished) return Err(StatusCode::NOT_FOUND, fmt::format("transaction {} has ended", txn_id));
  Clock::time_point now = Clock::now();
  if (t->Expired(now)) {
    Finish(t.get(), true, AbortReason::kExpired);
    return Err(StatusCode::NOT_FOUND, fmt::format("transaction {} expired (idle for more than {} ms)", txn_id,
                                                  std::chrono::duration_cast<std::chrono::milliseconds>(t->idle_timeout).count()));
  }
  t->Touch(now);
  *out = std::move(t);
  *lock = std::move(l);
  return grpc::Status::OK;
}

void Node::Finish(OpenTxn* t, bool abort, AbortReason reason) {
  if (abort) {
    t->txn->Abort();
    metrics_->CountAbort(reason);
  }
  t->finished = true;
  t->txn.reset();  // the engine's transaction is freed with its worker held
  t->slot->interactive.fetch_sub(1, std::memory_order_relaxed);
  pool_->Release(t->slot, !multi_txn_);
  txns_.Erase(t->id);
}

grpc::Status Node::EnterOp(uint64_t txn_id, const std::string& table, bool write, CallContext* ctx, OpenOp* op) {
  grpc::Status st;
  op->table = ResolveTable(table, &st);
  if (!op->table) return st;
  st = Acquire(txn_id, &op->txn, &op->lock);
  if (!st.ok()) return st;
  if (write) {
    if (op->txn->read_only) return Err(StatusCode::FAILED_PRECONDITION, "transaction is read-only");
    if (st = CheckWritable(ctx); !st.ok()) return st;
  }
  if (++op->txn->ops > options_.max_ops_per_txn) {
    op->txn->ops--;
    return Err(StatusCode::RESOURCE_EXHAUSTED,
               fmt::format("transaction has reached {} operations (--max-ops-per-txn); commit or abort it",
                           options_.max_ops_per_txn));
  }
  return grpc::Status::OK;
}

grpc::Status Node::OpFailed(OpenTxn* t, const Status& s) {
  if (s.IsAborted()) {
    Finish(t, true, AbortReason::kConflict);
    return Err(StatusCode::ABORTED, "conflict: transaction aborted; retry it: " + s.message());
  }
  grpc::Status st = ToGrpc(s);
  if (st.error_code() == StatusCode::INTERNAL) Finish(t, true, AbortReason::kError);
  return st;
}

grpc::Status Node::Get(const v1::GetRequest& req, v1::GetResponse* resp, CallContext* ctx) {
  grpc::Status st = CheckKey(req.key(), "key");
  if (!st.ok()) return st;
  OpenOp op;
  if (st = EnterOp(req.txn_id(), req.table(), false, ctx, &op); !st.ok()) return st;
  Status s = op.txn->txn->Get(op.table, req.key(), resp->mutable_value());
  // The reply shows what was read: it waits until a failover cannot undo it.
  if (s.ok() || s.IsNotFound()) ctx->commit_ts = op.txn->txn->max_read_ts();
  if (s.ok()) {
    resp->set_found(true);
    if (resp->value().size() > options_.max_response_bytes) {
      resp->clear_value();
      return Err(StatusCode::RESOURCE_EXHAUSTED, "value exceeds the response limit (--max-message-bytes)");
    }
    return grpc::Status::OK;
  }
  if (s.IsNotFound()) {
    resp->clear_value();
    return grpc::Status::OK;
  }
  return OpFailed(op.txn.get(), s);
}

grpc::Status Node::Scan(const v1::ScanRequest& req, v1::ScanResponse* resp, CallContext* ctx) {
  if (req.start_key().size() > options_.max_key_bytes || req.end_key().size() > options_.max_key_bytes) {
    return Err(StatusCode::INVALID_ARGUMENT,
               fmt::format("scan bound exceeds the key limit of {} bytes (--max-key-bytes)", options_.max_key_bytes));
  }
  OpenOp op;
  if (grpc::Status st = EnterOp(req.txn_id(), req.table(), false, ctx, &op); !st.ok()) return st;
  uint32_t limit = req.limit() == 0 ? options_.default_scan_limit : std::min(req.limit(), options_.max_scan_limit);
  size_t bytes = 0;
  uint32_t count = 0;
  bool more = false;
  // Ask for one key past the limit to learn whether the limit cut the scan.
  Status s = op.txn->txn->Scan(op.table, req.start_key(), req.end_key(), limit + 1,
                               [&](std::string_view k, std::string_view v) {
                                 bytes += k.size() + v.size() + 8;
                                 if (count == limit || bytes > options_.max_response_bytes) {
                                   more = true;
                                   return false;
                                 }
                                 auto* kv = resp->add_items();
                                 kv->set_key(k.data(), k.size());
                                 kv->set_value(v.data(), v.size());
                                 count++;
                                 return true;
                               });
  if (!s.ok()) {
    resp->Clear();
    return OpFailed(op.txn.get(), s);
  }
  ctx->commit_ts = op.txn->txn->max_read_ts();
  resp->set_more(more);
  return grpc::Status::OK;
}

grpc::Status Node::Put(const v1::PutRequest& req, v1::PutResponse* resp, CallContext* ctx) {
  grpc::Status st = CheckKey(req.key(), "key");
  if (st.ok()) st = CheckValue(req.value(), "value");
  if (st.ok()) st = CheckMemory();
  if (!st.ok()) return st;
  OpenOp op;
  if (st = EnterOp(req.txn_id(), req.table(), true, ctx, &op); !st.ok()) return st;
  Status s = op.txn->txn->Put(op.table, req.key(), req.value());
  if (s.ok()) {
    op.txn->adds_data = true;
    return grpc::Status::OK;
  }
  return OpFailed(op.txn.get(), s);
}

grpc::Status Node::Delete(const v1::DeleteRequest& req, v1::DeleteResponse* resp, CallContext* ctx) {
  grpc::Status st = CheckKey(req.key(), "key");
  if (!st.ok()) return st;
  OpenOp op;
  if (st = EnterOp(req.txn_id(), req.table(), true, ctx, &op); !st.ok()) return st;
  Status s = op.txn->txn->Delete(op.table, req.key());
  if (s.ok() || s.IsNotFound()) ctx->commit_ts = op.txn->txn->max_read_ts();  // `found` shows a read
  if (s.ok()) {
    resp->set_found(true);
    return grpc::Status::OK;
  }
  if (s.IsNotFound()) return grpc::Status::OK;
  return OpFailed(op.txn.get(), s);
}

grpc::Status Node::Commit(const v1::CommitRequest& req, v1::CommitResponse* resp, CallContext* ctx) {
  std::shared_ptr<OpenTxn> t;
  std::unique_lock<std::mutex> lock;
  grpc::Status st = Acquire(req.txn_id(), &t, &lock);
  if (!st.ok()) return st;
  ctx->begin_time = t->begin_time;
  if (!t->read_only) {
    // Leadership may have moved since Begin: never commit on a follower.
    st = CheckWritable(ctx);
    if (!st.ok()) {
      Finish(t.get(), true, AbortReason::kError);
      return st;
    }
    // Near the memory limit a transaction that adds data ends here, like a
    // one-shot that would (memory_guard.h).
    if (t->adds_data && memory_ != nullptr && memory_->under_pressure()) {
      Finish(t.get(), true, AbortReason::kMemory);
      return Err(StatusCode::RESOURCE_EXHAUSTED, memory_->RefusalMessage());
    }
  }
  Status s = t->txn->Commit();
  uint64_t ts = s.ok() ? t->txn->commit_ts() : 0;
  uint64_t read_ts = t->txn->max_read_ts();
  if (s.ok()) {
    Finish(t.get(), false, AbortReason::kCount);
    metrics_->CountCommit();
    resp->set_epoch(replicator_->epoch());
    resp->set_commit_ts(ts);
    // Read-write: its own ts (above everything it read); read-only: what it read.
    ctx->commit_ts = ts != 0 ? ts : read_ts;
    return grpc::Status::OK;
  }
  // A failed commit has ended the transaction in the engine.
  bool conflict = s.IsAborted();
  metrics_->CountAbort(conflict ? AbortReason::kConflict : AbortReason::kError);
  Finish(t.get(), false, AbortReason::kCount);
  if (conflict) return Err(StatusCode::ABORTED, "conflict: transaction aborted at commit; retry it: " + s.message());
  return ToGrpc(s);
}

grpc::Status Node::Abort(const v1::AbortRequest& req, v1::AbortResponse* resp, CallContext* ctx) {
  std::shared_ptr<OpenTxn> t;
  std::unique_lock<std::mutex> lock;
  grpc::Status st = Acquire(req.txn_id(), &t, &lock);
  if (!st.ok()) return st;
  Finish(t.get(), true, AbortReason::kClient);
  return grpc::Status::OK;
}


// A read-write transaction that a client left open on a leader that was
// then paused or deposed (the client gave up on it) would otherwise stay
// until its idle timeout, and while it is open the engine's snapshot epoch
// cannot pass the epoch it began in: this member's read-only snapshots
// (a follower's reads) would stay at the moment it stopped leading.
size_t Node::AbortUncommittable() {
  if (replicator_->writable()) return 0;
  size_t n = 0;
  for (auto& t : txns_.All()) {
    if (t->read_only) continue;
    std::unique_lock<std::mutex> lock(t->slot->mu);
    if (!t->finished && !replicator_->writable()) {
      Finish(t.get(), true, AbortReason::kNotLeader);
      n++;
    }
  }
  return n;
}

size_t Node::ReapExpired(Clock::time_point now) {
  size_t n = 0;
  for (auto& t : txns_.CollectExpired(now)) {
    std::unique_lock<std::mutex> lock(t->slot->mu);
    if (!t->finished && t->Expired(now)) {
      Finish(t.get(), true, AbortReason::kExpired);
      n++;
    }
  }
  return n;
}

}  // namespace rolis::server
