// Human-readable table and the one-line JSON summary of a benchmark run.
#pragma once

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "driver.h"
#include "mode.h"

namespace rolis::bench {

struct RunInfo {
  std::string workload;
  ModeOptions mode;
  uint32_t threads = 1;
  double warmup_seconds = 0;
  uint64_t seed = 0;
  double load_seconds = 0;
  std::string placement;  // where workers, followers and threads ran (Mode::Placement)
  std::string other_cpu_load = "none";  // --other-cpu-load (other_cpu_load.h)
  // The workload's invariant held after the run: bank_total_ok, tpca_sums_ok,
  // tpcc_consistent; "none" where the workload has none.
  std::string check = "none";
  // Workload parameters, as (name, JSON value) pairs, e.g. {"keys", "1000000"}.
  std::vector<std::pair<std::string, std::string>> config;
};

void PrintTable(std::FILE* out, const RunInfo& info, const RunResult& result);
// One JSON object without newlines. Fields: workload, mode, system (silo,
// rolis, 2pl or calvin), threads, per_thread_tps, check, seconds,
// warmup_seconds, seed, throughput_tps, abort_rate, latency ("engine" or
// "client_visible_commit": what p50_us, p95_us and p99_us measure),
// p50_us, p95_us, p99_us, engine_p50_us, engine_p99_us, commits, aborts,
// rollbacks, replicas, batch_size, other_cpu_load, other_cpu_load_rounds,
// other_cpu_load_unpinned, (--kill-follower-at: killed_follower; --check-acked:
// acked_check "ok" or "failed"), (replicated: batch_timeout_us,
// acked_txns, unacked_txns, unsampled_txns), rate_tps (open loop target,
// 0: closed loop), max_lag_us, steal_ms, load_seconds, pinned, huge_pages,
// (replicated: patch_updates, flow_control_wait_ms),
// worker_cpu_seconds, cpu_normalized_tps, config{},
// txns{type: {commits, aborts, rollbacks, p50_us, p99_us}}.
std::string JsonLine(const RunInfo& info, const RunResult& result);

}  // namespace rolis::bench
