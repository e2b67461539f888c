// rolis-bench: loads a workload into a fresh engine, runs it on N pinned
// worker threads for a warmup and a measured window, and prints a table and,
// as its last line, one JSON object (see report.h).
//
//   rolis-bench --workload=ycsbpp|tpcc|retwis|tpca|bank|hash --threads=N --seconds=S
//               [--mode=silo|rolis|2pl|calvin] [--warmup=S] [--seed=N] [--rate=TPS]
//               [--zipf=THETA] [--mix=90/10|50/50|10/90] [--ycsb-keys=N] [--tpcc-...]
//               [--replicas=1|3|5|7 [--batch-size=B] [--batch-timeout=1ms] [--rolisd=PATH]
//                [--durability=memory|disk [--data-root=PATH]]
//                [--kill-follower-at=SECONDS] [--check-acked]]
//
// --mode=rolis (or --replicas=3) is the replicated mode (replicated_mode.h):
// the leader in this process, two rolisd followers on loopback. 2pl and
// calvin are the baselines (baseline_modes.h), replicated the same way.
// docs/benchmarks.md, "Suite".
#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "driver.h"
#include "mode.h"
#include "report.h"
#include "server/config.h"
#include "rolis/byte_size.h"
#include "rolis/db.h"
#include "rolis/prefault.h"
#include "workloads/bank.h"
#include "workloads/hash_table.h"
#include "workloads/retwis.h"
#include "workloads/tpca.h"
#include "workloads/tpcc.h"
#include "workloads/tpcc_check.h"
#include "workloads/ycsb.h"

