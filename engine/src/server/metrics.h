// Server metrics: counters and histograms updated on the hot path without a
// shared lock (each thread updates one of kShards cache-line-aligned shards
// with relaxed atomics; a scrape sums the shards), plus gauges read at scrape
// time from a GaugeSource. Exposed as a prometheus::Collectable, serialized
// by prometheus-cpp's TextSerializer (see http.h).
#pragma once

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace rolis::server {

// RPC methods counted in rolis_requests_total{method}. ExecuteStream counts
// one request per message (per one-shot transaction), not per stream.
enum class Method : uint8_t {
  kBegin,
  kGet,
  kScan,
  kPut,
  kDelete,
  kCommit,
  kAbort,
  kExecute,
  kExecuteStream,
  kExecuteBatchStream,
  kStatus,
  kPrepareFailover,
  kDecideEpoch,
  kOpenEpoch,
  kAnnounceLeader,
  kChangeMembership,
  kCount
};
std::string_view MethodName(Method m);

// Why a transaction ended without committing: rolis_aborts_total{reason}.
enum class AbortReason : uint8_t {
  kConflict,   // OCC validation failed (each failed attempt of a one-shot counts)
  kCondition,  // a PUT_IF condition did not hold
  kClient,     // the client called Abort
  kExpired,    // idle timeout
  kError,      // an operation failed (bad input, limit) and the one-shot was rolled back
  kShutdown,   // open at shutdown
  kNotLeader,  // read-write, open when this member stopped leading (it can never commit)
  kLeaderSnapshot,  // read-write, open when the leader paused its writes to fix a snapshot
  kMemory,     // a write refused near the memory limit (memory_guard.h)
  kCount
};
std::string_view AbortReasonName(AbortReason r);

// rolis_txn_latency_seconds{api}: one-shot Execute (request received to reply,
// retries included) and interactive commit (Begin to Commit reply).
enum class LatencyApi : uint8_t { kExecute, kCommit, kCount };

// Values read at scrape time.
struct GaugeValues {
  std::string role;  // lower case: standalone, leader, follower, candidate, catching_up
  uint64_t epoch = 0;
  // When the leader's clock read G, in Unix seconds; 0 when unknown (no G
  // of the epoch this member is in yet). docs/operations.md, "Metrics".
  double watermark_unix_seconds = 0;
  // index = stream: how far this member's replay is behind G, in seconds of
  // the leader's clock; negative when unknown (no series).
  std::vector<double> stream_lag_seconds;
  uint64_t flow_control_wait_nanos = 0;
  size_t accept_stream_connections = 0;
  uint64_t state_transfers = 0;
  uint64_t leader_snapshots = 0;
  uint64_t checkpoint_snapshots = 0;
  int64_t open_txns = 0;
  uint64_t engine_live_records = 0;
  uint64_t engine_live_versions = 0;
  uint64_t engine_epoch = 0;
  uint32_t worker_threads = 0;
  // memory_guard.h: 0 limit = none (the gauges are then absent).
  uint64_t memory_limit_bytes = 0;
  uint64_t memory_resident_bytes = 0;
};

class Metrics : public prometheus::Collectable {
 public:
  static constexpr int kShards = 16;
  static constexpr int kCodes = 17;  // grpc::StatusCode 0..16
  // Histogram bucket upper bounds in seconds (+Inf is implicit).
  static constexpr std::array<double, 18> kBuckets = {0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025,
                                                      0.005,   0.01,   0.025,   0.05,   0.1,   0.25,
                                                      0.5,     1.0,    2.5,     5.0,    10.0,  30.0};

  explicit Metrics(std::string version);

  void CountRequest(Method m, int grpc_code);
  void CountCommit();
  void CountAbort(AbortReason r);
  void ObserveLatency(LatencyApi api, std::chrono::nanoseconds d);
  void AddInflight(int64_t delta);

  // Called at every scrape (and by tests); must be thread-safe.
  void SetGaugeSource(std::function<GaugeValues()> source) { gauge_source_ = std::move(source); }

  uint64_t commits() const;
  uint64_t aborts(AbortReason r) const;
  uint64_t requests(Method m, int grpc_code) const;
  int64_t inflight() const;

  std::vector<prometheus::MetricFamily> Collect() const override;
  // The text exposition format of Collect().
  std::string Serialize() const;

 private:
  struct alignas(64) Shard {
    std::atomic<uint64_t> requests[static_cast<int>(Method::kCount)][kCodes] = {};
    std::atomic<uint64_t> commits{0};
    std::atomic<uint64_t> aborts[static_cast<int>(AbortReason::kCount)] = {};
    std::atomic<uint64_t> buckets[static_cast<int>(LatencyApi::kCount)][kBuckets.size() + 1] = {};
    std::atomic<uint64_t> latency_sum_ns[static_cast<int>(LatencyApi::kCount)] = {};
    std::atomic<int64_t> inflight{0};
  };
  Shard& MyShard();

  std::string version_;
  std::chrono::system_clock::time_point start_;
  std::unique_ptr<Shard[]> shards_;
  std::function<GaugeValues()> gauge_source_;
};

// The standard process metrics (process_cpu_seconds_total, ...) from
// /proc/self; zero where unknown.
struct ProcessStats {
  double cpu_seconds = 0;
  uint64_t resident_bytes = 0;
  uint64_t virtual_bytes = 0;
  uint64_t open_fds = 0;
  uint64_t max_fds = 0;
};
ProcessStats ReadProcessStats();

}  // namespace rolis::server
