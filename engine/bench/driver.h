// The benchmark driver: runs a loaded Workload on N pinned worker threads for
// a warmup and a measured window and collects per-type counts and latency
// histograms. Knows nothing of replication: the mode (mode.h) decides what
// Database the workload runs on and which CommitHook it carries.
#pragma once

#include <sched.h>

#include <cstdint>
#include <string>
#include <vector>

#include "histogram.h"
#include "other_cpu_load.h"
#include "rolis/db.h"
#include "rolis/status.h"
#include "workloads/workload.h"

namespace rolis::bench {

// What a mode does on each worker thread, around its transactions (the
// replicated mode: the stream's registration, the worker mutex the
// replicator closes idle batches under, and the watermark wait). Every call
// is on worker thread `t`.
class WorkerHooks {
 public:
  virtual ~WorkerHooks() = default;
  virtual void ThreadStart(uint32_t t, Worker* worker) {}
  virtual void BeforeTxn(uint32_t t) {}
  // `start` and `end`: CycleNow() at the first Begin and after the outcome;
  // `measured`: the transaction belongs to the measured window.
  virtual void AfterTxn(uint32_t t, uint64_t start, uint64_t end, bool measured) {}
  // Before the thread waits for its next transaction's due time (open loop).
  virtual void Idle(uint32_t t) {}
  // After the thread's last transaction, before the run's end is reported.
  virtual void ThreadEnd(uint32_t t) {}
};

struct DriverOptions {
  uint32_t threads = 1;
  double warmup_seconds = 1;
  double seconds = 10;
  uint64_t seed = 1;
  bool pin_threads = true;
  // Fixed-work mode for tests: when > 0, each thread runs this many
  // transactions (no warmup) and seconds is ignored.
  uint64_t txns_per_thread = 0;
  // CPUs to pin worker t to (cpus[t % size]); empty: the CPUs this thread may run on.
  std::vector<int> cpus;
  WorkerHooks* hooks = nullptr;  // not owned; may be null
  // Runs the workload's transactions instead of Workload::RunOne (the 2PL
  // and Calvin baselines, Mode::txn_runner); not owned; may be null.
  workloads::TxnRunner* runner = nullptr;
  // Open loop: when > 0, transactions are due at this rate (per second,
  // across threads; each thread takes rate/threads, evenly spaced) and a
  // thread that is ahead waits, outside its transaction, for the next one's
  // due time. Latencies are measured from the due time, so a thread that
  // falls behind counts its queueing (no coordinated omission).
  double rate_tps = 0;
  // When > 0: throughput (and the other CPUs' busy time per transaction)
  // over each interval of this many seconds of the window, in
  // RunResult::timeline. How a run changes with its age (TPC-C's tables grow).
  double timeline_seconds = 0;
  // A synthetic load on the CPUs the pinned workers do not use, for the
  // warmup and the window (other_cpu_load.h). Needs such a CPU.
  OtherCpuLoadKind other_cpu_load = OtherCpuLoadKind::kNone;
};

// Microseconds of busy CPU per committed transaction; -1 when either is
// unknown (busy_ms < 0) or nothing committed.
inline double MicrosPerTxn(double busy_ms, uint64_t commits) {
  return busy_ms >= 0 && commits > 0 ? busy_ms * 1000 / static_cast<double>(commits) : -1;
}

struct TimelinePoint {
  double end_seconds = 0;            // since the window began
  double tps = 0;                    // commits in the interval / its length
  double other_cpus_us_per_txn = -1; // as RunResult's, over the interval
};

struct TxnTypeStats {
  std::string name;
  uint64_t commits = 0;
  uint64_t conflict_aborts = 0;  // kAborted attempts, retried
  uint64_t rollbacks = 0;        // rolled back by the application (TPC-C NewOrder 1%)
  LogLinearHistogram latency;    // ticks, from first begin to the final outcome
};

struct RunResult {
  double measured_seconds = 0;
  double nanos_per_tick = 1;
  std::vector<TxnTypeStats> types;
  LogLinearHistogram latency;  // all types
  uint64_t commits = 0;
  uint64_t conflict_aborts = 0;
  uint64_t rollbacks = 0;
  bool pinned = false;  // every worker was pinned to a CPU
  uint64_t other_cpu_load_rounds = 0;  // work done by --other-cpu-load (OtherCpuLoad::rounds)
  int other_cpu_load_unpinned = 0;     // its threads that could not be pinned (OtherCpuLoad::unpinned)
  // CPU time the workers got during the measured window (all threads). On a
  // shared machine it is below threads * measured_seconds.
  double worker_cpu_seconds = 0;
  // Of the time they did not get: how long the workers were ready to run
  // while another thread had their CPU (a closed-loop worker never sleeps,
  // so this is the time taken from it by whatever else ran there; the
  // hypervisor's steal is not in it); -1: not counted.
  double worker_runqueue_ms = -1;
  double rate_tps = 0;        // DriverOptions::rate_tps (0: closed loop)
  double max_lag_micros = 0;  // open loop: the furthest a thread fell behind the schedule
  // Time the hypervisor took from the workers' CPUs during the measured
  // window (proc_stat.h); -1 where /proc/stat cannot be read.
  double steal_ms = -1;
  // Pinned workers: busy time of the other CPUs in the window (followers and
  // replication threads with --replicas=3, else whatever else runs); -1: no
  // other CPU, or not counted.
  double other_cpus_busy_ms = -1;
  double context_switches = -1;  // machine-wide, in the window; -1: not counted
  std::vector<TimelinePoint> timeline;  // DriverOptions::timeline_seconds
  // Replicated mode: per committed read-write transaction of the measured
  // window, ticks from its first Begin to when the commit watermark passed
  // its commit ts (when a server would acknowledge it).
  bool has_ack_latency = false;
  LogLinearHistogram ack_latency;
  uint64_t unacked = 0;    // committed, but not acknowledged within 10 s of the window's end
  // --check-acked (ModeOptions::check_acked): "ok" or "failed"; empty when not asked.
  std::string acked_check;
  uint32_t killed_follower = 0;  // --kill-follower-at: the follower killed (0: none)
  uint64_t unsampled = 0;  // committed, not in ack_latency (its worker's queue to the observer was full)
  // Replicated mode: time the workers waited for room in their stream's
  // ring of batches (flow control), warmup and window together.
  double flow_control_wait_ms = 0;
  // Replicated with the workers pinned: this process's threads, other than
  // the (finished) workers, that may run on a worker's CPU (-1: not counted).
  int threads_on_worker_cpus = -1;

