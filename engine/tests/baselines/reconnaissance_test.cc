// Reconnaissance (OLLP) in the lock-based baselines (docs/benchmarks.md,
// "Modes"): a transaction whose set depends on what it reads declares the
// set its reconnaissance found, re-checks it when it runs, and is
// reconnoitred again and restarted when it changed.
//
// Pointer: a pointer row names one of kTargets counters; Bump increments
// the counter the pointer names when it runs (its reconnaissance reads the
// pointer to declare that counter), Move points it elsewhere. Every Bump
// must land on the counter named at its execution, under a lock on it: the
// counters sum to the Bumps committed, each counter's lock was declared,
// and under Calvin (many transactions queued behind Moves) some Bumps
// restart, each counted as a conflict abort.
//
// TPC-C: both runners keep TPC-C's consistency conditions (tpcc_check.h).
#include <gtest/gtest.h>

#include <atomic>
#include <vector>

#include "../workloads/small_workload_run.h"
#include "baselines/calvin.h"
#include "baselines/two_phase_locking.h"
#include "workloads/tpcc.h"
#include "workloads/tpcc_check.h"
#include "workloads/u64_table.h"

namespace rolis::baselines {
namespace {

using namespace rolis::workloads;  // NOLINT

constexpr uint64_t kTargets = 4;  // counters 1..kTargets; row 0 is the pointer

class Pointer : public Workload {
 public:
  std::string_view name() const override { return "pointer"; }
  std::span<const std::string_view> txn_types() const override { return kTypes; }
  Status Load(Database* db, uint32_t threads) override {
    // Every row 0: the pointer names counter 1 (Target) until a Move.
    return CreateU64Table(db, "pointer", kTargets + 1, 0, threads, &table_);
  }
  void InitThread(WorkerContext& ctx) override {}
  TxnOutcome RunOne(WorkerContext& ctx) override { return {}; }
  bool declares_sets() const override { return true; }

  void Generate(WorkerContext& ctx, TxnRequest* req) override {
    if (ctx.rng.Percent(30)) {
      req->Reset(kMove, false);
      req->Param(1 + ctx.rng.Uniform(kTargets));
      req->Key(table_->id(), U64Key(0).view(), true);
      return;
    }
    req->Reset(kBump, false);
    req->Param(0);
    Reconnoiter(ctx, req);
    if (stale_at_generate) {
      // Declares the next counter instead: out of date from the start.
      req->params[0] = req->params[0] % kTargets + 1;
      req->keys.pop_back();
      req->Key(table_->id(), U64Key(req->params[0]).view(), true);
    }
  }

  void Reconnoiter(WorkerContext& ctx, TxnRequest* req) override {
    if (req->type != kBump) return;
    reconnaissances.fetch_add(1);
    int64_t target = 0;
    std::unique_ptr<Transaction> txn = ctx.worker->Begin();
    Status s = GetU64(*txn, table_, 0, &target);
    txn->Abort();
    EXPECT_TRUE(s.ok()) << s.ToString();
    req->params[0] = Target(target);
    req->reconnoitred = true;
    req->keys.clear();
    req->Key(table_->id(), U64Key(0).view(), false);
    req->Key(table_->id(), U64Key(req->params[0]).view(), true);
  }

  TxnOutcome Execute(WorkerContext& ctx, const TxnRequest& req) override {
    if (req.type == kMove) {
      return RunTxn(ctx, kMove, false, [&](Transaction& txn, bool*) {
        return PutU64(txn, table_, 0, static_cast<int64_t>(req.params[0]));
      });
    }
    bool stale = false;
    TxnOutcome out = RunTxn(ctx, kBump, false, [&](Transaction& txn, bool*) -> Status {
      int64_t target = 0, v = 0;
      Status s = GetU64(txn, table_, 0, &target);
      if (!s.ok()) return s;
      stale = Target(target) != req.params[0];
      if (stale) return Status::FailedPrecondition("set changed");
      // The lock of the counter it writes was declared.
      const uint64_t want = LockHash(table_->id(), U64Key(req.params[0]).view());
      bool declared = false;
      for (const LockKey& k : req.keys) declared = declared || (k.hash == want && k.write);
      if (!declared) return Status::Internal("wrote a counter it did not declare");
      s = GetU64(txn, table_, req.params[0], &v);
      return s.ok() ? PutU64(txn, table_, req.params[0], v + 1) : s;
    });
    if (stale && out.error.code() == StatusCode::kFailedPrecondition) {
      out.error = Status::OK();
      out.set_changed = true;
      restarts_seen.fetch_add(1);
    }
    return out;
  }

  int64_t Sum(Database* db) {
    int64_t sum = 0;
    for (uint64_t k = 1; k <= kTargets; ++k) {
      std::unique_ptr<Worker> w = db->RegisterWorker();
      std::unique_ptr<Transaction> txn = w->Begin();
      int64_t v = 0;
      EXPECT_TRUE(GetU64(*txn, table_, k, &v).ok());
      txn->Abort();
      sum += v;
    }
    return sum;
  }

  static constexpr uint32_t kBump = 0, kMove = 1;
  std::atomic<uint64_t> reconnaissances{0}, restarts_seen{0};
  bool stale_at_generate = false;

