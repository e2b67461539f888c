#include "server/metrics.h"

#include "server/authz.h"

#include <prometheus/text_serializer.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

namespace rolis::server {
namespace {

constexpr const char* kCodeNames[Metrics::kCodes] = {
    "OK",        "CANCELLED",          "UNKNOWN",           "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
    "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED",
    "OUT_OF_RANGE", "UNIMPLEMENTED",    "INTERNAL",          "UNAVAILABLE",      "DATA_LOSS",
    "UNAUTHENTICATED"};

constexpr const char* kRoles[] = {"standalone", "leader", "follower", "candidate", "catching_up"};

prometheus::MetricFamily Family(std::string name, std::string help, prometheus::MetricType type) {
  prometheus::MetricFamily f;
  f.name = std::move(name);
  f.help = std::move(help);
  f.type = type;
  return f;
}

prometheus::ClientMetric Gauge(double v, std::vector<prometheus::ClientMetric::Label> labels = {}) {
  prometheus::ClientMetric m;
  m.label = std::move(labels);
  m.gauge.value = v;
  return m;
}

prometheus::ClientMetric Counter(double v, std::vector<prometheus::ClientMetric::Label> labels = {}) {
  prometheus::ClientMetric m;
  m.label = std::move(labels);
  m.counter.value = v;
  return m;
}

// A family of one metric without labels.
prometheus::MetricFamily OneGauge(std::string name, std::string help, double v) {
  prometheus::MetricFamily f = Family(std::move(name), std::move(help), prometheus::MetricType::Gauge);
  f.metric.push_back(Gauge(v));
  return f;
}
prometheus::MetricFamily OneCounter(std::string name, std::string help, double v) {
  prometheus::MetricFamily f = Family(std::move(name), std::move(help), prometheus::MetricType::Counter);
  f.metric.push_back(Counter(v));
  return f;
}

}  // namespace

std::string_view MethodName(Method m) {
  static constexpr std::string_view kNames[] = {
      "Begin",  "Get",           "Scan",   "Put",            "Delete",      "Commit",
      "Abort",  "Execute",       "ExecuteStream",  "ExecuteBatchStream", "Status", "PrepareFailover",
      "DecideEpoch", "OpenEpoch", "AnnounceLeader",          "ChangeMembership"};
  static_assert(std::size(kNames) == static_cast<size_t>(Method::kCount));
  return kNames[static_cast<int>(m)];
}

std::string_view AbortReasonName(AbortReason r) {
  static constexpr std::string_view kNames[] = {"conflict", "condition", "client",     "expired",
                                                 "error",    "shutdown",  "not_leader", "leader_snapshot",
                                                 "memory"};
  static_assert(std::size(kNames) == static_cast<size_t>(AbortReason::kCount));
  return kNames[static_cast<int>(r)];
}

Metrics::Metrics(std::string version)
    : version_(std::move(version)), start_(std::chrono::system_clock::now()), shards_(new Shard[kShards]) {}

Metrics::Shard& Metrics::MyShard() {
  static std::atomic<uint32_t> next{0};
  thread_local uint32_t index = next.fetch_add(1, std::memory_order_relaxed) % kShards;
  return shards_[index];
}

void Metrics::CountRequest(Method m, int code) {
  if (code < 0 || code >= kCodes) code = 2;  // UNKNOWN
  MyShard().requests[static_cast<int>(m)][code].fetch_add(1, std::memory_order_relaxed);
}

void Metrics::CountCommit() { MyShard().commits.fetch_add(1, std::memory_order_relaxed); }

void Metrics::CountAbort(AbortReason r) {
  MyShard().aborts[static_cast<int>(r)].fetch_add(1, std::memory_order_relaxed);
}

void Metrics::ObserveLatency(LatencyApi api, std::chrono::nanoseconds d) {
  double s = std::chrono::duration<double>(d).count();
  size_t b = 0;
  while (b < kBuckets.size() && s > kBuckets[b]) b++;
  Shard& sh = MyShard();
  int a = static_cast<int>(api);
  sh.buckets[a][b].fetch_add(1, std::memory_order_relaxed);
  sh.latency_sum_ns[a].fetch_add(static_cast<uint64_t>(std::max<int64_t>(0, d.count())), std::memory_order_relaxed);
}

void Metrics::AddInflight(int64_t delta) { MyShard().inflight.fetch_add(delta, std::memory_order_relaxed); }

uint64_t Metrics::commits() const {
  uint64_t n = 0;
  for (int i = 0; i < kShards; i++) n += shards_[i].commits.load(std::memory_order_relaxed);
  return n;
}

uint64_t Metrics::aborts(AbortReason r) const {
  uint64_t n = 0;
  for (int i = 0; i < kShards; i++) n += shards_[i].aborts[static_cast<int>(r)].load(std::memory_order_relaxed);
  return n;
}

uint64_t Metrics::requests(Method m, int code) const {
  uint64_t n = 0;
  for (int i = 0; i < kShards; i++) {
    n += shards_[i].requests[static_cast<int>(m)][code].load(std::memory_order_relaxed);
  }
  return n;
}

int64_t Metrics::inflight() const {
  int64_t n = 0;
  for (int i = 0; i < kShards; i++) n += shards_[i].inflight.load(std::memory_order_relaxed);
  return n;
}

std::vector<prometheus::MetricFamily> Metrics::Collect() const {
  using prometheus::MetricType;
  std::vector<prometheus::MetricFamily> out;

  out.push_back(OneCounter("rolis_commits_total",
                           "Transactions committed (one-shot and interactive, read-only included).",
                           static_cast<double>(commits())));

  auto aborts_f = Family("rolis_aborts_total", "Transactions or attempts that ended without committing, by reason.",
                         MetricType::Counter);
  for (int r = 0; r < static_cast<int>(AbortReason::kCount); r++) {
    aborts_f.metric.push_back(Counter(static_cast<double>(aborts(static_cast<AbortReason>(r))),
                                      {{"reason", std::string(AbortReasonName(static_cast<AbortReason>(r)))}}));
  }
  out.push_back(std::move(aborts_f));

  auto refusals = Family("rolis_authz_refusals_total",
                         "Calls and accept stream connections refused by authorization (docs/operations.md, "
                         "\"Security model\"), by the kind of the caller's certificate.",
                         MetricType::Counter);
  for (int k = 0; k < static_cast<int>(PeerKind::kCount); k++) {
    refusals.metric.push_back(Counter(static_cast<double>(AuthzRefusals(static_cast<PeerKind>(k))),
                                      {{"kind", std::string(PeerKindName(static_cast<PeerKind>(k)))}}));
  }
  out.push_back(std::move(refusals));

  auto lat = Family("rolis_txn_latency_seconds",
                    "Transaction latency: execute = one-shot request to reply (retries included); "
                    "commit = interactive Begin to Commit reply.",
                    MetricType::Histogram);
  for (int a = 0; a < static_cast<int>(LatencyApi::kCount); a++) {
    prometheus::ClientMetric m;
    m.label = {{"api", a == 0 ? "execute" : "commit"}};
    uint64_t cum = 0, sum_ns = 0;
    for (int i = 0; i < kShards; i++) sum_ns += shards_[i].latency_sum_ns[a].load(std::memory_order_relaxed);
    for (size_t b = 0; b <= kBuckets.size(); b++) {
      for (int i = 0; i < kShards; i++) cum += shards_[i].buckets[a][b].load(std::memory_order_relaxed);
      prometheus::ClientMetric::Bucket bucket;
      bucket.cumulative_count = cum;
      bucket.upper_bound = b < kBuckets.size() ? kBuckets[b] : std::numeric_limits<double>::infinity();
      m.histogram.bucket.push_back(bucket);
    }
    m.histogram.sample_count = cum;
    m.histogram.sample_sum = static_cast<double>(sum_ns) / 1e9;
    lat.metric.push_back(std::move(m));
  }
  out.push_back(std::move(lat));

  auto req = Family("rolis_requests_total", "gRPC requests by method and status code (ExecuteStream: per message; ExecuteBatchStream: per transaction).",
                    MetricType::Counter);
  for (int m = 0; m < static_cast<int>(Method::kCount); m++) {
    for (int c = 0; c < kCodes; c++) {
      uint64_t n = requests(static_cast<Method>(m), c);
      // Always show OK so every method appears; other codes once they occur.
      if (n == 0 && c != 0) continue;
      req.metric.push_back(Counter(static_cast<double>(n), {{"code", kCodeNames[c]},
                                                             {"method", std::string(MethodName(static_cast<Method>(m)))}}));
    }
  }
  out.push_back(std::move(req));

  out.push_back(OneGauge("rolis_inflight_txns",
                         "One-shot transactions being executed or waiting for the watermark.",
                         static_cast<double>(std::max<int64_t>(0, inflight()))));

  GaugeValues g;
  if (gauge_source_) g = gauge_source_();

  out.push_back(OneGauge("rolis_open_txns", "Open interactive transactions.", static_cast<double>(g.open_txns)));
  if (g.memory_limit_bytes != 0) {
    out.push_back(OneGauge("rolis_memory_limit_bytes",
                           "Memory limit of this member (--memory-limit, by default the cgroup's); writes are "
                           "refused above --memory-high-watermark percent of it.",
                           static_cast<double>(g.memory_limit_bytes)));
    out.push_back(OneGauge("rolis_memory_resident_bytes",
                           "Resident memory as last sampled against the memory limit (every 20 ms).",
                           static_cast<double>(g.memory_resident_bytes)));
  }


  auto role = Family("rolis_role", "1 for the role this member is in, 0 for the others.", MetricType::Gauge);
  for (const char* r : kRoles) role.metric.push_back(Gauge(g.role == r ? 1.0 : 0.0, {{"role", r}}));
  out.push_back(std::move(role));

  out.push_back(OneGauge("rolis_epoch", "Replication epoch this member is in.", static_cast<double>(g.epoch)));

  // No sample while unknown, so that time() - it never reads as 56 years.
  auto watermark = Family("rolis_watermark_timestamp_seconds",
                          "When the leader's clock read the commit watermark G this member knows, in Unix seconds "
                          "(estimated on a follower). Absent until this member knows a G of its epoch.",
                          MetricType::Gauge);
  if (g.watermark_unix_seconds > 0) watermark.metric.push_back(Gauge(g.watermark_unix_seconds));
  out.push_back(std::move(watermark));

  auto lag = Family("rolis_replication_lag_seconds",
                    "Per worker stream: how far this member's replay is behind the commit watermark G it knows, in "
                    "seconds of the leader's clock (0 on the leader). Absent while unknown (another epoch).",
                    MetricType::Gauge);
  for (size_t s = 0; s < g.stream_lag_seconds.size(); s++) {
    if (g.stream_lag_seconds[s] >= 0) lag.metric.push_back(Gauge(g.stream_lag_seconds[s], {{"stream", std::to_string(s)}}));
  }
  out.push_back(std::move(lag));

  out.push_back(OneCounter("rolis_replication_flow_control_wait_seconds_total",
                           "Time the workers waited for the replication log to take their batches (a majority "
                           "falling behind: flow control).",
                           static_cast<double>(g.flow_control_wait_nanos) / 1e9));

  out.push_back(OneGauge("rolis_replication_accept_stream_connections",
                         "Connections this member serves on its accept stream (from the leader, one per stream; 0 "
                         "when accepts reach it on the replication port).",
                         static_cast<double>(g.accept_stream_connections)));

  out.push_back(OneCounter("rolis_replication_state_transfers_total",
                           "State transfers this member caught up by (a snapshot of another member's store and the "
                           "log after it: after a restart empty, or when a failover discarded its commits).",
                           static_cast<double>(g.state_transfers)));

  out.push_back(OneCounter("rolis_replication_leader_snapshots_total",
                           "Snapshots this member served to a catching-up member while leading: no caught-up "
                           "follower could, and its writes paused while the snapshot was fixed.",
                           static_cast<double>(g.leader_snapshots)));

  out.push_back(OneCounter("rolis_replication_checkpoint_snapshots_total",
                           "State transfers this member served from its newest checkpoint while leading (with a "
                           "data directory): no caught-up follower could, and no write paused.",
                           static_cast<double>(g.checkpoint_snapshots)));

  out.push_back(OneGauge("rolis_worker_threads", "Engine workers (= replication streams).", g.worker_threads));

  out.push_back(OneGauge("rolis_engine_live_records",
                         "Records in the engine's tables.",
                         static_cast<double>(g.engine_live_records)));
  out.push_back(OneGauge("rolis_engine_live_versions",
                         "Record versions not yet reclaimed.",
                         static_cast<double>(g.engine_live_versions)));
  out.push_back(OneGauge("rolis_engine_epoch",
                         "The engine's current snapshot epoch counter.",
                         static_cast<double>(g.engine_epoch)));

  auto build = Family("rolis_build_info", "Always 1; the version label is the build's version.", MetricType::Gauge);
  build.metric.push_back(Gauge(1, {{"version", version_}}));
  out.push_back(std::move(build));

  // The standard process metrics (names of the Prometheus client libraries).
  const ProcessStats p = ReadProcessStats();
  out.push_back(OneCounter("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.",
                           p.cpu_seconds));
  out.push_back(OneGauge("process_resident_memory_bytes", "Resident memory size in bytes.",
                         static_cast<double>(p.resident_bytes)));
  out.push_back(OneGauge("process_virtual_memory_bytes", "Virtual memory size in bytes.",
                         static_cast<double>(p.virtual_bytes)));
  out.push_back(OneGauge("process_open_fds", "Number of open file descriptors.", static_cast<double>(p.open_fds)));
  out.push_back(OneGauge("process_max_fds", "Maximum number of open file descriptors.", static_cast<double>(p.max_fds)));
  out.push_back(OneGauge("process_start_time_seconds", "Start time of the process since unix epoch in seconds.",
                         std::chrono::duration<double>(start_.time_since_epoch()).count()));
  return out;
}

std::string Metrics::Serialize() const {
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, Collect());
  return out.str();
}