  double throughput() const { return measured_seconds > 0 ? commits / measured_seconds : 0; }
  // Throughput had every worker had a CPU to itself for the whole window:
  // commits per worker-CPU-second, times threads.
  double cpu_normalized_throughput(uint32_t threads) const {
    return worker_cpu_seconds > 0 ? commits * threads / worker_cpu_seconds : 0;
  }
  // Per committed transaction of the window (-1 where not counted).
  double other_cpus_us_per_txn() const { return MicrosPerTxn(other_cpus_busy_ms, commits); }
  double context_switches_per_txn() const { return context_switches >= 0 && commits > 0 ? context_switches / commits : -1; }
  double abort_rate() const {
    const uint64_t attempts = commits + conflict_aborts;
    return attempts > 0 ? static_cast<double>(conflict_aborts) / static_cast<double>(attempts) : 0;
  }
  double QuantileMicros(const LogLinearHistogram& h, double q) const {
    return h.Quantile(q) * nanos_per_tick / 1000.0;
  }
};

// The CPUs the calling thread may run on, in order.
std::vector<int> AllowedCpus();

// The online CPUs not in cpus, in order.
std::vector<int> CpusOtherThan(const std::vector<int>& cpus);

// A CPU mask holding cpus.
cpu_set_t CpuSetOf(const std::vector<int>& cpus);

// Restricts the calling thread (and the threads it makes later) to cpus.
bool PinThreadTo(const std::vector<int>& cpus);

// Blocks until read-only transactions see what was committed before the call
// (their snapshot trails by up to ~2 epochs), or until `timeout_ms`.
void WaitForSnapshot(Database* db, uint32_t timeout_ms);

// Runs `workload` (already loaded into `db`) and fills `result`. Returns the
// first non-retryable error a transaction hit, if any (the run then stops).
Status RunWorkload(Database* db, workloads::Workload* workload, const DriverOptions& options, RunResult* result);

}  // namespace rolis::bench
