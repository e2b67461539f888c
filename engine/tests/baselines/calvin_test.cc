// Calvin: every transaction runs once, after its batch is replicated, and
// conflicting transactions run in batch order. A workload of increments on
// 3 counters, each transaction tagged with a unique id: the order the
// increments of a counter ran in is the order their ids appear in the
// replicated batches.
#include "baselines/calvin.h"

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <mutex>
#include <vector>

#include "../workloads/small_workload_run.h"
#include "workloads/bank.h"
#include "workloads/u64_table.h"

namespace rolis::baselines {
namespace {

using namespace rolis::workloads;  // NOLINT

constexpr uint64_t kCounters = 3;

struct Tagged : ThreadState {
  uint64_t next = 0;
};

class Counters : public Workload {
 public:
  std::string_view name() const override { return "counters"; }
  std::span<const std::string_view> txn_types() const override { return kTypes; }
  Status Load(Database* db, uint32_t threads) override {
    return CreateU64Table(db, "counters", kCounters, 0, threads, &table_);
  }
  void InitThread(WorkerContext& ctx) override { ctx.state = std::make_unique<Tagged>(); }
  TxnOutcome RunOne(WorkerContext& ctx) override { return {}; }
  bool declares_sets() const override { return true; }
  void Generate(WorkerContext& ctx, TxnRequest* req) override {
    auto* st = static_cast<Tagged*>(ctx.state.get());
    req->Reset(0, false);
    const uint64_t counter = ctx.rng.Uniform(kCounters);
    req->Param(counter);
    req->Param(uint64_t{ctx.index} << 32 | st->next++);
    req->Key(table_->id(), U64Key(counter).view(), true);
  }
  TxnOutcome Execute(WorkerContext& ctx, const TxnRequest& req) override {
    {
      std::lock_guard<std::mutex> g(mu);
      ran[req.params[0]].push_back(req.params[1]);
    }
    return RunTxn(ctx, 0, false, [&](Transaction& txn, bool*) -> Status {
      int64_t v = 0;
      Status s = GetU64(txn, table_, req.params[0], &v);
      return s.ok() ? PutU64(txn, table_, req.params[0], v + 1) : s;
    });
  }

  std::mutex mu;
  std::map<uint64_t, std::vector<uint64_t>> ran;  // counter -> ids in execution order

 private:
  static constexpr std::string_view kTypes[] = {"Increment"};
  Table* table_ = nullptr;
};

TEST(Calvin, ConflictingTransactionsRunInBatchOrder) {
  Counters w;
  auto db = OpenAndLoad(w);
  std::mutex mu;
  std::map<uint64_t, std::vector<uint64_t>> batched;  // counter -> ids in batch order
  uint64_t batches = 0, last_epoch = 0;
  bool epochs_grow = true;
  CalvinOptions o;
  o.threads = 2;
  o.epoch = std::chrono::milliseconds(2);
  o.outstanding_per_thread = 64;
  Calvin calvin(o, [&](uint64_t epoch, std::string_view batch) -> Status {
    std::lock_guard<std::mutex> g(mu);
    epochs_grow = epochs_grow && epoch > last_epoch;
    last_epoch = epoch;
    ++batches;
    for (size_t off = 0; off < batch.size();) {  // type, nparams, nkeys, params (no keys: not reconnoitred)
      uint32_t head[3];
      std::memcpy(head, batch.data() + off, 12);
      EXPECT_EQ(head[2], 0u);
      uint64_t params[2];
      std::memcpy(params, batch.data() + off + 12, 16);
      batched[params[0]].push_back(params[1]);
      off += 12 + 8 * head[1];
    }
    return Status::OK();
  });
  calvin.Start();
  bench::RunResult r = RunFixed(db.get(), w, 2000, 2, &calvin);
  calvin.Stop();
  EXPECT_EQ(r.commits, 4000u);
  EXPECT_GT(batches, 2u);
  EXPECT_TRUE(epochs_grow);
  uint64_t ran = 0;
  for (uint64_t c = 0; c < kCounters; ++c) {
    EXPECT_EQ(w.ran[c], batched[c]) << "counter " << c;
    ran += w.ran[c].size();
  }
  // Submitted ahead, then drained at each thread's end: all that was
  // batched ran, the 4000 counted and the rest.
  EXPECT_GE(ran, 4000u);
  int64_t sum = 0;
  Table* table = nullptr;
  ASSERT_TRUE(db->GetTable("counters", &table).ok());
  ASSERT_TRUE(SumU64Table(db.get(), table, kCounters, &sum).ok());
  EXPECT_EQ(static_cast<uint64_t>(sum), ran);
}

TEST(Calvin, BankAuditsSeeTheTotal) {
  BankConfig c;
  c.accounts = 100;
  c.read_only_percent = 20;
  Bank bank(c);
  auto db = OpenAndLoad(bank);
  CalvinOptions o;
  o.threads = 2;
  o.epoch = std::chrono::milliseconds(2);
  Calvin calvin(o, nullptr);
  calvin.Start();
  bench::RunResult r = RunFixed(db.get(), bank, 1000, 2, &calvin);
  calvin.Stop();
  EXPECT_EQ(r.commits, 2000u);
  EXPECT_GT(r.types[kBankAudit].commits, 100u);
  Status s = bank.CheckTotal(db.get());
  EXPECT_TRUE(s.ok()) << s.ToString();
}

}  // namespace
}  // namespace rolis::baselines
