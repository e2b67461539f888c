// Node: the transactional front of one rolisd member, independent of the
// network. It validates requests, runs one-shot and interactive transactions
// on the engine's Workers (the interactive ones in interactive_txns.cc),
// enforces limits, checks the role at every write entry point and reaps idle
// interactive transactions. The gRPC services
// (service.h) are thin adapters over it; tests drive it directly.
//
// Every method returns a gRPC status with the codes of client.proto:
//   INVALID_ARGUMENT    malformed/oversized input, unknown table (nothing changed)
//   NOT_FOUND           unknown or expired transaction id
//   ABORTED             OCC conflict (retry the whole transaction)
//   RESOURCE_EXHAUSTED  too many open transactions, too many ops in one, or
//                       a write that adds data near the memory limit
//   FAILED_PRECONDITION a write reached a follower (ctx.leader is set), or a
//                       write in a read-only transaction
//   UNAVAILABLE         no leader open for writes, or shutting down
#pragma once

#include <grpcpp/support/status.h>

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "rolis/db.h"
#include "rolis/v1/client.pb.h"
#include "server/config.h"
#include "server/memory_guard.h"
#include "server/metrics.h"
#include "server/replicator.h"
#include "server/txn_table.h"
#include "server/worker_pool.h"

namespace rolis::server {

class ProcedureHost;

// Outputs of a call besides its response message.
struct CallContext {
  std::string leader;      // set with FAILED_PRECONDITION: the leader's client address ("rolis-leader")
  // Wait for the watermark to pass this ts before replying: the commit ts of
  // a read-write transaction, or the newest version a reply shows
  // (Transaction::max_read_ts), so nothing a failover could discard is shown.
  uint64_t commit_ts = 0;
  Clock::time_point begin_time{};  // Commit: when the transaction began (latency)
};

struct NodeOptions {
  // Limits and timeouts (see ServerConfig).
  size_t max_key_bytes = 1024;
  size_t max_value_bytes = 64 * 1024;
  uint32_t max_ops_per_txn = 10000;
  uint32_t max_open_txns = 10000;
  uint32_t max_scan_limit = 10000;
  uint32_t default_scan_limit = 1000;
  size_t max_response_bytes = 4 * 1024 * 1024;
  Clock::duration txn_idle_timeout = std::chrono::seconds(30);
  Clock::duration max_txn_idle_timeout = std::chrono::minutes(10);
  uint32_t execute_retries = 5;
  uint32_t max_execute_retries = 50;
  // How often the reaper looks for idle transactions and quiesces idle workers.
  Clock::duration reaper_period = std::chrono::milliseconds(100);
  std::vector<std::string> tables = {"kv"};

  static NodeOptions FromConfig(const ServerConfig& c);
};

class Node {
 public:
  // `db`, `replicator` and `metrics` are not owned and must outlive the Node.
  // The replicator must be the engine's commit hook.
  Node(NodeOptions options, Database* db, Replicator* replicator, Metrics* metrics);
  ~Node();

  // Creates the tables, registers one Worker per stream, probes whether the
  // engine allows several open transactions per Worker, starts the reaper.
  Status Start(uint32_t workers);
  // Aborts every open interactive transaction (reason shutdown) and stops
  // the reaper. New calls get UNAVAILABLE once BeginDrain was called.
  void BeginDrain() { draining_.store(true); }
  bool draining() const { return draining_.load(std::memory_order_relaxed); }
  void Stop();
  // Writes that add data are refused while `guard` reports memory pressure
  // (not owned; must outlive the Node). Call before Start; none by default.
  void SetMemoryGuard(const MemoryGuard* guard) { memory_ = guard; }

  // A request with `procedure` set runs that procedure (CallProcedure).
  grpc::Status Execute(const v1::ExecuteRequest& req, v1::ExecuteResponse* resp, CallContext* ctx);

  grpc::Status Begin(const v1::BeginRequest& req, v1::BeginResponse* resp, CallContext* ctx);
  grpc::Status Get(const v1::GetRequest& req, v1::GetResponse* resp, CallContext* ctx);
  grpc::Status Scan(const v1::ScanRequest& req, v1::ScanResponse* resp, CallContext* ctx);
  grpc::Status Put(const v1::PutRequest& req, v1::PutResponse* resp, CallContext* ctx);
  grpc::Status Delete(const v1::DeleteRequest& req, v1::DeleteResponse* resp, CallContext* ctx);
  grpc::Status Commit(const v1::CommitRequest& req, v1::CommitResponse* resp, CallContext* ctx);
  grpc::Status Abort(const v1::AbortRequest& req, v1::AbortResponse* resp, CallContext* ctx);

