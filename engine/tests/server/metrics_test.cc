// Metrics: sharded counters add up across threads; the exposition has the
// documented names, labels and histogram shape.
#include "server/metrics.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "server/logging.h"

namespace rolis::server {
namespace {

TEST(MetricsTest, CountersAddUpAcrossThreads) {
  Metrics m("v1");
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; t++) {
    threads.emplace_back([&] {
      for (int i = 0; i < 1000; i++) {
        m.CountCommit();
        m.CountRequest(Method::kExecute, 0);
        m.AddInflight(1);
        m.AddInflight(-1);
      }
      m.CountAbort(AbortReason::kConflict);
      m.CountRequest(Method::kExecute, 10);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(m.commits(), 8000u);
  EXPECT_EQ(m.requests(Method::kExecute, 0), 8000u);
  EXPECT_EQ(m.requests(Method::kExecute, 10), 8u);
  EXPECT_EQ(m.aborts(AbortReason::kConflict), 8u);
  EXPECT_EQ(m.inflight(), 0);
}

TEST(MetricsTest, ExpositionHasTheDocumentedFamilies) {
  Metrics m("1.2.3");
  m.SetGaugeSource([] {
    GaugeValues g;
    g.role = "standalone";
    g.epoch = 1;
    g.watermark_unix_seconds = 1.7e9;
    g.stream_lag_seconds = {0.25, -1, 0};
    g.flow_control_wait_nanos = 1'500'000'000;
    g.state_transfers = 2;
    g.leader_snapshots = 1;
    g.checkpoint_snapshots = 3;
    g.open_txns = 3;
    return g;
  });
  m.CountCommit();
  m.CountRequest(Method::kPut, 3);
  m.ObserveLatency(LatencyApi::kExecute, std::chrono::microseconds(300));
  m.ObserveLatency(LatencyApi::kExecute, std::chrono::seconds(100));
  std::string text = m.Serialize();
  for (const char* want : {
           "# TYPE rolis_commits_total counter", "rolis_commits_total 1",
           "rolis_aborts_total{reason=\"conflict\"} 0", "rolis_aborts_total{reason=\"expired\"} 0",
           "# TYPE rolis_txn_latency_seconds histogram",
           "rolis_txn_latency_seconds_bucket{api=\"execute\",le=\"0.00025\"} 0",
           "rolis_txn_latency_seconds_bucket{api=\"execute\",le=\"0.0005\"} 1",
           "rolis_txn_latency_seconds_bucket{api=\"execute\",le=\"+Inf\"} 2",
           "rolis_txn_latency_seconds_count{api=\"execute\"} 2", "rolis_txn_latency_seconds_count{api=\"commit\"} 0",
           "rolis_requests_total{code=\"INVALID_ARGUMENT\",method=\"Put\"} 1",
           "rolis_requests_total{code=\"OK\",method=\"Execute\"} 0", "rolis_inflight_txns 0", "rolis_open_txns 3",
           "rolis_role{role=\"standalone\"} 1", "rolis_role{role=\"leader\"} 0",
           "rolis_epoch 1", "rolis_watermark_timestamp_seconds 1700000000",
           "rolis_replication_lag_seconds{stream=\"0\"} 0.25", "rolis_replication_lag_seconds{stream=\"2\"} 0",
           "# TYPE process_cpu_seconds_total counter", "process_resident_memory_bytes", "process_open_fds",
           "# TYPE rolis_replication_flow_control_wait_seconds_total counter",
           "rolis_replication_flow_control_wait_seconds_total 1.5",
           "# TYPE rolis_replication_state_transfers_total counter", "rolis_replication_state_transfers_total 2",
           "# TYPE rolis_replication_leader_snapshots_total counter", "rolis_replication_leader_snapshots_total 1",
           "# TYPE rolis_replication_checkpoint_snapshots_total counter",
           "rolis_replication_checkpoint_snapshots_total 3",
           "rolis_build_info{version=\"1.2.3\"} 1", "process_start_time_seconds"}) {
    EXPECT_NE(text.find(want), std::string::npos) << want << "\n" << text;
  }
  // An unknown lag has no sample; no metric duplicates a process_ one.
  EXPECT_EQ(text.find("rolis_replication_lag_seconds{stream=\"1\"}"), std::string::npos) << text;
  EXPECT_EQ(text.find("rolis_memory_bytes"), std::string::npos) << text;
}

TEST(MetricsTest, UnknownWatermarkHasNoSample) {
  Metrics m("1.2.3");
  m.SetGaugeSource([] { return GaugeValues{}; });
  std::string text = m.Serialize();
  EXPECT_EQ(text.find("\nrolis_watermark_timestamp_seconds "), std::string::npos) << text;
  EXPECT_NE(text.find("# TYPE rolis_watermark_timestamp_seconds gauge"), std::string::npos) << text;
}

TEST(MetricsTest, ProcessStatsAreRead) {
  ProcessStats p = ReadProcessStats();
  EXPECT_GT(p.resident_bytes, 0u);
  EXPECT_GE(p.virtual_bytes, p.resident_bytes);
  EXPECT_GT(p.open_fds, 2u);  // stdin, stdout, stderr at least
  EXPECT_GE(p.max_fds, p.open_fds);
}

TEST(LoggingTest, JsonEscapeKeepsLinesValid) {
  EXPECT_EQ(JsonEscape("a\"b\\c\nd\x01"), "a\\\"b\\\\c\\nd\\u0001");
}

}  // namespace
}  // namespace rolis::server
