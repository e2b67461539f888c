// Named server-side procedures (docs/client.md, "Procedures"): the
// transactions of the benchmark workloads (engine/src/workloads) run inside
// rolisd, so that a client sends one request per transaction. A request is an
// ExecuteRequest with `procedure` set and `args` (unsigned 64-bit numbers);
// the reply is an ExecuteResponse with `output`.
//
// Every workload has three kinds of procedure:
//   <workload>.setup   its sizes (args); stored in the table "bench.procedures" so
//                      that every member (and a later leader) runs it with the
//                      same; output: [parts], how many load parts there are
//   <workload>.load    one part of the initial population (args: [part]);
//                      output: [rows]
//   the transactions   output: [committed (0: rolled back by the application),
//                      conflict aborts retried]
// plus checks (bank.audit, tpca.check, tpcc.check) that fail with INTERNAL
// when an invariant does not hold.
//
// The workloads' tables are named with the reserved prefix "bench."
// ("bench.bank", "bench.tpcc_stock", ...), which user tables (--tables)
// cannot take: a user table "bank" is not the bank workload's.
//
// The registry (FindProcedure) is a fixed table: names, the workload, how
// many args, and whether the procedure only reads (authz.h refuses the others
// to client-readonly certificates). Args are checked against the workload's
// sizes before anything runs: bad args are INVALID_ARGUMENT and change
// nothing.
#pragma once

#include <grpcpp/support/status.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rolis/db.h"

namespace rolis::server {

// Names of tables that belong to the procedures; refused in --tables.
inline constexpr std::string_view kBenchmarkTablePrefix = "bench.";
inline bool IsBenchmarkTableName(std::string_view name) { return name.starts_with(kBenchmarkTablePrefix); }

enum class ProcWorkload : uint8_t { kYcsbpp, kBank, kHash, kRetwis, kTpca, kTpcc, kCount };

enum class ProcKind : uint8_t {
  kSetup,
  kLoad,
  kTxn,    // one of the workload's transactions (type = its TxnOutcome type)
  kCheck,  // an invariant check (read-only)
};

struct Procedure {
  std::string_view name;
  ProcWorkload workload;
  ProcKind kind;
  uint32_t type;  // kTxn: the workload's transaction type
  uint32_t min_args, max_args;
  bool read_only;
};

// nullptr for an unknown name.
const Procedure* FindProcedure(std::string_view name);
// Every procedure, in the registry's order (docs, error messages).
std::span<const Procedure> AllProcedures();
// Whether a call of `name` may write: true for every name that is not a
// read-only procedure (an unknown one included: it needs the write access
// and then fails with INVALID_ARGUMENT).
bool ProcedureWrites(std::string_view name);

// What a call did besides its output.
struct ProcedureOutcome {
  // A committed read-write transaction's; 0 for the others (setup and load
  // included): the reply then waits for the read fence, which covers them.
  uint64_t commit_ts = 0;
  uint32_t conflicts = 0;     // conflict aborts retried
  bool committed = false;
};

// The workloads of one member: their tables, their sizes (from the
// "bench.procedures" table) and each worker's per-thread state. Run is called with
// the worker's mutex held; one ProcedureHost serves all workers.
class ProcedureHost {
 public:
  // `db` not owned. `workers`: the size of the Node's WorkerPool.
  ProcedureHost(Database* db, size_t workers);
  ~ProcedureHost();

  // Creates every workload's tables (empty) and the table "bench.procedures", in a
  // fixed order: every member calls it at start, so that table ids agree
  // (replicated writes name tables by id). Returns their names in *names.
  Status CreateTables(std::vector<std::string>* names);

  // Runs `p` with `args` on `worker` (index `slot` of the pool, its mutex
  // held). OK with *out filled, or the error (INVALID_ARGUMENT for bad args,
  // FAILED_PRECONDITION when the workload is not set up, ABORTED when the
  // retries gave up, INTERNAL when a check fails).
  grpc::Status Run(const Procedure& p, std::span<const uint64_t> args, Worker* worker, size_t slot,
                   std::vector<int64_t>* output, ProcedureOutcome* out);

 private:
  struct Loaded;
  struct SlotState;
  // The workload as set up (read from the "bench.procedures" table when this
  // member has not seen its setup); nullptr with *st set when it is not.
  std::shared_ptr<Loaded> Get(ProcWorkload w, Worker* worker, grpc::Status* st);
  grpc::Status Setup(const Procedure& p, std::span<const uint64_t> args, Worker* worker,
                     std::vector<int64_t>* output, ProcedureOutcome* out);

  Database* db_;
  Table* meta_ = nullptr;
  std::mutex mu_;
  std::shared_ptr<Loaded> loaded_[static_cast<size_t>(ProcWorkload::kCount)];  // guarded by mu_
  std::vector<std::unique_ptr<SlotState>> slots_;  // each used under its worker's mutex
};

}  // namespace rolis::server