namespace {

using namespace rolis;  // NOLINT

int Fail(const char* what, const Status& s) {
  std::fprintf(stderr, "rolis-bench: %s: %s\n", what, s.ToString().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  // The replicated mode's leader writes to its followers' sockets (TLS
  // included, through OpenSSL's own writes): a follower that is stopping
  // must make a write fail, not kill the bench before it reports (as rolisd).
  std::signal(SIGPIPE, SIG_IGN);
  CLI::App app{"rolis-bench: YCSB++, TPC-C, Retwis, TPC-A, bank and hash table on the Rolis engine and its baselines"};
  std::string workload_name = "ycsbpp";
  bench::DriverOptions driver;
  bench::ModeOptions mode_options;
  workloads::YcsbConfig ycsb;
  workloads::TpccConfig tpcc;
  uint32_t epoch_ms = 40;
  bool no_pin = false;
  std::string batch_timeout = "1ms";
  std::string other_cpu_load = "none";

  workloads::RetwisConfig retwis;
  workloads::TpcaConfig tpca;
  workloads::BankConfig bank;
  workloads::HashTableConfig hash;
  double zipf = -1;  // -1: the workload's default (ycsbpp and tpca 0, retwis 0.75)
  std::string mix = "50/50";
  app.add_option("--workload", workload_name, "ycsbpp, tpcc, retwis, tpca, bank or hash")
      ->check(CLI::IsMember({"ycsbpp", "tpcc", "retwis", "tpca", "bank", "hash"}));
  app.add_option("--zipf", zipf, "ycsbpp, retwis, tpca: zipfian key (tpca: branch) choice, theta in [0, 1); 0: uniform")
      ->check(CLI::Range(0.0, 0.9999));
  app.add_option("--mix", mix, "bank, hash: read-only/read-write percent")
      ->check(CLI::IsMember({"90/10", "50/50", "10/90"}));
  app.add_option("--retwis-keys", retwis.keys, "Retwis keys")->check(CLI::Range(uint64_t{10}, uint64_t{1} << 32));
  app.add_option("--tpca-branches", tpca.branches, "TPC-A branches (10 tellers, 10,000 accounts each)")
      ->check(CLI::Range(uint64_t{1}, uint64_t{100000}));
  app.add_option("--bank-accounts", bank.accounts, "bank accounts")->check(CLI::Range(uint64_t{2}, uint64_t{1} << 24));
  app.add_option("--hash-elements", hash.elements, "hash table elements")
      ->check(CLI::Range(uint64_t{100}, uint64_t{1} << 32));
  app.add_option("--calvin-epoch-ms", mode_options.calvin_epoch_ms, "calvin: the sequencer's epoch, ms")
      ->check(CLI::Range(1, 1000));
  app.add_option("--calvin-outstanding", mode_options.calvin_outstanding,
                 "calvin: transactions each worker keeps submitted")
      ->check(CLI::Range(1, 1000000));
  app.add_option("--threads", driver.threads, "worker threads (one warehouse each for tpcc)")
      ->check(CLI::Range(1, 250));
  app.add_option("--seconds", driver.seconds, "measured window, seconds")->check(CLI::PositiveNumber);
  app.add_option("--warmup", driver.warmup_seconds, "warmup before the measured window, seconds")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--seed", driver.seed, "random seed");
  app.add_option("--rate", driver.rate_tps,
                 "open loop: transactions due per second across threads (latency from the due time); 0: closed loop")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--timeline", driver.timeline_seconds,
                 "every this many seconds of the window: throughput and the other CPUs' time per transaction "
                 "(how a run changes with its age; 0: off)")
      ->check(CLI::NonNegativeNumber);
  app.add_flag("--no-pin", no_pin, "do not pin worker threads to CPUs");
  app.add_option("--other-cpu-load", other_cpu_load,
                 "unreplicated: a synthetic load on the CPUs the workers do not use: none, pause (busy, no memory), "
                 "stream (sequential writes) or random (random reads, a miss each); engine/bench/interference.sh")
      ->check(CLI::IsMember(bench::OtherCpuLoadNames()));
  app.add_flag("--huge-pages", mode_options.huge_pages,
               "back the engine's memory with transparent huge pages (rolisd's --huge-pages; default off, as rolisd)");
  std::string prefault = "0";
  app.add_option("--prefault-memory", prefault,
                 "memory to fault in before the load and keep for the engine, here and in the followers (rolisd's "
                 "--prefault-memory, e.g. 2GiB; default 0, as rolisd)");
  app.add_option("--patch-updates", mode_options.patch_updates,
                 "replicated: log an update of the worker's own last write as a patch (as rolisd; default true)");
  app.add_option("--epoch-ms", epoch_ms, "engine epoch period, ms")->check(CLI::Range(1, 10000));
  app.add_option("--mode", mode_options.mode,
                 "silo, rolis, 2pl or calvin (unreplicated = silo, replicated = rolis; default: by --replicas)")
      ->check(CLI::IsMember({"silo", "rolis", "2pl", "calvin", "unreplicated", "replicated"}));
  auto* replicas_flag = app.add_option("--replicas", mode_options.replicas,
                                       "replicas: 1 = unreplicated; 3, 5, 7: replicated (odd; default 3 with "
                                       "--mode=rolis, 2pl or calvin)")
                            ->check(CLI::Range(1, 7));
  app.add_option("--batch-size", mode_options.batch_size,
                 "transactions per replication batch (default " + std::to_string(server::kDefaultBatchSize) +
                     ", rolisd's)")
      ->check(CLI::Range(1, 100000));
  app.add_option("--batch-timeout", batch_timeout, "a partial batch closes after this long (50us..1s)");
  app.add_option("--durability", mode_options.durability,
                 "replicated: memory (default, the paper's mode) or disk (each member has a data directory and "
                 "acknowledges an accept only once it is on its disk, as rolisd's --durability=disk)")
      ->check(CLI::IsMember({"memory", "disk"}));
  app.add_option("--data-root", mode_options.data_root,
                 "--durability=disk: the members' data directories go in a temporary directory made here and "
                 "removed at exit (default: $TMPDIR or /tmp); its file system is what the fdatasyncs measure");
  app.add_option("--kill-follower-at", mode_options.kill_follower_at,
                 "replicated: SIGKILL the last follower this many seconds after the run starts (warmup included); "
                 "the run goes on with the majority")
      ->check(CLI::PositiveNumber);
  app.add_flag("--check-acked", mode_options.check_acked,
               "replicated: after the run, stop the leader as if it crashed and check that a majority of the "
               "members (a killed follower not among them) holds every transaction (calvin: batch) acknowledged; "
               "exit 1 if not");
  app.add_option("--rolisd", mode_options.rolisd, "rolisd binary for the followers (default: next to rolis-bench)");
  app.add_option("--ycsb-keys", ycsb.keys, "YCSB++ records")->check(CLI::Range(uint64_t{1}, uint64_t{1} << 40));
  app.add_option("--tpcc-warehouses", tpcc.warehouses, "TPC-C warehouses (0 = one per thread)");
  app.add_option("--tpcc-items", tpcc.items, "TPC-C items (spec: 100000)")->check(CLI::Range(1, 100000000));
  app.add_option("--tpcc-customers", tpcc.customers_per_district, "customers and initial orders per district (3000)")
      ->check(CLI::Range(1, 100000000));
  app.add_option("--tpcc-new-orders", tpcc.new_orders_per_district, "undelivered initial orders per district (900)");
  CLI11_PARSE(app, argc, argv);
  if (replicas_flag->count() == 0 &&
      (mode_options.mode == "rolis" || mode_options.mode == "2pl" || mode_options.mode == "calvin")) {
    mode_options.replicas = 3;
  }
  driver.pin_threads = !no_pin;
  tpcc.seed = driver.seed;
  if (tpcc.new_orders_per_district > tpcc.customers_per_district) {
    tpcc.new_orders_per_district = tpcc.customers_per_district * 3 / 10;
  }

  auto timeout = server::ParseBatchTimeout(batch_timeout);
  if (!timeout) return Fail("--batch-timeout", Status::InvalidArgument("'" + batch_timeout + "' is not 50us..1s"));
  mode_options.batch_timeout = *timeout;
  auto prefault_bytes = ParseByteSize(prefault);
  if (!prefault_bytes) return Fail("--prefault-memory", Status::InvalidArgument("'" + prefault + "' is not a size (e.g. 512MiB, 2GiB)"));
  // As PrefaultMemory rounds it, so that the JSON line and the followers' flag say what was faulted in.
  mode_options.prefault_memory = PrefaultSize(*prefault_bytes);
  mode_options.threads = driver.threads;
  mode_options.epoch_period_ms = epoch_ms;
  mode_options.pin = !no_pin;

  if (mode_options.prefault_memory > 0) {
    std::fprintf(stdout, "prefaulting %zu MiB ...\n", mode_options.prefault_memory >> 20);
    std::fflush(stdout);
    Status ps = PrefaultMemory(mode_options.prefault_memory, mode_options.huge_pages);
    if (!ps.ok()) return Fail("--prefault-memory", ps);
  }
  std::unique_ptr<bench::Mode> mode;
  Status s = bench::MakeMode(mode_options, &mode);
  if (!s.ok()) return Fail("mode", s);
  bench::ParseOtherCpuLoadKind(other_cpu_load, &driver.other_cpu_load);  // checked by CLI11 above
  if (driver.other_cpu_load != bench::OtherCpuLoadKind::kNone && mode->options().system != "silo") {
    return Fail("--other-cpu-load",
                Status::InvalidArgument("needs the unreplicated mode (--replicas=1): with replication the other "
                                        "CPUs run the followers and the leader's replication threads"));
  }

  Options options;
  options.epoch_period_ms = epoch_ms;
  options.huge_pages = mode_options.huge_pages;
  options.patch_updates = mode->commit_hook() != nullptr && mode_options.patch_updates;
  // The load's and the run's workers, and the replicator's replay and snapshot workers.
  options.max_workers = std::max<uint32_t>(options.max_workers, driver.threads + 4);
  options.commit_hook = mode->commit_hook();
  std::unique_ptr<Database> db = Database::Open(options);
  if (!db) return Fail("open", Status::Internal("Database::Open returned null"));
  // The mode (followers, replicator) stops before the Database goes, on every path.
  struct StopMode {
    bench::Mode* m;
    ~StopMode() { m->Shutdown(); }
  } stop_mode{mode.get()};
  s = mode->AfterOpen(db.get());
  if (!s.ok()) return Fail("mode", s);

  bench::RunInfo info;
  info.workload = workload_name;
  info.mode = mode->options();
  info.threads = driver.threads;
  info.warmup_seconds = driver.warmup_seconds;
  info.seed = driver.seed;
  info.other_cpu_load = bench::OtherCpuLoadName(driver.other_cpu_load);
  std::unique_ptr<workloads::Workload> workload;
  if (workload_name == "ycsbpp") {
    if (zipf >= 0) ycsb.zipf_theta = zipf;
    workload = std::make_unique<workloads::Ycsbpp>(ycsb);
    info.config = {{"keys", std::to_string(ycsb.keys)}, {"value_bytes", "8"}, {"ops_per_txn", "4"},
                   {"zipf", std::to_string(ycsb.zipf_theta)}};
  } else if (workload_name == "retwis") {
    if (zipf >= 0) retwis.zipf_theta = zipf;
    workload = std::make_unique<workloads::Retwis>(retwis);
    info.config = {{"keys", std::to_string(retwis.keys)}, {"zipf", std::to_string(retwis.zipf_theta)}};
  } else if (workload_name == "tpca") {
    if (zipf >= 0) tpca.zipf_theta = zipf;
    workload = std::make_unique<workloads::Tpca>(tpca);
    info.config = {{"branches", std::to_string(tpca.branches)}, {"zipf", std::to_string(tpca.zipf_theta)}};
  } else if (workload_name == "bank") {
    bank.read_only_percent = static_cast<uint32_t>(std::stoul(mix));
    workload = std::make_unique<workloads::Bank>(bank);
    info.config = {{"accounts", std::to_string(bank.accounts)}, {"read_only_percent", std::to_string(bank.read_only_percent)}};
  } else if (workload_name == "hash") {
    hash.read_only_percent = static_cast<uint32_t>(std::stoul(mix));
    workload = std::make_unique<workloads::HashTable>(hash);
    info.config = {{"elements", std::to_string(hash.elements)}, {"read_only_percent", std::to_string(hash.read_only_percent)}};
  } else {
    workload = std::make_unique<workloads::Tpcc>(tpcc);
    const uint32_t warehouses = tpcc.warehouses != 0 ? tpcc.warehouses : driver.threads;
    info.config = {{"warehouses", std::to_string(warehouses)},
                   {"items", std::to_string(tpcc.items)},
                   {"customers_per_district", std::to_string(tpcc.customers_per_district)},
                   {"new_orders_per_district", std::to_string(tpcc.new_orders_per_district)}};
  }

  if (mode->txn_runner() != nullptr && !workload->declares_sets()) {
    return Fail("--mode", Status::InvalidArgument("--mode=" + mode->options().system + " runs transactions that " +
                                                  "declare their read and write sets (ycsbpp, retwis, tpca, bank, " +
                                                  "hash, tpcc with at most 20 districts per warehouse); this " +
                                                  workload_name + " runs on silo and rolis"));
  }
  if (mode->options().system == "calvin") {
    info.config.push_back({"calvin_epoch_ms", std::to_string(mode_options.calvin_epoch_ms)});
    info.config.push_back({"calvin_outstanding", std::to_string(mode_options.calvin_outstanding)});
  }
  std::fprintf(stdout, "loading %s with %u threads ...\n", workload_name.c_str(), driver.threads);
  std::fflush(stdout);
  const auto load_start = std::chrono::steady_clock::now();
  s = workload->Load(db.get(), driver.threads);
  if (!s.ok()) return Fail("load", s);
  info.load_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - load_start).count();
  // Read-only transactions read a snapshot a few epochs old: wait until it
  // holds the loaded data, so no read-only transaction misses a key.
  bench::WaitForSnapshot(db.get(), 10 * epoch_ms + 1000);
  s = mode->Start(db.get());
  if (!s.ok()) return Fail("start", s);
  info.placement = mode->Placement();

