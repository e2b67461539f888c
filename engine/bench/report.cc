#include "report.h"

#include <nlohmann/json.hpp>

#include <cinttypes>
#include <cstdlib>

namespace rolis::bench {
namespace {

using Json = nlohmann::ordered_json;  // fields in the order written

// A measurement with 6 significant digits: more would be noise, and the
// line stays short.
double Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return std::strtod(buf, nullptr);
}

}  // namespace

void PrintTable(std::FILE* out, const RunInfo& info, const RunResult& r) {
  std::fprintf(out, "workload %s  mode %s  replicas %u  threads %u  measured %.2f s  (load %.2f s, warmup %.1f s)\n",
               info.workload.c_str(), info.mode.mode.c_str(), info.mode.replicas, info.threads, r.measured_seconds,
               info.load_seconds, info.warmup_seconds);
  std::fprintf(out, "%-16s %12s %7s %10s %10s %9s %9s\n", "txn", "commits", "share", "aborts", "rollbacks", "p50_us",
               "p99_us");
  const double total = static_cast<double>(r.commits + r.rollbacks);
  for (const TxnTypeStats& t : r.types) {
    const double share = total > 0 ? 100.0 * static_cast<double>(t.commits + t.rollbacks) / total : 0;
    std::fprintf(out, "%-16s %12" PRIu64 " %6.2f%% %10" PRIu64 " %10" PRIu64 " %9.2f %9.2f\n", t.name.c_str(),
                 t.commits, share, t.conflict_aborts, t.rollbacks, r.QuantileMicros(t.latency, 0.5),
                 r.QuantileMicros(t.latency, 0.99));
  }
  std::fprintf(out, "%-16s %12" PRIu64 " %6.2f%% %10" PRIu64 " %10" PRIu64 " %9.2f %9.2f\n", "all", r.commits, 100.0,
               r.conflict_aborts, r.rollbacks, r.QuantileMicros(r.latency, 0.5), r.QuantileMicros(r.latency, 0.99));
  if (r.has_ack_latency) {
    const LogLinearHistogram& a = r.ack_latency;
    std::fprintf(out,
                 "client-visible commit latency (Begin to watermark), %" PRIu64
                 " read-write txns: p50 %.1f us  p95 %.1f us  p99 %.1f us  (not acknowledged: %" PRIu64
                 ", not sampled: %" PRIu64 ")\n",
                 a.total(), r.QuantileMicros(a, 0.5), r.QuantileMicros(a, 0.95), r.QuantileMicros(a, 0.99), r.unacked,
                 r.unsampled);
    std::fprintf(out, "replicas %u  batch size %u  batch timeout %lld us  durability %s\n", info.mode.replicas,
                 info.mode.batch_size, static_cast<long long>(info.mode.batch_timeout.count()),
                 info.mode.durability.c_str());
  }
  if (r.rate_tps > 0) {
    std::fprintf(out, "open loop at %.0f txn/s (latencies from each transaction's due time); furthest behind: %.0f us\n",
                 r.rate_tps, r.max_lag_micros);
  }
  if (!info.placement.empty()) std::fprintf(out, "placement: %s\n", info.placement.c_str());
  if (info.other_cpu_load != "none") {
    std::fprintf(out, "the CPUs the workers do not use ran a synthetic '%s' load (--other-cpu-load)\n",
                 info.other_cpu_load.c_str());
    if (r.other_cpu_load_unpinned > 0) {
      std::fprintf(out,
                   "warning: %d of the load's threads could not be pinned to their CPU and ran wherever the "
                   "scheduler put them, perhaps beside the workers; check the CPUs this process may use (taskset -p)\n",
                   r.other_cpu_load_unpinned);
    }
  }
  std::fprintf(out, "throughput %.0f txn/s  abort rate %.4f%%  threads pinned: %s  huge pages: %s\n", r.throughput(),
               100.0 * r.abort_rate(), r.pinned ? "yes" : "no", info.mode.huge_pages ? "on" : "off");
  std::fprintf(out, "workers got %.2f CPU-s of %.2f thread-s: %.0f txn/s per full CPU each\n", r.worker_cpu_seconds,
               r.measured_seconds * info.threads, r.cpu_normalized_throughput(info.threads));
  if (r.worker_runqueue_ms >= 0) {
    std::fprintf(out, "other threads had the workers' CPUs while they were ready to run for %.0f ms\n",
                 r.worker_runqueue_ms);
  }
  if (r.steal_ms >= 0) {
    std::fprintf(out, "the hypervisor took %.0f ms from the workers' CPUs in the window (steal time)\n", r.steal_ms);
  }
  for (const TimelinePoint& p : r.timeline) {
    std::fprintf(out, "  at %5.1f s: %8.0f txn/s, other CPUs %6.2f us per transaction\n", p.end_seconds, p.tps,
                 p.other_cpus_us_per_txn);
  }
  if (r.other_cpus_busy_ms >= 0) {
    // With --replicas=3 the followers and the replication threads: their
    // cost per transaction, steadier than the throughput ratio on a noisy host.
    std::fprintf(out, "the other CPUs were busy %.0f ms in the window: %.2f us per transaction; %.2f context switches "
                 "per transaction (machine-wide)\n",
                 r.other_cpus_busy_ms, r.other_cpus_us_per_txn(), r.context_switches_per_txn());
  }
}

