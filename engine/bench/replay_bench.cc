// rolis-replay-bench: the follower's apply path in isolation.
//
// A leader database runs the workload single-threaded with a commit hook
// that encodes every transaction with the replication codec (AppendTxn)
// into batches of --batch-txns, as the leader's streams do. A follower
// database then replays them, timed: decode (DecodeBatch) and apply
// (ReplayApplier, the code Replayer runs), for a "preloaded" follower
// (the load's batches applied first, untimed: the run's writes overwrite)
// and an "empty" one (they insert). --path per-write times main's path
// before ApplyReplicatedBatch instead (kept here for comparison): DecodeTxns,
// PrefetchReplicated every 4 transactions, ApplyReplicated per write.
//
// Prints a table, then as its last line one JSON object: with one
// (workload, store, path) its fields (workload, store, path, writes, txns,
// ns_per_write, cpu_ns_per_write, ...); with several, {"results": [...]}.
//
// Instructions per replayed write (docs/benchmarks.md, "Follower replay
// cost"): run one combination under callgrind, counting only the timed
// replay, and divide Ir by `writes`:
//   valgrind --tool=callgrind --collect-atstart=no --toggle-collect='*TimedReplay*'
//     bin/rolis-replay-bench --small --workload ycsbpp --store preloaded --path batch
#include <CLI/CLI.hpp>

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <ctime>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "codec.h"
#include "replay_apply.h"
#include "rolis/db.h"
#include "workloads/tpcc.h"
#include "workloads/ycsb.h"

namespace rolis::bench {
namespace {

using replication::AppendTxn;
using replication::DecodeBatch;
using replication::DecodedBatch;
using replication::DecodedTxn;
using replication::DecodeTxns;
using replication::ReplayApplier;

struct EncodedBatch {
  std::string payload;
  uint32_t count = 0;
  uint64_t last_ts = 0;
};

// The leader side: closes a batch every `batch_txns` transactions.
class Capture final : public CommitHook {
 public:
  explicit Capture(uint32_t batch_txns) : batch_txns_(batch_txns) {}
  void OnCommit(WorkerId, uint64_t ts, const CommittedWrites& writes) override {
    std::lock_guard<std::mutex> g(mu_);
    if (!on_) return;
    if (out_->empty() || out_->back().count == batch_txns_) out_->emplace_back();
    EncodedBatch& b = out_->back();
    // One stream: make ts strictly increase, as a stream's batches do.
    ts = std::max(ts, last_ts_ + 1);
    last_ts_ = ts;
    AppendTxn(&b.payload, ts, writes.records());
    b.count++;
    b.last_ts = ts;
    writes_ += writes.size();
    txns_++;
  }
  uint64_t txns() {
    std::lock_guard<std::mutex> g(mu_);
    return txns_;
  }
  void Start(std::vector<EncodedBatch>* out) {
    std::lock_guard<std::mutex> g(mu_);
    out_ = out;
    on_ = true;
    writes_ = txns_ = 0;
  }
  uint64_t Stop() {
    std::lock_guard<std::mutex> g(mu_);
    on_ = false;
    return writes_;
  }