  bench::RunResult result;
  driver.hooks = mode->worker_hooks();
  driver.cpus = mode->driver_cpus();
  driver.runner = mode->txn_runner();
  s = bench::RunWorkload(db.get(), workload.get(), driver, &result);
  if (!s.ok()) return Fail("run", s);
  s = mode->Finish(&result);
  if (!s.ok()) return Fail("finish", s);
  // The workload's own invariant after the run, where it has one.
  if (workload_name == "bank") {
    s = static_cast<workloads::Bank*>(workload.get())->CheckTotal(db.get());
    info.check = s.ok() ? "bank_total_ok" : "failed";
  } else if (workload_name == "tpca") {
    bench::WaitForSnapshot(db.get(), 10 * epoch_ms + 1000);
    s = static_cast<workloads::Tpca*>(workload.get())->CheckConsistency(db.get());
    info.check = s.ok() ? "tpca_sums_ok" : "failed";
  } else if (workload_name == "tpcc") {
    bench::WaitForSnapshot(db.get(), 10 * epoch_ms + 1000);
    s = workloads::CheckTpccConsistency(db.get(), *static_cast<workloads::Tpcc*>(workload.get()));
    info.check = s.ok() ? "tpcc_consistent" : "failed";
  }
  if (!s.ok()) return Fail("check", s);

  bench::PrintTable(stdout, info, result);
  std::fprintf(stdout, "%s\n", bench::JsonLine(info, result).c_str());
  return 0;
}