  // Aborts transactions idle past their timeout; returns how many. Runs on
  // the reaper thread every reaper_period; exposed for tests.
  size_t ReapExpired(Clock::time_point now);
  // Aborts every open read-write transaction when this member does not lead
  // (it could never commit them); returns how many. Runs on the reaper
  // thread; exposed for tests.
  size_t AbortUncommittable();
  // Lets the engine's snapshot epoch advance while the caller holds every
  // worker's mutex (the replicator fixing a leader's snapshot:
  // Replicator::SetSnapshotEpochUnpinner): aborts every open read-write
  // transaction and quiesces the workers. Returns how many it aborted.
  size_t UnpinSnapshotEpochWithWorkersHeld();

  int64_t open_txns() const { return txns_.size(); }
  // Per stream, the mutex held around every transaction on its worker (for
  // the replicator, which closes idle batches under it).
  std::vector<std::mutex*> worker_mutexes() const;
  size_t workers() const { return pool_ ? pool_->size() : 0; }
  // False when the engine allows only one open transaction per Worker; then
  // interactive transactions each reserve a whole Worker (see DESIGN notes
  // in docs/operations.md).
  bool multi_txn_workers() const { return multi_txn_; }
  const NodeOptions& options() const { return options_; }

 private:
  Table* ResolveTable(const std::string& name, grpc::Status* st) const;
  grpc::Status CheckKey(const std::string& key, const char* what) const;
  grpc::Status CheckValue(const std::string& value, const char* what) const;
  grpc::Status CheckWritable(CallContext* ctx) const;
  // RESOURCE_EXHAUSTED while memory is nearly full (memory_guard.h), counted
  // as an abort of reason memory; OK otherwise. For client writes that add
  // data only: deletes (which free it) and replication are never refused.
  grpc::Status CheckMemory() const;
  grpc::Status ValidateExecute(const v1::ExecuteRequest& req, std::vector<Table*>* tables, bool* writes) const;

  // One attempt of a one-shot transaction on a locked worker. Returns the
  // engine's status (kAborted: retry); sets *condition_failed.
  Status RunOnce(Worker* worker, const v1::ExecuteRequest& req, const std::vector<Table*>& tables,
                 v1::ExecuteResponse* resp, bool* condition_failed, uint64_t* commit_ts, grpc::Status* final);

  // The preamble of every operation of an interactive transaction: resolves
  // the table, acquires the transaction (Acquire), refuses a write in a
  // read-only transaction or on a member not open for writes, and counts the
  // operation against --max-ops-per-txn. On success *op holds the
  // transaction with its worker locked.
  struct OpenOp {
    Table* table = nullptr;
    std::shared_ptr<OpenTxn> txn;
    std::unique_lock<std::mutex> lock;
  };
  grpc::Status EnterOp(uint64_t txn_id, const std::string& table, bool write, CallContext* ctx, OpenOp* op);
  // An engine error in an interactive operation. A conflict dooms the
  // transaction (it is aborted and forgotten); rejected input leaves it open.
  grpc::Status OpFailed(OpenTxn* t, const Status& s);

  // Looks up an open transaction and locks its worker. On success *lock holds
  // the worker lock and the transaction is live (not finished, not expired).
  grpc::Status Acquire(uint64_t txn_id, std::shared_ptr<OpenTxn>* txn, std::unique_lock<std::mutex>* lock);
  // Ends an open transaction whose worker lock is held: aborts it in the
  // engine unless committed, removes it from the table.
  void Finish(OpenTxn* txn, bool abort, AbortReason reason);

  void ReaperLoop();

  // A named procedure (procedures.h; in procedure_calls.cc).
  grpc::Status CallProcedure(const v1::ExecuteRequest& req, v1::ExecuteResponse* resp, CallContext* ctx);

  NodeOptions options_;
  Database* db_;
  Replicator* replicator_;
  Metrics* metrics_;
  const MemoryGuard* memory_ = nullptr;
  std::unique_ptr<WorkerPool> pool_;
  std::unique_ptr<ProcedureHost> procedures_;
  TxnTable txns_;
  Table* default_table_ = nullptr;
  std::map<std::string, Table*, std::less<>> tables_;
  bool multi_txn_ = true;
  std::atomic<bool> draining_{false};

  std::mutex reaper_mu_;
  std::condition_variable reaper_cv_;
  bool stop_reaper_ = false;
  std::thread reaper_;
};

// UNAVAILABLE: the member is shutting down (its calls are refused).
grpc::Status ShuttingDown();

// Engine status to gRPC status (kNotFound maps to NOT_FOUND; callers handle
// "absent key" before calling this).
grpc::Status ToGrpc(const Status& s);

}  // namespace rolis::server
