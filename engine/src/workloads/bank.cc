#include "workloads/bank.h"

#include <string>

#include "workloads/u64_table.h"

namespace rolis::workloads {
namespace {

constexpr std::string_view kTypeNames[] = {"Audit", "Transfer"};

struct BankThread : ThreadState {
  TxnRequest req;
};

}  // namespace

std::span<const std::string_view> Bank::txn_types() const { return kTypeNames; }

Status Bank::Load(Database* db, uint32_t threads) {
  if (config_.accounts < 2) return Status::InvalidArgument("bank: want at least 2 accounts");
  return CreateU64Table(db, "bank", config_.accounts, config_.initial, threads, &table_);
}

void Bank::InitThread(WorkerContext& ctx) { ctx.state = std::make_unique<BankThread>(); }

TxnOutcome Bank::RunOne(WorkerContext& ctx) {
  return GenerateAndExecute(*this, ctx, &static_cast<BankThread*>(ctx.state.get())->req);
}

void Bank::Generate(WorkerContext& ctx, TxnRequest* req) {
  if (ctx.rng.Percent(config_.read_only_percent)) {
    req->Reset(kBankAudit, /*ro=*/true);
    for (uint64_t a = 0; a < config_.accounts; ++a) req->Key(table_->id(), U64Key(a).view(), false);
    return;
  }
  uint64_t ab[2];
  DrawDistinct(2, ab, [&] { return ctx.rng.Uniform(config_.accounts); });
  req->Reset(kBankTransfer, /*ro=*/false);
  req->Param(ab[0]);
  req->Param(ab[1]);
  req->Param(1 + ctx.rng.Uniform(10));
  req->Key(table_->id(), U64Key(ab[0]).view(), true);
  req->Key(table_->id(), U64Key(ab[1]).view(), true);
}

TxnOutcome Bank::Execute(WorkerContext& ctx, const TxnRequest& req) {
  if (req.type == kBankAudit) {
    TxnOutcome out = RunTxn(ctx, kBankAudit, /*read_only=*/true, [&](Transaction& txn, bool*) -> Status {
      int64_t sum = 0;
      for (uint64_t a = 0; a < config_.accounts; ++a) {
        int64_t v = 0;
        Status s = GetU64(txn, table_, a, &v);
        if (!s.ok()) return s;
        sum += v;
      }
      if (sum != expected_total()) {
        return Status::Internal("bank audit: the accounts sum to " + std::to_string(sum) + ", want " +
                                std::to_string(expected_total()));
      }
      return Status::OK();
    });
    return out;
  }
  const uint64_t from = req.params[0], to = req.params[1];
  const int64_t amount = static_cast<int64_t>(req.params[2]);
  return RunTxn(ctx, kBankTransfer, /*read_only=*/false, [&](Transaction& txn, bool*) -> Status {
    int64_t a = 0, b = 0;
    Status s = GetU64(txn, table_, from, &a);
    if (s.ok()) s = GetU64(txn, table_, to, &b);
    if (!s.ok()) return s;
    // Insufficient funds move nothing, but still write (every read-write
    // transaction has writes to replicate).
    const int64_t moved = a < amount ? 0 : amount;
    s = PutU64(txn, table_, from, a - moved);
    if (s.ok()) s = PutU64(txn, table_, to, b + moved);
    return s;
  });
}

Status Bank::CheckTotal(Database* db) const {
  int64_t sum = 0;
  Status s = SumU64Table(db, table_, config_.accounts, &sum);
  if (!s.ok()) return s;
  if (sum != expected_total()) {
    return Status::Internal("bank: the accounts sum to " + std::to_string(sum) + ", want " +
                            std::to_string(expected_total()));
  }
  return Status::OK();
}

}  // namespace rolis::workloads
