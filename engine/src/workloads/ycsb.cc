#include "workloads/ycsb.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "workloads/load_util.h"

namespace rolis::workloads {
namespace {

constexpr std::string_view kTypeNames[] = {"ReadOnly", "ReadModifyWrite"};

struct YcsbThread : ThreadState {};

}  // namespace

// Draws ops_per_txn distinct records (distinct when there are enough keys),
// so a read-modify-write adds exactly 1 to each of its records.
uint32_t Ycsbpp::PickRecords(Rng& rng, uint64_t (&records)[kMaxOps]) const {
  const uint32_t ops = std::min<uint32_t>(config_.ops_per_txn, kMaxOps);
  const bool distinct = config_.keys >= ops;
  for (uint32_t i = 0; i < ops; ++i) {
    bool dup;
    do {
      records[i] = zipf_ ? zipf_->Next(rng) : rng.Uniform(config_.keys);
      dup = false;
      for (uint32_t j = 0; distinct && j < i; ++j) dup |= records[j] == records[i];
    } while (dup);
  }
  return ops;
}

std::span<const std::string_view> Ycsbpp::txn_types() const { return kTypeNames; }

Status Ycsbpp::Load(Database* db, uint32_t threads) {
  if (config_.keys == 0) return Status::InvalidArgument("ycsb: keys must be > 0");
  if (!Zipf::ValidTheta(config_.zipf_theta)) return Status::InvalidArgument("ycsb: zipf theta must be in [0, 1)");
  if (config_.zipf_theta > 0) zipf_.emplace(config_.keys, config_.zipf_theta);
  Status s = db->CreateTable(config_.table_name, &table_);
  if (!s.ok()) return s;
  const uint64_t n = config_.keys;
  const uint64_t batch = std::max<uint32_t>(config_.load_batch, 1);
  return RunOnThreads(db, threads, [&](uint32_t t, Worker* worker) -> Status {
    const uint64_t begin = n * t / threads, end = n * (t + 1) / threads;
    for (uint64_t lo = begin; lo < end; lo += batch) {
      const uint64_t hi = std::min(end, lo + batch);
      Status st = CommitBatch(worker, [&](Transaction& txn) -> Status {
        char key[8];
        for (uint64_t r = lo; r < hi; ++r) {
          uint64_t v = r;  // initial value: the record number
          Status ps = txn.Put(table_, YcsbKey(r, key), std::string_view(reinterpret_cast<const char*>(&v), 8));
          if (!ps.ok()) return ps;
        }
        return Status::OK();
      });
      if (!st.ok()) return st;
    }
    return Status::OK();
  });
}

Status Ycsbpp::LoadRange(Worker* worker, uint64_t lo, uint64_t hi) {
  return CommitBatch(worker, [&](Transaction& txn) -> Status {
    char key[8];
    for (uint64_t r = lo; r < hi; ++r) {
      uint64_t v = r;  // initial value: the record number
      Status ps = txn.Put(table_, YcsbKey(r, key), std::string_view(reinterpret_cast<const char*>(&v), 8));
      if (!ps.ok()) return ps;
    }
    return Status::OK();
  });
}

void Ycsbpp::InitThread(WorkerContext& ctx) {
  ctx.state = std::make_unique<YcsbThread>();
}

TxnOutcome Ycsbpp::RunOne(WorkerContext& ctx) {
  const bool read_only = ctx.rng.Percent(config_.read_only_percent);
  uint64_t records[kMaxOps];
  const uint32_t ops = PickRecords(ctx.rng, records);
  return read_only ? ReadOnly(ctx, records, ops) : ReadModifyWrite(ctx, records, ops);
}

void Ycsbpp::Generate(WorkerContext& ctx, TxnRequest* req) {
  const bool read_only = ctx.rng.Percent(config_.read_only_percent);
  uint64_t records[kMaxOps];
  const uint32_t ops = PickRecords(ctx.rng, records);
  req->Reset(read_only ? kYcsbReadOnly : kYcsbReadModifyWrite, read_only);
  char key[8];
  for (uint32_t i = 0; i < ops; ++i) {
    req->Param(records[i]);
    req->Key(table_->id(), YcsbKey(records[i], key), !read_only);
  }
}

TxnOutcome Ycsbpp::Execute(WorkerContext& ctx, const TxnRequest& req) {
  return req.type == kYcsbReadOnly ? ReadOnly(ctx, req.params, req.nparams)
                                   : ReadModifyWrite(ctx, req.params, req.nparams);
}

void Ycsbpp::PrefetchKeys(Transaction& txn, const uint64_t* records, uint32_t ops,
                          char (&keys)[kMaxOps][8]) const {
  TableKey want[kMaxOps];
  for (uint32_t i = 0; i < ops; ++i) want[i] = {table_, YcsbKey(records[i], keys[i])};
  txn.Prefetch(std::span<const TableKey>(want, ops));
}

TxnOutcome Ycsbpp::ReadOnly(WorkerContext& ctx, const uint64_t* records, uint32_t ops) {
  return RunTxn(ctx, kYcsbReadOnly, /*read_only=*/true, [&](Transaction& txn, bool*) -> Status {
    char keys[kMaxOps][8];
    PrefetchKeys(txn, records, ops, keys);
    std::string_view value;
    for (uint32_t i = 0; i < ops; ++i) {
      Status s = txn.GetView(table_, std::string_view(keys[i], 8), &value);
      if (!s.ok()) return s;
    }
    return Status::OK();
  });
}

TxnOutcome Ycsbpp::ReadModifyWrite(WorkerContext& ctx, const uint64_t* records, uint32_t ops) {
  return RunTxn(ctx, kYcsbReadModifyWrite, /*read_only=*/false, [&](Transaction& txn, bool*) -> Status {
    char keys[kMaxOps][8];
    PrefetchKeys(txn, records, ops, keys);
    uint64_t values[kMaxOps];
    std::string_view value;
    for (uint32_t i = 0; i < ops; ++i) {
      Status s = txn.GetView(table_, std::string_view(keys[i], 8), &value);
      if (!s.ok()) return s;
      values[i] = 0;
      std::memcpy(&values[i], value.data(), std::min<size_t>(value.size(), 8));
    }
    for (uint32_t i = 0; i < ops; ++i) {
      uint64_t v = values[i] + 1;  // the new value depends on the old one
      Status s = txn.Put(table_, std::string_view(keys[i], 8), std::string_view(reinterpret_cast<const char*>(&v), 8));
      if (!s.ok()) return s;
    }
    return Status::OK();
  });
}

}  // namespace rolis::workloads