ProcessStats ReadProcessStats() {
  ProcessStats p;
  const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  const double page = static_cast<double>(sysconf(_SC_PAGESIZE));
  if (std::ifstream stat("/proc/self/stat"); stat) {
    std::string line;
    std::getline(stat, line);
    // Fields after the command name, which is in parentheses and may hold spaces.
    if (size_t close = line.rfind(')'); close != std::string::npos) {
      std::istringstream rest(line.substr(close + 2));
      std::vector<std::string> f;
      for (std::string x; rest >> x;) f.push_back(x);
      // proc(5): utime 14, stime 15, vsize 23, rss 24 (1-based, counting pid and comm).
      if (f.size() > 21 && ticks > 0) {
        p.cpu_seconds = (std::stod(f[11]) + std::stod(f[12])) / ticks;
        p.virtual_bytes = std::stoull(f[20]);
        p.resident_bytes = static_cast<uint64_t>(std::stod(f[21]) * page);
      }
    }
  }
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator("/proc/self/fd", ec); !ec && it != std::filesystem::directory_iterator();
       it.increment(ec)) {
    p.open_fds++;
  }
  if (rlimit rl{}; getrlimit(RLIMIT_NOFILE, &rl) == 0) p.max_fds = rl.rlim_cur;
  return p;
}

}  // namespace rolis::server
