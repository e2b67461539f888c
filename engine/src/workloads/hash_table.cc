#include "workloads/hash_table.h"

#include <algorithm>

#include "workloads/u64_table.h"

namespace rolis::workloads {
namespace {

constexpr std::string_view kTypeNames[] = {"Gets", "GetsAndPuts"};

struct HashThread : ThreadState {
  TxnRequest req;
};

}  // namespace

std::span<const std::string_view> HashTable::txn_types() const { return kTypeNames; }

Status HashTable::Load(Database* db, uint32_t threads) {
  if (config_.read_only_gets > TxnRequest::kMaxParams * 8 || config_.read_write_gets > TxnRequest::kMaxParams ||
      config_.read_write_puts > config_.read_write_gets) {
    return Status::InvalidArgument("hash: too many gets or puts per transaction");
  }
  if (config_.elements < std::max(config_.read_only_gets, config_.read_write_gets)) {
    return Status::InvalidArgument("hash: fewer elements than gets per transaction");
  }
  return CreateU64Table(db, "hash", config_.elements, 0, threads, &table_);
}

void HashTable::InitThread(WorkerContext& ctx) { ctx.state = std::make_unique<HashThread>(); }

TxnOutcome HashTable::RunOne(WorkerContext& ctx) {
  return GenerateAndExecute(*this, ctx, &static_cast<HashThread*>(ctx.state.get())->req);
}

// A read-only transaction's 100 elements are consecutive from a random first
// one (wrapping), so its inputs are one number; a read-write one's are drawn
// distinct.
void HashTable::Generate(WorkerContext& ctx, TxnRequest* req) {
  if (ctx.rng.Percent(config_.read_only_percent)) {
    req->Reset(kHashGets, /*ro=*/true);
    const uint64_t first = ctx.rng.Uniform(config_.elements);
    req->Param(first);
    for (uint32_t i = 0; i < config_.read_only_gets; ++i) {
      req->Key(table_->id(), U64Key((first + i) % config_.elements).view(), false);
    }
    return;
  }
  uint64_t picks[TxnRequest::kMaxParams];
  DrawDistinct(config_.read_write_gets, picks, [&] { return ctx.rng.Uniform(config_.elements); });
  req->Reset(kHashGetsAndPuts, /*ro=*/false);
  for (uint32_t i = 0; i < config_.read_write_gets; ++i) {
    req->Param(picks[i]);
    req->Key(table_->id(), U64Key(picks[i]).view(), i < config_.read_write_puts);
  }
}

TxnOutcome HashTable::Execute(WorkerContext& ctx, const TxnRequest& req) {
  if (req.type == kHashGets) {
    const uint64_t first = req.params[0];
    return RunTxn(ctx, kHashGets, /*read_only=*/true, [&](Transaction& txn, bool*) -> Status {
      for (uint32_t i = 0; i < config_.read_only_gets; ++i) {
        int64_t v = 0;
        Status s = GetU64(txn, table_, (first + i) % config_.elements, &v);
        if (!s.ok()) return s;
      }
      return Status::OK();
    });
  }
  return RunTxn(ctx, kHashGetsAndPuts, /*read_only=*/false, [&](Transaction& txn, bool*) -> Status {
    int64_t values[TxnRequest::kMaxParams];
    for (uint32_t i = 0; i < req.nparams; ++i) {
      Status s = GetU64(txn, table_, req.params[i], &values[i]);
      if (!s.ok()) return s;
    }
    for (uint32_t i = 0; i < config_.read_write_puts; ++i) {
      Status s = PutU64(txn, table_, req.params[i], values[i] + 1);
      if (!s.ok()) return s;
    }
    return Status::OK();
  });
}

}  // namespace rolis::workloads