 private:
  static uint64_t Target(int64_t pointer) { return pointer >= 1 ? static_cast<uint64_t>(pointer) : 1; }
  static constexpr std::string_view kTypes[] = {"Bump", "Move"};
  Table* table_ = nullptr;
};

// Calvin with two threads and short epochs, as both Calvin tests run it.
CalvinOptions TwoThreadCalvin(int outstanding_per_thread) {
  CalvinOptions o;
  o.threads = 2;
  o.epoch = std::chrono::milliseconds(2);
  o.outstanding_per_thread = outstanding_per_thread;
  return o;
}

// RunFixed on two threads of a started Calvin, stopped after.
bench::RunResult RunOnCalvin(Database* db, Workload& w, uint64_t per_thread, Calvin* calvin) {
  calvin->Start();
  bench::RunResult r = RunFixed(db, w, per_thread, 2, calvin);
  calvin->Stop();
  return r;
}

TEST(Reconnaissance, CalvinRestartsBumpsWhoseCounterMoved) {
  Pointer w;
  auto db = OpenAndLoad(w);
  Calvin calvin(TwoThreadCalvin(64), nullptr);
  bench::RunResult r = RunOnCalvin(db.get(), w, 2000, &calvin);
  EXPECT_EQ(r.commits, 4000u);
  EXPECT_GT(calvin.restarts(), 0u);
  EXPECT_EQ(calvin.restarts(), w.restarts_seen.load());
  // Counted: the measured Bumps' restarts are conflict aborts (those drained
  // at the threads' ends are not measured).
  EXPECT_GT(r.types[Pointer::kBump].conflict_aborts, 0u);
  EXPECT_LE(r.types[Pointer::kBump].conflict_aborts, calvin.restarts());
  // Every Bump that committed (measured or drained) incremented the counter
  // it declared; each restart reconnoitred again.
  EXPECT_GE(w.reconnaissances.load(), r.types[Pointer::kBump].commits + calvin.restarts());
  EXPECT_GE(static_cast<uint64_t>(w.Sum(db.get())), r.types[Pointer::kBump].commits);
}

// Two threads: a Move between a Bump's reconnaissance and its locks
// restarts it (how often depends on the interleaving).
TEST(Reconnaissance, TwoPhaseLockingKeepsBumpsOnTheirCounter) {
  Pointer w;
  auto db = OpenAndLoad(w);
  TwoPhaseLocking runner(2, {});
  bench::RunResult r = RunFixed(db.get(), w, 3000, 2, &runner);
  EXPECT_EQ(r.commits, 6000u);
  EXPECT_EQ(runner.restarts(), w.restarts_seen.load());
  EXPECT_EQ(r.conflict_aborts, runner.deaths() + runner.restarts());
  EXPECT_EQ(static_cast<uint64_t>(w.Sum(db.get())), r.types[Pointer::kBump].commits);
}

// One thread, every Bump's first set out of date: each restarts exactly
// once, with a fresh reconnaissance, and counts one conflict abort.
TEST(Reconnaissance, TwoPhaseLockingRestartsAStaleSetOnce) {
  Pointer w;
  w.stale_at_generate = true;
  auto db = OpenAndLoad(w, 1);
  TwoPhaseLocking runner(1, {});
  bench::RunResult r = RunFixed(db.get(), w, 2000, 1, &runner);
  EXPECT_EQ(r.commits, 2000u);
  const uint64_t bumps = r.types[Pointer::kBump].commits;
  EXPECT_GT(bumps, 0u);
  EXPECT_EQ(runner.restarts(), bumps);
  EXPECT_EQ(r.types[Pointer::kBump].conflict_aborts, bumps);
  EXPECT_EQ(w.reconnaissances.load(), 2 * bumps);
  EXPECT_EQ(static_cast<uint64_t>(w.Sum(db.get())), bumps);
}

TpccConfig SmallTpcc() {
  TpccConfig c;
  c.items = 1000;
  c.customers_per_district = 100;
  c.new_orders_per_district = 30;
  return c;
}

TEST(Reconnaissance, TpccOnCalvinStaysConsistent) {
  Tpcc tpcc(SmallTpcc());
  ASSERT_TRUE(tpcc.declares_sets());
  auto db = OpenAndLoad(tpcc);
  Calvin calvin(TwoThreadCalvin(256), nullptr);
  bench::RunResult r = RunOnCalvin(db.get(), tpcc, 3000, &calvin);
  EXPECT_EQ(r.commits + r.rollbacks, 6000u);
  for (uint32_t t : {kNewOrder, kPayment, kOrderStatus, kDelivery, kStockLevel}) {
    EXPECT_GT(r.types[t].commits, 0u) << t;
  }
  bench::WaitForSnapshot(db.get(), 2000);
  Status s = CheckTpccConsistency(db.get(), tpcc);
  EXPECT_TRUE(s.ok()) << s.ToString();
}

TEST(Reconnaissance, TpccOnTwoPhaseLockingStaysConsistent) {
  Tpcc tpcc(SmallTpcc());
  auto db = OpenAndLoad(tpcc);
  TwoPhaseLocking runner(2, {});
  bench::RunResult r = RunFixed(db.get(), tpcc, 3000, 2, &runner);
  EXPECT_EQ(r.commits + r.rollbacks, 6000u);
  for (uint32_t t : {kNewOrder, kPayment, kOrderStatus, kDelivery, kStockLevel}) {
    EXPECT_GT(r.types[t].commits, 0u) << t;
  }
  bench::WaitForSnapshot(db.get(), 2000);
  Status s = CheckTpccConsistency(db.get(), tpcc);
  EXPECT_TRUE(s.ok()) << s.ToString();
}

}  // namespace
}  // namespace rolis::baselines