std::string JsonLine(const RunInfo& info, const RunResult& r) {
  Json j;
  j["workload"] = info.workload;
  j["mode"] = info.mode.mode;
  j["system"] = info.mode.system;
  j["check"] = info.check;
  j["threads"] = info.threads;
  j["seconds"] = Num(r.measured_seconds);
  j["warmup_seconds"] = Num(info.warmup_seconds);
  j["seed"] = info.seed;
  j["throughput_tps"] = Num(r.throughput());
  j["per_thread_tps"] = Num(info.threads > 0 ? r.throughput() / info.threads : 0);
  j["abort_rate"] = Num(r.abort_rate());
  // p50/p95/p99_us: the latency a client sees: in the replicated mode until
  // the watermark covers the commit, else the engine's (Begin to outcome).
  const LogLinearHistogram& seen = r.has_ack_latency ? r.ack_latency : r.latency;
  j["latency"] = r.has_ack_latency ? "client_visible_commit" : "engine";
  j["p50_us"] = Num(r.QuantileMicros(seen, 0.5));
  j["p95_us"] = Num(r.QuantileMicros(seen, 0.95));
  j["p99_us"] = Num(r.QuantileMicros(seen, 0.99));
  j["engine_p50_us"] = Num(r.QuantileMicros(r.latency, 0.5));
  j["engine_p99_us"] = Num(r.QuantileMicros(r.latency, 0.99));
  j["commits"] = r.commits;
  j["aborts"] = r.conflict_aborts;
  j["rollbacks"] = r.rollbacks;
  j["replicas"] = info.mode.replicas;
  j["batch_size"] = info.mode.batch_size;
  j["other_cpu_load"] = info.other_cpu_load;
  j["other_cpu_load_rounds"] = r.other_cpu_load_rounds;
  j["other_cpu_load_unpinned"] = static_cast<uint64_t>(r.other_cpu_load_unpinned);
  if (r.killed_follower != 0) j["killed_follower"] = r.killed_follower;
  if (!r.acked_check.empty()) j["acked_check"] = r.acked_check;
  if (r.has_ack_latency) {
    j["batch_timeout_us"] = static_cast<uint64_t>(info.mode.batch_timeout.count());
    j["durability"] = info.mode.durability;
    j["acked_txns"] = r.ack_latency.total();
    j["unacked_txns"] = r.unacked;
    j["unsampled_txns"] = r.unsampled;
    j["patch_updates"] = info.mode.patch_updates;
    j["flow_control_wait_ms"] = Num(r.flow_control_wait_ms);
    if (r.threads_on_worker_cpus >= 0) j["threads_on_worker_cpus"] = static_cast<uint64_t>(r.threads_on_worker_cpus);
  }
  // Open loop (--rate): the target rate (0: closed loop, as fast as it goes)
  // and how far behind its schedule a thread fell at most.
  j["rate_tps"] = Num(r.rate_tps);
  j["max_lag_us"] = Num(r.max_lag_micros);
  j["steal_ms"] = Num(r.steal_ms);
  j["other_cpus_busy_ms"] = Num(r.other_cpus_busy_ms);
  j["other_cpus_us_per_txn"] = Num(r.other_cpus_us_per_txn());
  j["context_switches_per_txn"] = Num(r.context_switches_per_txn());
  j["load_seconds"] = Num(info.load_seconds);
  j["pinned"] = r.pinned;
  j["huge_pages"] = info.mode.huge_pages;
  j["prefault_mib"] = Num(static_cast<double>(info.mode.prefault_memory >> 20));
  j["worker_cpu_seconds"] = Num(r.worker_cpu_seconds);
  j["worker_runqueue_ms"] = Num(r.worker_runqueue_ms);
  j["cpu_normalized_tps"] = Num(r.cpu_normalized_throughput(info.threads));
  if (!r.timeline.empty()) {
    Json& points = j["timeline"] = Json::array();
    for (const TimelinePoint& p : r.timeline) {
      points.push_back(
          {{"end_s", Num(p.end_seconds)}, {"tps", Num(p.tps)}, {"other_cpus_us_per_txn", Num(p.other_cpus_us_per_txn)}});
    }
  }
  Json& config = j["config"] = Json::object();
  for (const auto& [k, v] : info.config) {
    Json value = Json::parse(v, nullptr, /*allow_exceptions=*/false);
    config[k] = value.is_discarded() ? Json(v) : std::move(value);  // not JSON: as a string
  }
  Json& txns = j["txns"] = Json::object();
  for (const TxnTypeStats& t : r.types) {
    txns[t.name] = {{"commits", t.commits},
                    {"aborts", t.conflict_aborts},
                    {"rollbacks", t.rollbacks},
                    {"p50_us", Num(r.QuantileMicros(t.latency, 0.5))},
                    {"p99_us", Num(r.QuantileMicros(t.latency, 0.99))}};
  }
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace rolis::bench
