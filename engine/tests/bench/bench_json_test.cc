// rolis-bench end to end: a short run of each workload, unreplicated and
// replicated (with real rolisd followers), prints, as its last line, one
// JSON object with the documented fields; bad flags fail clearly.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "server/config.h"

namespace {

// A minimal JSON reader: enough to validate the whole line and read the
// top-level fields (nested objects are validated and skipped).
class JsonReader {
 public:
  explicit JsonReader(const std::string& s) : s_(s) {}

  // Parses one object; fields holds its top-level scalars (numbers as double,
  // strings, booleans) and marks nested objects with the string "{object}".
  bool ParseObject(std::map<std::string, std::variant<double, std::string, bool>>* fields) {
    Skip();
    if (!Eat('{')) return false;
    Skip();
    if (Eat('}')) return End();
    for (;;) {
      std::string key;
      Skip();
      if (!String(&key)) return false;
      Skip();
      if (!Eat(':')) return false;
      Skip();
      if (!Value(fields, key)) return false;
      Skip();
      if (Eat(',')) continue;
      if (Eat('}')) return End();
      return false;
    }
  }

 private:
  bool End() {
    Skip();
    return pos_ == s_.size();
  }
  void Skip() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t')) ++pos_;
  }
  bool Eat(char c) {
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool String(std::string* out) {
    if (!Eat('"')) return false;
    while (pos_ < s_.size() && s_[pos_] != '"') {
      if (s_[pos_] == '\\') ++pos_;
      if (pos_ < s_.size()) out->push_back(s_[pos_++]);
    }
    return Eat('"');
  }
  bool Value(std::map<std::string, std::variant<double, std::string, bool>>* fields, const std::string& key) {
    if (pos_ >= s_.size()) return false;
    char c = s_[pos_];
    if (c == '"') {
      std::string v;
      if (!String(&v)) return false;
      if (fields) (*fields)[key] = v;
      return true;
    }
    if (c == '{') {
      JsonReader nested(s_.substr(pos_));
      // Find the nested object's extent by parsing it in place.
      size_t start = pos_;
      ++pos_;
      Skip();
      if (Eat('}')) {
        if (fields) (*fields)[key] = std::string("{object}");
        return true;
      }
      for (;;) {
        std::string k;
        Skip();
        if (!String(&k)) return false;
        Skip();
        if (!Eat(':')) return false;
        Skip();
        if (!Value(nullptr, k)) return false;
        Skip();
        if (Eat(',')) continue;
        if (Eat('}')) break;
        return false;
      }
      (void)start;
      if (fields) (*fields)[key] = std::string("{object}");
      return true;
    }
    if (c == '[') {  // kept as "[N]", N its elements
      ++pos_;
      Skip();
      size_t n = 0;
      if (!Eat(']')) {
        for (;;) {
          Skip();
          if (!Value(nullptr, key)) return false;
          ++n;
          Skip();
          if (Eat(',')) continue;
          if (Eat(']')) break;
          return false;
        }
      }
      if (fields) (*fields)[key] = "[" + std::to_string(n) + "]";
      return true;
    }
    if (s_.compare(pos_, 4, "true") == 0 || s_.compare(pos_, 5, "false") == 0) {
      bool v = s_[pos_] == 't';
      pos_ += v ? 4 : 5;
      if (fields) (*fields)[key] = v;
      return true;
    }
    size_t used = 0;
    double v;
    try {
      v = std::stod(s_.substr(pos_), &used);
    } catch (...) {
      return false;
    }
    if (used == 0) return false;
    pos_ += used;
    if (fields) (*fields)[key] = v;
    return true;
  }

  const std::string& s_;
  size_t pos_ = 0;
};

// prefix: a command that runs the bench (e.g. "taskset -c 0"), or empty.
std::string RunBench(const std::string& args, int* exit_code, const std::string& prefix = "") {
  std::string cmd = prefix + " " + std::string(ROLIS_BENCH_BINARY) + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return "";
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  *exit_code = pclose(p);
  return out;
}

std::string LastLine(const std::string& out) {
  size_t end = out.find_last_not_of('\n');
  if (end == std::string::npos) return "";
  size_t begin = out.rfind('\n', end);
  return out.substr(begin == std::string::npos ? 0 : begin + 1, end + 1 - (begin == std::string::npos ? 0 : begin + 1));
}

void CheckRun(const std::string& args, const std::string& workload) {
  int code = -1;
  std::string out = RunBench(args, &code);
  ASSERT_EQ(code, 0) << out;
  std::map<std::string, std::variant<double, std::string, bool>> f;
  std::string line = LastLine(out);
  ASSERT_TRUE(JsonReader(line).ParseObject(&f)) << "last line is not a JSON object: " << line;
  for (const char* name : {"workload", "mode", "threads", "seconds", "throughput_tps", "abort_rate", "p50_us",
                           "p99_us", "commits", "aborts", "replicas", "batch_size", "txns"}) {
    EXPECT_TRUE(f.count(name)) << "missing field " << name << " in " << line;
  }
  EXPECT_EQ(std::get<std::string>(f["workload"]), workload);
  EXPECT_EQ(std::get<std::string>(f["mode"]), "unreplicated");
  EXPECT_EQ(std::get<double>(f["threads"]), 2);
  EXPECT_EQ(std::get<double>(f["replicas"]), 1);
  EXPECT_EQ(std::get<double>(f["batch_size"]), 0);
  EXPECT_GT(std::get<double>(f["commits"]), 0);
  EXPECT_GT(std::get<double>(f["throughput_tps"]), 0);
  EXPECT_GE(std::get<double>(f["abort_rate"]), 0);
  EXPECT_LT(std::get<double>(f["abort_rate"]), 1);
  EXPECT_GT(std::get<double>(f["p50_us"]), 0);
  EXPECT_GE(std::get<double>(f["p99_us"]), std::get<double>(f["p50_us"]));
  EXPECT_NEAR(std::get<double>(f["seconds"]), 1.0, 0.5);
  // Off unless asked for, as in rolisd (docs/operations.md, "Huge pages").
  ASSERT_TRUE(f.count("huge_pages")) << line;
  EXPECT_EQ(std::get<bool>(f["huge_pages"]), false);
  ASSERT_TRUE(f.count("prefault_mib")) << line;  // none unless asked for, as in rolisd
  EXPECT_EQ(std::get<double>(f["prefault_mib"]), 0);
  ASSERT_TRUE(f.count("other_cpu_load")) << line;
  EXPECT_EQ(std::get<std::string>(f["other_cpu_load"]), "none");
  EXPECT_EQ(std::get<double>(f["other_cpu_load_rounds"]), 0);
  EXPECT_EQ(std::get<double>(f["other_cpu_load_unpinned"]), 0);
}

TEST(RolisBench, YcsbppPrintsJsonSummaryAsLastLine) {
  CheckRun("--workload=ycsbpp --threads=2 --seconds=1 --warmup=0 --ycsb-keys=10000", "ycsbpp");
}

TEST(RolisBench, TpccPrintsJsonSummaryAsLastLine) {
  CheckRun("--workload=tpcc --threads=2 --seconds=1 --warmup=0 --tpcc-items=5000 --tpcc-customers=300 "
           "--tpcc-new-orders=90",
           "tpcc");
}

// --timeline: the window in intervals, each with its throughput, in the
// table and as a JSON array.
TEST(RolisBench, TimelineSplitsTheWindowIntoIntervals) {
  int code = -1;
  std::string out =
      RunBench("--workload=ycsbpp --threads=1 --seconds=2 --warmup=0 --ycsb-keys=10000 --timeline=0.5", &code);
  ASSERT_EQ(code, 0) << out;
  std::map<std::string, std::variant<double, std::string, bool>> f;
  ASSERT_TRUE(JsonReader(LastLine(out)).ParseObject(&f)) << LastLine(out);
  ASSERT_TRUE(f.count("timeline")) << LastLine(out);
  const std::string points = std::get<std::string>(f["timeline"]);
  EXPECT_TRUE(points == "[4]" || points == "[3]" || points == "[5]") << points;  // a late last poll may split one
  std::vector<double> tps;
  for (size_t at = out.find("  at "); at != std::string::npos; at = out.find("  at ", at + 1)) {
    double end_s = 0, t = 0;
    ASSERT_EQ(std::sscanf(out.c_str() + at, "  at %lf s: %lf txn/s", &end_s, &t), 2);
    EXPECT_LE(end_s, 2.0 * 1.5);
    tps.push_back(t);
  }
  ASSERT_FALSE(tps.empty()) << out;
  // The last interval may be the sliver after a late poll, with no commit
  // in it (seen once under ctest -j2); every other one has throughput.
  for (size_t i = 0; i + 1 < tps.size(); i++) EXPECT_GT(tps[i], 0) << "interval " << i << "\n" << out;
  EXPECT_EQ("[" + std::to_string(tps.size()) + "]", points);
  code = -1;
  out = RunBench("--workload=ycsbpp --threads=1 --seconds=1 --warmup=0 --ycsb-keys=10000", &code);
  ASSERT_EQ(code, 0) << out;
  EXPECT_EQ(out.find("\"timeline\""), std::string::npos);  // off by default
}

// Two workers that share one CPU each wait for it about half of the window
// (more if other tests run there too).
TEST(RolisBench, CountsTheTimeWorkersWaitedForTheirCpus) {
  if (access("/proc/thread-self/schedstat", R_OK) != 0) GTEST_SKIP() << "the kernel keeps no scheduler statistics";
  int code = -1;
  const std::string out = RunBench("--workload=ycsbpp --threads=2 --seconds=1 --warmup=0 --ycsb-keys=10000", &code,
                                   "taskset -c 0");  // both workers pinned to CPU 0
  ASSERT_EQ(code, 0) << out;
  std::map<std::string, std::variant<double, std::string, bool>> f;
  const std::string line = LastLine(out);
  ASSERT_TRUE(JsonReader(line).ParseObject(&f)) << line;
  ASSERT_TRUE(f.count("worker_runqueue_ms")) << line;
  const double shared = std::get<double>(f["worker_runqueue_ms"]);
  EXPECT_GT(shared, 300) << "two workers on one CPU for 1 s";
  EXPECT_LT(shared, 2 * 1000 * 1.5);
}

// --other-cpu-load: a load ran on the CPU the worker does not use for the
// window, and the run says which and how much it did.
TEST(RolisBench, OtherCpuLoadRunsBesideTheWorkers) {
  if (sysconf(_SC_NPROCESSORS_ONLN) < 2) GTEST_SKIP() << "one CPU: nowhere to put the load";
  int code = -1;
  const std::string out = RunBench(
      "--workload=ycsbpp --threads=1 --seconds=1 --warmup=0 --ycsb-keys=10000 --other-cpu-load=pause", &code);
  ASSERT_EQ(code, 0) << out;
  std::map<std::string, std::variant<double, std::string, bool>> f;
  const std::string line = LastLine(out);
  ASSERT_TRUE(JsonReader(line).ParseObject(&f)) << line;
  EXPECT_EQ(std::get<std::string>(f["other_cpu_load"]), "pause");
  // A round is 2^16 pauses (~2 ms on Zen 3); the window is 1 s.
  EXPECT_GT(std::get<double>(f["other_cpu_load_rounds"]), 10) << line;
  // Every load thread got its CPU (the run would say so otherwise).
  EXPECT_EQ(std::get<double>(f["other_cpu_load_unpinned"]), 0) << line;
  EXPECT_EQ(out.find("could not be pinned"), std::string::npos) << out;
  EXPECT_NE(out.find("synthetic 'pause' load"), std::string::npos) << out;
}

TEST(RolisBench, OtherCpuLoadNeedsAKnownKindAndTheUnreplicatedMode) {
  int code = 0;
  std::string out = RunBench("--workload=ycsbpp --seconds=1 --ycsb-keys=100 --other-cpu-load=lots", &code);
  EXPECT_NE(code, 0);
  EXPECT_NE(out.find("--other-cpu-load"), std::string::npos) << out;
  code = 0;
  out = RunBench("--workload=ycsbpp --mode=replicated --replicas=1 --seconds=1 --ycsb-keys=100 --other-cpu-load=pause",
                 &code);
  EXPECT_NE(code, 0);
  EXPECT_NE(out.find("needs the unreplicated mode"), std::string::npos) << out;
}

TEST(RolisBench, RejectsUnknownWorkload) {
  int code = 0;
  RunBench("--workload=nope --seconds=1", &code);
  EXPECT_NE(code, 0);
}

// --replicas=3: the leader in process, two rolisd followers on loopback. A
// functional check (the fields are there and transactions are acknowledged),
// not a timed one.
std::map<std::string, std::variant<double, std::string, bool>> RunReplicated(const std::string& args) {
  int code = -1;
  std::string out = RunBench(args + " --replicas=3 --threads=1 --seconds=1 --warmup=0 --rolisd=" ROLISD_BINARY, &code);
  std::map<std::string, std::variant<double, std::string, bool>> f;
  EXPECT_EQ(code, 0) << out;
  std::string line = LastLine(out);
  EXPECT_TRUE(JsonReader(line).ParseObject(&f)) << "last line is not a JSON object: " << out;
  for (const char* name : {"mode", "replicas", "batch_size", "batch_timeout_us", "throughput_tps", "p50_us", "p95_us",
                           "p99_us", "engine_p50_us", "acked_txns", "unacked_txns", "latency"}) {
    EXPECT_TRUE(f.count(name)) << "missing field " << name << " in " << line;
  }
  if (::testing::Test::HasFailure()) return {};
  EXPECT_EQ(std::get<std::string>(f["mode"]), "replicated");
  EXPECT_EQ(std::get<std::string>(f["latency"]), "client_visible_commit");
  EXPECT_EQ(std::get<double>(f["replicas"]), 3);
  EXPECT_GT(std::get<double>(f["throughput_tps"]), 0);
  EXPECT_GT(std::get<double>(f["acked_txns"]), 0);
  EXPECT_GT(std::get<double>(f["p50_us"]), 0);
  EXPECT_GE(std::get<double>(f["p95_us"]), std::get<double>(f["p50_us"]));
  EXPECT_GE(std::get<double>(f["p99_us"]), std::get<double>(f["p95_us"]));
  // With more CPUs than workers, the workers' CPUs run nothing else of this
  // process (the engine's and gRPC's threads too), as in the unreplicated run.
  if (f.count("threads_on_worker_cpus")) {
    EXPECT_EQ(std::get<double>(f["threads_on_worker_cpus"]), 0) << line;
  }
  return f;
}

TEST(RolisBench, ReplicatedYcsbppAcknowledgesThroughTheWatermark) {
  auto f = RunReplicated("--workload=ycsbpp --ycsb-keys=10000 --batch-size=100");
  if (f.empty()) return;
  EXPECT_EQ(std::get<double>(f["batch_size"]), 100);
  // Acknowledgement waits for a majority: never faster than the engine alone.
  EXPECT_GE(std::get<double>(f["p50_us"]), std::get<double>(f["engine_p50_us"]));
}

// With --huge-pages and --prefault-memory, which the followers are started
// with too (a rolisd that refused either flag would fail the run).
TEST(RolisBench, ReplicatedTpccAcknowledgesThroughTheWatermark) {
  auto f = RunReplicated(
      "--workload=tpcc --tpcc-items=5000 --tpcc-customers=300 --tpcc-new-orders=90 --huge-pages "
      "--prefault-memory=100MiB");
  if (f.empty()) return;
  EXPECT_EQ(std::get<double>(f["batch_size"]), rolis::server::kDefaultBatchSize);  // rolisd's default
  ASSERT_TRUE(f.count("huge_pages"));
  EXPECT_EQ(std::get<bool>(f["huge_pages"]), true);
  ASSERT_TRUE(f.count("prefault_mib"));
  EXPECT_EQ(std::get<double>(f["prefault_mib"]), 128);  // rounded up to 64 MiB units
}

// --durability=disk: every member (the in-process leader too) has a data
// directory in a temporary directory under --data-root, removed at exit;
// the JSON line names the mode.
TEST(RolisBench, ReplicatedDiskDurabilityUsesDataDirsUnderTheRootAndRemovesThem) {
  char root[] = "/tmp/rolis-bench-root-XXXXXX";
  ASSERT_NE(mkdtemp(root), nullptr);
  auto f = RunReplicated(std::string("--workload=ycsbpp --ycsb-keys=10000 --durability=disk --data-root=") + root);
  std::error_code ec;
  EXPECT_TRUE(std::filesystem::is_empty(root, ec)) << root << " still holds the members' data directories";
  std::filesystem::remove_all(root, ec);
  if (f.empty()) return;
  ASSERT_TRUE(f.count("durability"));
  EXPECT_EQ(std::get<std::string>(f["durability"]), "disk");
  auto m = RunReplicated("--workload=ycsbpp --ycsb-keys=10000");
  if (m.empty()) return;
  EXPECT_EQ(std::get<std::string>(m["durability"]), "memory");
}

TEST(RolisBench, DiskDurabilityNeedsTheReplicatedModeAndAUsableRoot) {
  int code = 0;
  std::string out = RunBench("--workload=ycsbpp --seconds=1 --ycsb-keys=100 --durability=disk", &code);
  EXPECT_NE(code, 0);
  EXPECT_NE(out.find("needs the replicated mode"), std::string::npos) << out;
  out = RunBench("--workload=ycsbpp --replicas=3 --seconds=1 --ycsb-keys=100 --durability=disk "
                 "--data-root=/nonexistent/root --rolisd=" ROLISD_BINARY, &code);
  EXPECT_NE(code, 0);
  EXPECT_NE(out.find("--data-root"), std::string::npos) << out;
  out = RunBench("--workload=ycsbpp --replicas=3 --seconds=1 --ycsb-keys=100 --durability=tape", &code);
  EXPECT_NE(code, 0);
}

TEST(RolisBench, RejectsEvenReplicasAndMissingRolisd) {
  int code = 0;
  std::string out = RunBench("--workload=ycsbpp --replicas=2 --seconds=1 --ycsb-keys=100", &code);
  EXPECT_NE(code, 0);
  EXPECT_NE(out.find("odd"), std::string::npos) << out;
  out = RunBench("--workload=ycsbpp --seconds=1 --ycsb-keys=100 --prefault-memory=lots", &code);
  EXPECT_NE(code, 0);
  EXPECT_NE(out.find("--prefault-memory"), std::string::npos) << out;
  out = RunBench("--workload=ycsbpp --replicas=3 --seconds=1 --ycsb-keys=100 --rolisd=/nonexistent/rolisd", &code);
  EXPECT_NE(code, 0);
  EXPECT_NE(out.find("rolisd not found at /nonexistent/rolisd"), std::string::npos) << out;
  out = RunBench("--workload=ycsbpp --mode=unreplicated --replicas=3 --seconds=1 --ycsb-keys=100", &code);
  EXPECT_NE(code, 0);
  out = RunBench("--workload=ycsbpp --replicas=3 --batch-timeout=5us --seconds=1 --ycsb-keys=100", &code);
  EXPECT_NE(code, 0);
  EXPECT_NE(out.find("--batch-timeout"), std::string::npos) << out;
}

}  // namespace