 private:
  std::mutex mu_;
  uint32_t batch_txns_;
  bool on_ = false;
  std::vector<EncodedBatch>* out_ = nullptr;
  uint64_t last_ts_ = 0, writes_ = 0, txns_ = 0;
};

struct Workload {
  std::string name;
  std::vector<std::string> tables;  // by id
  std::vector<EncodedBatch> load, run;
  uint64_t load_writes = 0, run_writes = 0, run_txns = 0;
};

struct Sizes {
  uint64_t ycsb_keys = 1000000;
  uint64_t txns = 200000;
  uint32_t batch_txns = 50;
  uint32_t tpcc_items = 100000;
  uint32_t tpcc_customers = 3000;
  bool patch_updates = true;  // the leader logs updates as patches, as rolisd does
};

Status Generate(const std::string& name, const Sizes& sz, Workload* out) {
  out->name = name;
  Capture capture(sz.batch_txns);
  Options o;
  o.commit_hook = &capture;
  o.epoch_period_ms = 10;
  o.patch_updates = sz.patch_updates;
  auto db = Database::Open(o);
  std::unique_ptr<workloads::Workload> w;
  if (name == "ycsbpp") {
    workloads::YcsbConfig c;
    c.keys = sz.ycsb_keys;
    c.read_only_percent = 0;  // every transaction is a 4-key read-modify-write
    w = std::make_unique<workloads::Ycsbpp>(c);
  } else {
    workloads::TpccConfig c;
    c.warehouses = 1;
    c.items = sz.tpcc_items;
    c.customers_per_district = sz.tpcc_customers;
    c.new_orders_per_district = sz.tpcc_customers * 3 / 10;
    w = std::make_unique<workloads::Tpcc>(c);
  }
  capture.Start(&out->load);
  Status s = w->Load(db.get(), 1);
  out->load_writes = capture.Stop();
  if (!s.ok()) return s;
  for (TableId id = 0;; id++) {
    Table* t = nullptr;
    if (!db->GetTable(id, &t).ok()) break;
    out->tables.push_back(t->name());
  }
  // Read-only transactions read a snapshot: let it include the load.
  const uint64_t target = db->Stats().current_epoch;
  while (db->Stats().snapshot_epoch < target) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  // As in rolis-bench: the load is not replicated, the run is the leader's
  // first epoch (a patch is made only against this epoch's writes).
  db->SetReplicationEpoch(1);
  auto worker = db->RegisterWorker();
  workloads::WorkerContext ctx(worker.get(), 0, 1, 7);
  w->InitThread(ctx);
  capture.Start(&out->run);
  while (capture.txns() < sz.txns) {  // only read-write commits reach the hook
    workloads::TxnOutcome r = w->RunOne(ctx);
    if (!r.error.ok()) return r.error;
  }
  out->run_txns = capture.txns();
  out->run_writes = capture.Stop();
  return Status::OK();
}

// The replay path before ApplyReplicatedBatch (one write at a time).
void ApplyPerWrite(Database* db, Worker* worker, const std::vector<DecodedTxn>& txns, uint64_t epoch) {
  constexpr size_t kPrefetchTxns = 4;
  for (size_t pos = 0; pos < txns.size(); pos++) {
    if (pos % kPrefetchTxns == 0) {
      WriteRecord group[64];
      size_t n = 0;
      for (size_t i = pos; i < txns.size() && i < pos + kPrefetchTxns; i++) {
        for (const WriteRecord& w : txns[i].writes) {
          if (n == 64) break;
          group[n++] = w;
        }
      }
      db->PrefetchReplicated(worker, group, n);
    }
    for (const WriteRecord& w : txns[pos].writes) (void)db->ApplyReplicated(worker, w, epoch, txns[pos].ts);
  }
}

// The timed part (callgrind counts only this function and its callees).
__attribute__((noinline)) void TimedReplay(Database* db, Worker* worker, const std::vector<EncodedBatch>& batches,
                                           bool per_write) {
  constexpr uint64_t kEpoch = 1;
  if (per_write) {
    std::vector<DecodedTxn> txns;
    for (const EncodedBatch& b : batches) {
      if (!DecodeTxns(b.payload, b.count, b.last_ts, &txns).ok()) std::abort();
      ApplyPerWrite(db, worker, txns, kEpoch);
      db->SetReplayHorizon(kEpoch, b.last_ts);
    }
    return;
  }
  DecodedBatch txns;
  ReplayApplier applier(db, worker, 0);
  for (const EncodedBatch& b : batches) {
    if (!DecodeBatch(b.payload, b.count, b.last_ts, &txns).ok()) std::abort();
    for (size_t i = 0; i < txns.size(); i++) applier.Add(txns.writes(i), kEpoch, txns.ts(i));
    applier.Flush();  // as Replayer does at the end of a batch
    // One stream: all of it is applied up to here. (The replica raises the
    // horizon every 50 ms; without it replicated tombstones are never
    // reclaimed and every epoch change re-checks all of them.)
    db->SetReplayHorizon(kEpoch, b.last_ts);
  }
}

struct Result {
  std::string workload, store, path;
  uint64_t writes = 0, txns = 0, batches = 0;
  double seconds = 0, cpu_seconds = 0;
  uint64_t live_records = 0;
};

double ThreadCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

Result RunOne(const Workload& wl, bool preloaded, bool per_write) {
  Options o;
  auto db = Database::Open(o);
  for (const std::string& name : wl.tables) {
    if (!db->CreateTable(name, nullptr).ok()) std::abort();
  }
  auto worker = db->RegisterWorker();
  if (preloaded) {
    // The same start state for both paths: the load applied in groups.
    DecodedBatch txns;
    ReplayApplier applier(db.get(), worker.get(), 0);
    for (const EncodedBatch& b : wl.load) {
      if (!DecodeBatch(b.payload, b.count, b.last_ts, &txns).ok()) std::abort();
      for (size_t i = 0; i < txns.size(); i++) applier.Add(txns.writes(i), 1, txns.ts(i));
      applier.Flush();
    }
  }
  worker->Quiesce();
  Result r;
  r.workload = wl.name;
  r.store = preloaded ? "preloaded" : "empty";
  r.path = per_write ? "per-write" : "batch";
  r.writes = wl.run_writes;
  r.txns = wl.run_txns;
  r.batches = wl.run.size();
  const double c0 = ThreadCpuSeconds();
  const auto t0 = std::chrono::steady_clock::now();
  TimedReplay(db.get(), worker.get(), wl.run, per_write);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.cpu_seconds = ThreadCpuSeconds() - c0;
  worker->Quiesce();
  r.live_records = db->Stats().live_records;
  return r;
}

std::string Json(const Result& r, const Sizes& sz) {
  char buf[768];
  const double w = static_cast<double>(r.writes ? r.writes : 1);
  std::snprintf(buf, sizeof buf,
                "{\"workload\":\"%s\",\"store\":\"%s\",\"path\":\"%s\",\"writes\":%" PRIu64 ",\"txns\":%" PRIu64
                ",\"batches\":%" PRIu64 ",\"batch_txns\":%u,\"ns_per_write\":%.1f,\"cpu_ns_per_write\":%.1f"
                ",\"writes_per_second\":%.0f,\"seconds\":%.4f,\"live_records\":%" PRIu64
                ",\"ycsb_keys\":%" PRIu64 ",\"tpcc_items\":%u,\"tpcc_customers\":%u}",
                r.workload.c_str(), r.store.c_str(), r.path.c_str(), r.writes, r.txns, r.batches, sz.batch_txns,
                r.seconds * 1e9 / w, r.cpu_seconds * 1e9 / w, w / (r.seconds > 0 ? r.seconds : 1e-9), r.seconds,
                r.live_records, sz.ycsb_keys, sz.tpcc_items, sz.tpcc_customers);
  return buf;
}

}  // namespace
}  // namespace rolis::bench

