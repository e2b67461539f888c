#include "rolis/thread_name.h"
#include "server/node.h"
#include "server/procedures.h"

#include <fmt/format.h>

#include <algorithm>
#include <random>

namespace rolis::server {
namespace {

using grpc::StatusCode;

grpc::Status Err(StatusCode code, std::string msg) { return grpc::Status(code, std::move(msg)); }

// Randomized exponential backoff between attempts of a one-shot transaction:
// the first retry only yields, later ones sleep up to 10us * 2^attempt, at
// most 1 ms. The worker is not held while sleeping.
void Backoff(uint32_t attempt) {
  if (attempt == 0) {
    std::this_thread::yield();
    return;
  }
  thread_local std::minstd_rand rng(std::random_device{}());
  uint64_t cap_us = std::min<uint64_t>(1000, uint64_t{10} << std::min(attempt, 7u));
  std::this_thread::sleep_for(std::chrono::microseconds(1 + rng() % cap_us));
}

}  // namespace

grpc::Status ShuttingDown() { return Err(StatusCode::UNAVAILABLE, "server is shutting down"); }

grpc::Status ToGrpc(const Status& s) {
  switch (s.code()) {
    case rolis::StatusCode::kOk: return grpc::Status::OK;
    case rolis::StatusCode::kNotFound: return Err(StatusCode::NOT_FOUND, s.message());
    case rolis::StatusCode::kAlreadyExists: return Err(StatusCode::ALREADY_EXISTS, s.message());
    case rolis::StatusCode::kAborted: return Err(StatusCode::ABORTED, "conflict: " + s.message());
    case rolis::StatusCode::kInvalidArgument: return Err(StatusCode::INVALID_ARGUMENT, s.message());
    case rolis::StatusCode::kFailedPrecondition: return Err(StatusCode::FAILED_PRECONDITION, s.message());
    case rolis::StatusCode::kResourceExhausted: return Err(StatusCode::RESOURCE_EXHAUSTED, s.message());
    case rolis::StatusCode::kInternal: return Err(StatusCode::INTERNAL, s.message());
  }
  return Err(StatusCode::INTERNAL, s.message());
}

NodeOptions NodeOptions::FromConfig(const ServerConfig& c) {
  NodeOptions o;
  o.max_key_bytes = c.max_key_bytes;
  o.max_value_bytes = c.max_value_bytes;
  o.max_ops_per_txn = c.max_ops_per_txn;
  o.max_open_txns = c.max_open_txns;
  o.max_scan_limit = c.max_scan_limit;
  o.default_scan_limit = std::min<uint32_t>(1000, c.max_scan_limit);
  // Leave room for framing and the non-value fields of a response.
  o.max_response_bytes = c.max_message_bytes - std::min<size_t>(c.max_message_bytes / 8, 64 * 1024);
  o.txn_idle_timeout = c.txn_idle_timeout;
  o.max_txn_idle_timeout = c.max_txn_idle_timeout;
  o.execute_retries = c.execute_retries;
  o.max_execute_retries = c.max_execute_retries;
  o.tables = c.tables;
  return o;
}

Node::Node(NodeOptions options, Database* db, Replicator* replicator, Metrics* metrics)
    : options_(std::move(options)),
      db_(db),
      replicator_(replicator),
      metrics_(metrics),
      txns_(std::random_device{}() ^ (static_cast<uint64_t>(std::random_device{}()) << 32) ^
            static_cast<uint64_t>(Clock::now().time_since_epoch().count())) {}

Node::~Node() { Stop(); }

std::vector<std::mutex*> Node::worker_mutexes() const {
  std::vector<std::mutex*> out;
  for (size_t i = 0; pool_ && i < pool_->size(); i++) out.push_back(&pool_->slot(i).mu);
  return out;
}

Status Node::Start(uint32_t workers) {
  for (const std::string& name : options_.tables) {
    if (IsBenchmarkTableName(name)) {
      return Status::InvalidArgument(fmt::format("table {}: the name is reserved for the benchmark procedures", name));
    }
    Table* t = nullptr;
    Status s = db_->CreateTable(name, &t);
    if (s.code() == rolis::StatusCode::kAlreadyExists) s = db_->GetTable(name, &t);
    if (!s.ok()) return Status::Internal(fmt::format("table {}: {}", name, s.message()));
    tables_.emplace(name, t);
  }
  auto kv = tables_.find("kv");
  if (kv == tables_.end()) return Status::Internal("no default table kv");
  default_table_ = kv->second;

  std::vector<std::unique_ptr<Worker>> ws;
  for (uint32_t i = 0; i < workers; i++) {
    auto w = db_->RegisterWorker();
    if (!w) return Status::ResourceExhausted(fmt::format("engine refused worker {} of {}", i, workers));
    replicator_->RegisterStream(w->id(), i);
    ws.push_back(std::move(w));
  }
  pool_ = std::make_unique<WorkerPool>(std::move(ws));
  // The procedures' tables, after the configured ones (their ids agree on
  // every member).
  procedures_ = std::make_unique<ProcedureHost>(db_, pool_->size());
  std::vector<std::string> names;
  if (Status ps = procedures_->CreateTables(&names); !ps.ok()) {
    return Status::Internal("procedure tables: " + ps.message());
  }
  // Clients may read and write them with ops too (docs/client.md, "Procedures").
  for (const std::string& name : names) {
    Table* t = nullptr;
    if (db_->GetTable(name, &t).ok()) tables_.emplace(name, t);
  }

  // Does the engine allow several open transactions on one Worker? (Interactive
  // transactions bound to a worker interleave with one-shots on it.) Probe
  // with a read of an absent key, which changes nothing.
  {
    WorkerPool::Slot& s = pool_->slot(0);
    std::lock_guard<std::mutex> g(s.mu);
    auto first = s.worker->Begin();
    auto second = s.worker->Begin();
    std::string value;
    Status st = second->Get(default_table_, "rolisd-probe", &value);
    multi_txn_ = st.code() != rolis::StatusCode::kFailedPrecondition;
    second->Abort();
    first->Abort();
  }

  reaper_ = std::thread([this] { ReaperLoop(); });
  return Status::OK();
}

void Node::Stop() {
  draining_.store(true);
  {
    std::lock_guard<std::mutex> g(reaper_mu_);
    if (stop_reaper_) return;
    stop_reaper_ = true;
  }
  reaper_cv_.notify_all();
  if (reaper_.joinable()) reaper_.join();
  for (auto& t : txns_.All()) {
    std::unique_lock<std::mutex> lock(t->slot->mu);
    if (!t->finished) Finish(t.get(), true, AbortReason::kShutdown);
  }
}

size_t Node::UnpinSnapshotEpochWithWorkersHeld() {
  size_t n = 0;
  for (auto& t : txns_.All()) {
    if (t->read_only || t->finished) continue;
    Finish(t.get(), true, AbortReason::kLeaderSnapshot);
    n++;
  }
  // An idle worker still publishes the epoch of its last transaction, which
  // holds the snapshot epoch back as well (the reaper quiesces idle workers,
  // but not held ones). Quiesce leaves a worker with open transactions be.
  for (size_t i = 0; i < pool_->size(); i++) pool_->slot(i).worker->Quiesce();
  return n;
}

void Node::ReaperLoop() {
  NameThisThread("rolis-reaper");
  std::unique_lock<std::mutex> lock(reaper_mu_);
  while (!stop_reaper_) {
    reaper_cv_.wait_for(lock, options_.reaper_period);
    if (stop_reaper_) break;
    lock.unlock();
    ReapExpired(Clock::now());
    AbortUncommittable();
    // Let reclamation advance past workers that sit idle.
    for (size_t i = 0; i < pool_->size(); i++) {
      WorkerPool::Slot& s = pool_->slot(i);
      if (s.interactive.load(std::memory_order_relaxed) != 0) continue;
      if (s.mu.try_lock()) {
        if (s.interactive.load(std::memory_order_relaxed) == 0) s.worker->Quiesce();
        s.mu.unlock();
      }
    }
    lock.lock();
  }
}


Table* Node::ResolveTable(const std::string& name, grpc::Status* st) const {
  if (name.empty() || name == "kv") return default_table_;
  auto it = tables_.find(name);
  if (it != tables_.end()) return it->second;
  *st = Err(StatusCode::INVALID_ARGUMENT,
            fmt::format("unknown table '{}' (tables are fixed at startup by --tables)", name.substr(0, 128)));
  return nullptr;
}

grpc::Status Node::CheckKey(const std::string& key, const char* what) const {
  if (key.empty()) return Err(StatusCode::INVALID_ARGUMENT, fmt::format("{} is empty", what));
  if (key.size() > options_.max_key_bytes) {
    return Err(StatusCode::INVALID_ARGUMENT, fmt::format("{} of {} bytes exceeds the limit of {} (--max-key-bytes)",
                                                         what, key.size(), options_.max_key_bytes));
  }
  return grpc::Status::OK;
}

grpc::Status Node::CheckValue(const std::string& value, const char* what) const {
  if (value.size() > options_.max_value_bytes) {
    return Err(StatusCode::INVALID_ARGUMENT,
               fmt::format("{} of {} bytes exceeds the limit of {} (--max-value-bytes)", what, value.size(),
                           options_.max_value_bytes));
  }
  return grpc::Status::OK;
}

grpc::Status Node::CheckWritable(CallContext* ctx) const {
  Role role = replicator_->role();
  if (role == Role::kStandalone || role == Role::kLeader) return grpc::Status::OK;
  if (role == Role::kFollower) {
    std::string leader = replicator_->leader_client_address();
    if (!leader.empty()) {
      ctx->leader = leader;
      return Err(StatusCode::FAILED_PRECONDITION,
                 fmt::format("not the leader: send writes to the leader at {}", leader));
    }
  }
  return Err(StatusCode::UNAVAILABLE,
             fmt::format("no leader is open for writes (this member is {})", RoleName(role)));
}

grpc::Status Node::CheckMemory() const {
  if (memory_ == nullptr || !memory_->under_pressure()) return grpc::Status::OK;
  metrics_->CountAbort(AbortReason::kMemory);
  return Err(StatusCode::RESOURCE_EXHAUSTED, memory_->RefusalMessage());
}

// --------------------------------------------------------------------------
// One-shot transactions.

grpc::Status Node::ValidateExecute(const v1::ExecuteRequest& req, std::vector<Table*>* tables, bool* writes) const {
  if (static_cast<uint32_t>(req.ops_size()) > options_.max_ops_per_txn) {
    return Err(StatusCode::INVALID_ARGUMENT, fmt::format("{} ops exceed the limit of {} per transaction "
                                                         "(--max-ops-per-txn)",
                                                         req.ops_size(), options_.max_ops_per_txn));
  }
  tables->clear();
  *writes = false;
  for (int i = 0; i < req.ops_size(); i++) {
    const v1::Op& op = req.ops(i);
    grpc::Status st;
    switch (op.kind()) {
      case v1::Op::GET:
        st = CheckKey(op.key(), "key");
        break;
      case v1::Op::PUT:
        *writes = true;
        st = CheckKey(op.key(), "key");
        if (st.ok()) st = CheckValue(op.value(), "value");
        break;
      case v1::Op::DELETE:
        *writes = true;
        st = CheckKey(op.key(), "key");
        break;
      case v1::Op::PUT_IF:
        *writes = true;
        st = CheckKey(op.key(), "key");
        if (st.ok()) st = CheckValue(op.value(), "value");
        if (st.ok() && !op.expect_absent()) st = CheckValue(op.expected(), "expected value");
        break;
      case v1::Op::SCAN:
        if (op.key().size() > options_.max_key_bytes || op.end_key().size() > options_.max_key_bytes) {
          st = Err(StatusCode::INVALID_ARGUMENT,
                   fmt::format("scan bound exceeds the key limit of {} bytes (--max-key-bytes)", options_.max_key_bytes));
        }
        break;
      default:
        st = Err(StatusCode::INVALID_ARGUMENT, "op kind not set or unknown");
        break;
    }
    Table* t = nullptr;
    if (st.ok()) t = ResolveTable(op.table(), &st);
    if (!st.ok()) return Err(st.error_code(), fmt::format("op {}: {}", i, st.error_message()));
    tables->push_back(t);
  }
  return grpc::Status::OK;
}

namespace {

// Whether a one-shot may grow the data (PUT or PUT_IF): refused under memory
// pressure, while reads and deletes still run.
bool AddsData(const v1::ExecuteRequest& req) {
  for (const v1::Op& op : req.ops()) {
    if (op.kind() == v1::Op::PUT || op.kind() == v1::Op::PUT_IF) return true;
  }
  return false;
}

// A request names every key of its point ops up front: the engine looks
// them up together before the first op runs (Transaction::Prefetch).

void PrefetchPointOps(Transaction* txn, const v1::ExecuteRequest& req, const std::vector<Table*>& tables) {
  if (req.ops_size() < 2) return;
  thread_local std::vector<TableKey> keys;
  keys.clear();
  for (int i = 0; i < req.ops_size(); i++) {
    if (req.ops(i).kind() != v1::Op::SCAN) keys.push_back({tables[static_cast<size_t>(i)], req.ops(i).key()});
  }
  txn->Prefetch(keys);
}

}  // namespace

Status Node::RunOnce(Worker* worker, const v1::ExecuteRequest& req, const std::vector<Table*>& tables,
                     v1::ExecuteResponse* resp, bool* condition_failed, uint64_t* commit_ts, grpc::Status* final) {
  std::unique_ptr<Transaction> txn = worker->Begin();
  PrefetchPointOps(txn.get(), req, tables);
  auto results = resp->mutable_results();
  results->Clear();
  size_t bytes = 0;
  std::string current;
  auto fail = [&](Status s) {
    txn->Abort();
    return s;
  };
  for (int i = 0; i < req.ops_size(); i++) {
    const v1::Op& op = req.ops(i);
    Table* table = tables[i];
    v1::OpResult* r = results->Add();
    Status s;
    switch (op.kind()) {
      case v1::Op::GET: {
        s = txn->Get(table, op.key(), r->mutable_value());
        if (s.ok()) {
          r->set_found(true);
          bytes += r->value().size();
        } else if (s.IsNotFound()) {
          r->clear_value();
          s = Status::OK();
        }
        break;
      }
      case v1::Op::PUT:
        s = txn->Put(table, op.key(), op.value());
        break;
      case v1::Op::DELETE:
        s = txn->Delete(table, op.key());
        if (s.ok()) {
          r->set_found(true);
        } else if (s.IsNotFound()) {
          s = Status::OK();
        }
        break;
      case v1::Op::PUT_IF: {
        current.clear();
        s = txn->Get(table, op.key(), &current);
        bool present = s.ok();
        if (!s.ok() && !s.IsNotFound()) break;
        s = Status::OK();
        r->set_found(present);
        bool holds = op.expect_absent() ? !present : (present && current == op.expected());
        if (!holds) {
          // The whole transaction writes nothing and returns no reads: what
          // it read was never validated (no commit), so it may be a mix of
          // states that never existed together.
          txn->Abort();
          results->Clear();
          *condition_failed = true;
          return Status::OK();
        }
        s = txn->Put(table, op.key(), op.value());
        break;
      }
      case v1::Op::SCAN: {
        uint32_t limit = op.limit() == 0 ? options_.default_scan_limit : std::min(op.limit(), options_.max_scan_limit);
        bool over = false;
        uint32_t count = 0;
        s = txn->Scan(table, op.key(), op.end_key(), limit, [&](std::string_view k, std::string_view v) {
          bytes += k.size() + v.size() + 8;
          if (bytes > options_.max_response_bytes) {
            over = true;
            return false;
          }
          auto* kv = r->add_items();
          kv->set_key(k.data(), k.size());
          kv->set_value(v.data(), v.size());
          return ++count < limit;
        });
        if (s.ok() && over) {
          *final = Err(StatusCode::RESOURCE_EXHAUSTED,
                       fmt::format("op {}: scan result exceeds the response limit of {} bytes "
                                   "(--max-message-bytes); lower the scan limit",
                                   i, options_.max_response_bytes));
          return fail(Status::ResourceExhausted("response too large"));
        }
        break;
      }
      default:
        s = Status::InvalidArgument("op kind");
        break;
    }
    if (!s.ok()) {
      if (!s.IsAborted()) *final = Err(ToGrpc(s).error_code(), fmt::format("op {}: {}", i, s.message()));
      return fail(s);
    }
    if (bytes > options_.max_response_bytes) {
      *final = Err(StatusCode::RESOURCE_EXHAUSTED,
                   fmt::format("results exceed the response limit of {} bytes (--max-message-bytes)",
                               options_.max_response_bytes));
      return fail(Status::ResourceExhausted("response too large"));
    }
  }
  Status s = txn->Commit();
  if (s.ok()) {
    *commit_ts = txn->commit_ts();
  } else if (!s.IsAborted()) {
    *final = ToGrpc(s);
  }
  return s;
}

grpc::Status Node::Execute(const v1::ExecuteRequest& req, v1::ExecuteResponse* resp, CallContext* ctx) {
  if (draining()) return ShuttingDown();
  if (!req.procedure().empty()) return CallProcedure(req, resp, ctx);
  resp->Clear();
  thread_local std::vector<Table*> tables;
  bool writes = false;
  grpc::Status st = ValidateExecute(req, &tables, &writes);
  if (!st.ok()) return st;
  // One-shot transactions are linearizable, reads included: they run on the
  // member that is open for writes only.
  st = CheckWritable(ctx);
  if (!st.ok()) return st;
  if (writes && AddsData(req)) {
    if (st = CheckMemory(); !st.ok()) return st;
  }
  uint32_t retries = req.max_retries() == 0 ? options_.execute_retries
                                            : std::min(req.max_retries(), options_.max_execute_retries);
  for (uint32_t attempt = 0;; attempt++) {
    WorkerPool::Slot* slot = pool_->LockAny();
    if (slot == nullptr) {
      return Err(StatusCode::UNAVAILABLE, "every worker is held by an open interactive transaction");
    }
    bool condition_failed = false;
    uint64_t commit_ts = 0;
    grpc::Status final;
    Status s = RunOnce(slot->worker.get(), req, tables, resp, &condition_failed, &commit_ts, &final);
    slot->mu.unlock();
    if (s.ok()) {
      if (condition_failed) {
        resp->set_condition_failed(true);
        metrics_->CountAbort(AbortReason::kCondition);
        ctx->commit_ts = replicator_->ReadFence();  // it shows what it read
        return grpc::Status::OK;
      }
      metrics_->CountCommit();
      resp->set_epoch(replicator_->epoch());
      resp->set_commit_ts(commit_ts);
      // A read-only transaction waits for the watermark to pass what it may
      // have read (docs/replication.md), a read-write one for its own ts.
      ctx->commit_ts = writes ? commit_ts : replicator_->ReadFence();
      return grpc::Status::OK;
    }
    if (!s.IsAborted()) {
      metrics_->CountAbort(AbortReason::kError);
      resp->clear_results();
      return final.ok() ? ToGrpc(s) : final;
    }
    metrics_->CountAbort(AbortReason::kConflict);
    if (attempt >= retries) {
      resp->clear_results();
      return Err(StatusCode::ABORTED,
                 fmt::format("conflict: transaction aborted after {} attempts; retry it", attempt + 1));
    }
    if (draining()) return ShuttingDown();
    Backoff(attempt);
  }
}

}  // namespace rolis::server