// --rate: open loop. The run keeps to the rate (it may fall behind on a
// loaded machine, never run ahead of it), and says so in the JSON line.
TEST(RolisBench, RateRunsOpenLoopAtTheRateAndReportsIt) {
  auto f = RunReplicated("--workload=ycsbpp --ycsb-keys=10000 --rate=2000");
  if (f.empty()) return;
  ASSERT_TRUE(f.count("rate_tps") && f.count("max_lag_us"));
  EXPECT_EQ(std::get<double>(f["rate_tps"]), 2000);
  EXPECT_LE(std::get<double>(f["throughput_tps"]), 2000 * 1.05);  // closed loop: tens of thousands
  EXPECT_GT(std::get<double>(f["throughput_tps"]), 0);  // behind on a loaded machine: max_lag_us says how far
  EXPECT_GE(std::get<double>(f["max_lag_us"]), 0);
  // Steal time of the worker's CPU in a 1 s window: from 0 (a quiet host)
  // up to the window itself.
  ASSERT_TRUE(f.count("steal_ms"));
  EXPECT_GE(std::get<double>(f["steal_ms"]), 0);
  EXPECT_LE(std::get<double>(f["steal_ms"]), 1000 * 1.5);
  // The followers' CPU: busy, but not more than the window on every other CPU.
  ASSERT_TRUE(f.count("other_cpus_busy_ms") && f.count("other_cpus_us_per_txn") && f.count("context_switches_per_txn"));
  if (std::get<double>(f["other_cpus_busy_ms"]) >= 0) {  // -1: the worker could not be pinned apart
    EXPECT_GT(std::get<double>(f["other_cpus_busy_ms"]), 0);
    EXPECT_LE(std::get<double>(f["other_cpus_busy_ms"]), 1000 * 1.5 * sysconf(_SC_NPROCESSORS_ONLN));
    EXPECT_GT(std::get<double>(f["other_cpus_us_per_txn"]), 0);
  }
  EXPECT_GT(std::get<double>(f["context_switches_per_txn"]), 0);
  int code = 0;
  RunBench("--workload=ycsbpp --seconds=1 --rate=-5", &code);
  EXPECT_NE(code, 0);
}