int main(int argc, char** argv) {
  using namespace rolis::bench;
  CLI::App app{"rolis-replay-bench: the cost of follower replay (decode + apply) per replicated write"};
  std::string workload = "all", store = "all", path = "batch";
  Sizes sz;
  bool small = false;
  int reps = 1;
  app.add_option("--workload", workload, "ycsbpp, tpcc or all")->check(CLI::IsMember({"ycsbpp", "tpcc", "all"}));
  app.add_option("--store", store, "preloaded (overwrites), empty (inserts) or all")
      ->check(CLI::IsMember({"preloaded", "empty", "all"}));
  app.add_option("--path", path, "batch (ApplyReplicatedBatch), per-write (main's path before it) or both")
      ->check(CLI::IsMember({"batch", "per-write", "both"}));
  app.add_option("--keys", sz.ycsb_keys, "YCSB++ keys")->check(CLI::PositiveNumber);
  app.add_option("--txns", sz.txns, "read-write transactions to replay")->check(CLI::PositiveNumber);
  app.add_option("--batch-txns", sz.batch_txns, "transactions per batch")->check(CLI::PositiveNumber);
  app.add_option("--patch-updates", sz.patch_updates,
                 "log an update of the worker's own last write as a patch, as rolisd (default true)");
  app.add_option("--reps", reps, "runs of each combination, interleaved across paths")->check(CLI::PositiveNumber);
  app.add_flag("--small", small,
               "small sizes for callgrind: 100K YCSB++ keys, TPC-C with 10K items and 300 customers per "
               "district, 20K transactions");
  CLI11_PARSE(app, argc, argv);
  if (small) {
    sz.ycsb_keys = std::min<uint64_t>(sz.ycsb_keys, 100000);
    sz.tpcc_items = 10000;
    sz.tpcc_customers = 300;
    if (app.count("--txns") == 0) sz.txns = 20000;
  }

  std::vector<std::string> names = workload == "all" ? std::vector<std::string>{"ycsbpp", "tpcc"}
                                                     : std::vector<std::string>{workload};
  std::vector<bool> stores = store == "all" ? std::vector<bool>{true, false} : std::vector<bool>{store == "preloaded"};
  std::vector<bool> paths =
      path == "both" ? std::vector<bool>{true, false} : std::vector<bool>{path == "per-write"};

  std::vector<Result> results;
  std::printf("%-7s %-9s %-9s %9s %8s %10s %12s %12s\n", "wkld", "store", "path", "writes", "txns", "ns/write",
              "cpu ns/write", "writes/s");
  for (const std::string& name : names) {
    Workload wl;
    rolis::Status s = Generate(name, sz, &wl);
    if (!s.ok()) {
      std::fprintf(stderr, "generating %s: %s\n", name.c_str(), s.ToString().c_str());
      return 1;
    }
    uint64_t run_bytes = 0;
    for (const EncodedBatch& b : wl.run) run_bytes += b.payload.size();
    std::fprintf(stderr, "%s: %zu tables, load %" PRIu64 " writes in %zu batches, run %" PRIu64
                         " writes in %" PRIu64 " txns, %zu batches, %.0f payload bytes per txn\n",
                 name.c_str(), wl.tables.size(), wl.load_writes, wl.load.size(), wl.run_writes, wl.run_txns,
                 wl.run.size(), static_cast<double>(run_bytes) / static_cast<double>(std::max<uint64_t>(wl.run_txns, 1)));
    for (bool preloaded : stores) {
      for (int rep = 0; rep < reps; rep++) {
        for (bool per_write : paths) {
          Result r = RunOne(wl, preloaded, per_write);
          std::printf("%-7s %-9s %-9s %9" PRIu64 " %8" PRIu64 " %10.1f %12.1f %12.0f\n", r.workload.c_str(),
                      r.store.c_str(), r.path.c_str(), r.writes, r.txns, r.seconds * 1e9 / r.writes,
                      r.cpu_seconds * 1e9 / r.writes, r.writes / r.seconds);
          std::fflush(stdout);
          results.push_back(r);
        }
      }
    }
  }
  if (results.size() == 1) {
    std::printf("%s\n", Json(results[0], sz).c_str());
  } else {
    std::string all = "{\"results\":[";
    for (size_t i = 0; i < results.size(); i++) all += (i ? "," : "") + Json(results[i], sz);
    std::printf("%s]}\n", all.c_str());
  }
  return 0;
}
