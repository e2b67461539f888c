// Benchmark modes: what the workload runs on. "silo" (alias "unreplicated")
// is the engine alone. "rolis" (alias "replicated", --replicas=3) runs the
// leader's engine in this process with the replication layer rolisd uses
// (PaxosReplicator) as its commit hook, and the followers as rolisd
// processes it starts on loopback (replicated_mode.h). "2pl" and "calvin"
// are the Rolis paper's baselines on the same engine and replication
// (baseline_modes.h, engine/src/baselines).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "driver.h"
#include "rolis/db.h"
#include "rolis/status.h"

namespace rolis::bench {

struct ModeOptions {
  // silo, rolis, 2pl or calvin (or the aliases unreplicated, replicated);
  // empty: by replicas (1: silo). MakeMode sets `system` to one of the four
  // and `mode` to what the JSON line's "mode" has always said: unreplicated
  // or replicated for silo and rolis, else the system's name.
  std::string mode;
  std::string system;
  // calvin: the sequencer's epoch and the transactions each worker keeps submitted.
  uint32_t calvin_epoch_ms = 10;
  uint32_t calvin_outstanding = 2048;
  uint32_t replicas = 1;
  uint32_t batch_size = 0;  // transactions per replication batch; 0: rolisd's default (50), or none
  std::chrono::microseconds batch_timeout{1000};
  uint32_t threads = 1;        // worker threads = replication streams
  uint32_t epoch_period_ms = 40;
  std::string rolisd;          // follower binary; empty: rolisd next to this program
  bool pin = true;             // pin followers and the replication threads away from the workers
  bool huge_pages = false;     // Options::huge_pages here and rolisd's --huge-pages in the followers
  size_t prefault_memory = 0;  // rolis/prefault.h here and rolisd's --prefault-memory in the followers
  bool patch_updates = true;   // replicated: Options::patch_updates in the leader (as rolisd's)
  // Replicated: "memory" (the paper's mode) or "disk" (every member keeps its
  // votes and log in a data directory and acknowledges only what is on its
  // disk: rolisd's --durability, docs/operations.md "Durability").
  std::string durability = "memory";
  // disk: the members' data directories go in a temporary directory made
  // here (removed at exit); empty: $TMPDIR or /tmp.
  std::string data_root;
  // Replicated (rolis, 2pl, calvin's batch log; docs/benchmarks.md,
  // "Correctness"): SIGKILL the last follower this many seconds after the
  // run starts (warmup included; 0: never), and after the run check that a
  // majority of the members, the killed one not among them, holds every
  // transaction (calvin: every batch) the bench acknowledged.
  double kill_follower_at = 0;
  bool check_acked = false;
};

// A running mode: owns what the database needs besides itself. The bench
// calls, in order: commit_hook() (into Options before Database::Open),
// AfterOpen(db) before the load, Start(db) after it, RunWorkload with worker_hooks()
// and driver_cpus(), Finish(result), and Shutdown() before the Database goes.
class Mode {
 public:
  virtual ~Mode() = default;
  virtual const ModeOptions& options() const = 0;
  // The hook to put in Options::commit_hook before Database::Open (may be null).
  virtual CommitHook* commit_hook() = 0;
  // Right after Database::Open, before the workload creates its tables.
  virtual Status AfterOpen(Database* db) { return Status::OK(); }
  // After the load: e.g. attach the replicator and elect this process leader.
  virtual Status Start(Database* db) { return Status::OK(); }
  virtual WorkerHooks* worker_hooks() { return nullptr; }
  // What runs the transactions instead of Workload::RunOne (null: the workload).
  virtual workloads::TxnRunner* txn_runner() { return nullptr; }
  // CPUs for the workers (empty: every CPU this process may use).
  virtual std::vector<int> driver_cpus() const { return {}; }
  // After the measured window, before the report: e.g. the client-visible
  // latency into result->ack_latency.
  virtual Status Finish(RunResult* result) { return Status::OK(); }
  // Stops what Start started (idempotent; also on error paths).
  virtual void Shutdown() {}
  // One line about where followers and threads run ("" when nothing to say).
  virtual std::string Placement() const { return ""; }
};

// kInvalidArgument for an unknown mode or a bad combination (even replicas,
// rolisd missing), with a message that says which flag to change.
Status MakeMode(const ModeOptions& options, std::unique_ptr<Mode>* mode);

}  // namespace rolis::bench
