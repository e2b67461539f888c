#include "workloads/tpca.h"

#include <cstring>
#include <string>

#include "workloads/u64_table.h"

namespace rolis::workloads {
namespace {

constexpr std::string_view kTypeNames[] = {"Deposit"};

struct TpcaThread : ThreadState {
  TxnRequest req;
  uint64_t next_history = 0;
};

// History rows: (thread, sequence), unique without coordination.
uint64_t HistoryRecord(uint64_t thread, uint64_t seq) { return thread << 40 | seq; }

}  // namespace

std::span<const std::string_view> Tpca::txn_types() const { return kTypeNames; }

Status Tpca::Load(Database* db, uint32_t threads) {
  if (!Zipf::ValidTheta(config_.zipf_theta)) return Status::InvalidArgument("tpca: zipf theta must be in [0, 1)");
  if (config_.branches == 0 || config_.tellers_per_branch == 0 || config_.accounts_per_branch == 0) {
    return Status::InvalidArgument("tpca: want at least one branch, teller and account");
  }
  zipf_.emplace(config_.branches, config_.zipf_theta);
  Status s = CreateU64Table(db, "tpca_branch", config_.branches, 0, threads, &branch_);
  if (s.ok()) s = CreateU64Table(db, "tpca_teller", config_.branches * config_.tellers_per_branch, 0, threads, &teller_);
  if (s.ok()) s = CreateU64Table(db, "tpca_account", config_.branches * config_.accounts_per_branch, 0, threads, &account_);
  if (s.ok()) s = db->CreateTable("tpca_history", &history_);
  return s;
}

Status Tpca::Attach(Database* db, std::string_view prefix) {
  Status s = CreateOrGetTable(db, TableName(prefix, "tpca_branch"), &branch_);
  if (s.ok()) s = CreateOrGetTable(db, TableName(prefix, "tpca_teller"), &teller_);
  if (s.ok()) s = CreateOrGetTable(db, TableName(prefix, "tpca_account"), &account_);
  if (s.ok()) s = CreateOrGetTable(db, TableName(prefix, "tpca_history"), &history_);
  return s;
}

void Tpca::InitThread(WorkerContext& ctx) { ctx.state = std::make_unique<TpcaThread>(); }

TxnOutcome Tpca::RunOne(WorkerContext& ctx) {
  return GenerateAndExecute(*this, ctx, &static_cast<TpcaThread*>(ctx.state.get())->req);
}

void Tpca::Generate(WorkerContext& ctx, TxnRequest* req) {
  auto* st = static_cast<TpcaThread*>(ctx.state.get());
  const uint64_t b = zipf_->Next(ctx.rng);
  const uint64_t t = b * config_.tellers_per_branch + ctx.rng.Uniform(config_.tellers_per_branch);
  const uint64_t a = b * config_.accounts_per_branch + ctx.rng.Uniform(config_.accounts_per_branch);
  const uint64_t h = HistoryRecord(ctx.index, st->next_history++);
  req->Reset(0, /*ro=*/false);
  req->Param(b);
  req->Param(t);
  req->Param(a);
  req->Param(h);
  req->Param(static_cast<uint64_t>(ctx.rng.UniformInt(-99, 99)));
  req->Key(branch_->id(), U64Key(b).view(), true);
  req->Key(teller_->id(), U64Key(t).view(), true);
  req->Key(account_->id(), U64Key(a).view(), true);
  req->Key(history_->id(), U64Key(h).view(), true);
}

TxnOutcome Tpca::Execute(WorkerContext& ctx, const TxnRequest& req) {
  const int64_t delta = static_cast<int64_t>(req.params[4]);
  return RunTxn(ctx, 0, /*read_only=*/false, [&](Transaction& txn, bool*) -> Status {
    Table* tables[3] = {branch_, teller_, account_};
    for (int i = 0; i < 3; ++i) {
      int64_t v = 0;
      Status s = GetU64(txn, tables[i], req.params[i], &v);
      if (s.ok()) s = PutU64(txn, tables[i], req.params[i], v + delta);
      if (!s.ok()) return s;
    }
    return PutU64(txn, history_, req.params[3], delta);
  });
}

// One read-only transaction: every table as of the same snapshot (the caller
// waits for the snapshot to cover the run: bench::WaitForSnapshot).
Status Tpca::CheckConsistency(Database* db) const {
  std::unique_ptr<Worker> worker = db->RegisterWorker();
  if (!worker) return Status::ResourceExhausted("RegisterWorker failed");
  std::unique_ptr<Transaction> txn = worker->BeginReadOnly();
  int64_t history = 0;
  Status s = txn->Scan(history_, std::string_view(), std::string_view(), SIZE_MAX,
                       [&](std::string_view, std::string_view v) {
                         int64_t d = 0;
                         std::memcpy(&d, v.data(), v.size() < 8 ? v.size() : 8);
                         history += d;
                         return true;
                       });
  const struct {
    const char* name;
    Table* table;
    uint64_t n;
  } sums[] = {{"branches", branch_, config_.branches},
              {"tellers", teller_, config_.branches * config_.tellers_per_branch},
              {"accounts", account_, config_.branches * config_.accounts_per_branch}};
  for (const auto& each : sums) {
    int64_t sum = 0;
    for (uint64_t r = 0; r < each.n && s.ok(); ++r) {
      int64_t v = 0;
      s = GetU64(*txn, each.table, r, &v);
      sum += v;
    }
    if (s.ok() && sum != history) {
      s = Status::Internal("tpca: the " + std::string(each.name) + " sum to " + std::to_string(sum) +
                           ", the history to " + std::to_string(history));
    }
  }
  txn->Abort();
  return s;
}

}  // namespace rolis::workloads
