// YCSB++ (the Rolis paper's variant of YCSB): one table of `keys` records with
// 8-byte keys (big-endian record number) and 8-byte values, keys chosen
// uniformly. Half of the transactions are read-only (4 gets on a snapshot),
// half read-modify-write (4 keys: get each, then put a new 8-byte value, the
// old one plus 1). The 4 keys of a transaction are distinct. zipf_theta > 0
// draws them zipfian instead (zipf.h; the Rolis paper's skewed run).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "workloads/load_util.h"
#include "workloads/workload.h"
#include "workloads/zipf.h"

namespace rolis::workloads {

struct YcsbConfig {
  uint64_t keys = 1000000;
  uint32_t ops_per_txn = 4;  // at most 16; distinct keys within a transaction
  uint32_t read_only_percent = 50;
  uint32_t load_batch = 1000;  // keys per loading transaction
  double zipf_theta = 0;       // 0: uniform; 0 < theta < 1: zipfian (zipf.h)
  const char* table_name = "ycsb";
};

enum YcsbTxnType : uint32_t { kYcsbReadOnly = 0, kYcsbReadModifyWrite = 1 };

inline std::string_view YcsbKey(uint64_t record, char (&buf)[8]) {
  StoreBigEndian64(buf, record);
  return {buf, 8};
}

class Ycsbpp : public Workload {
 public:
  explicit Ycsbpp(const YcsbConfig& config) : config_(config) {}

  std::string_view name() const override { return "ycsbpp"; }
  std::span<const std::string_view> txn_types() const override;
  Status Load(Database* db, uint32_t threads) override;
  void InitThread(WorkerContext& ctx) override;
  TxnOutcome RunOne(WorkerContext& ctx) override;
  bool declares_sets() const override { return true; }
  void Generate(WorkerContext& ctx, TxnRequest* req) override;
  TxnOutcome Execute(WorkerContext& ctx, const TxnRequest& req) override;

  const YcsbConfig& config() const { return config_; }
  // Binds the table (created when absent) without loading it (as Bank::Attach).
  Status Attach(Database* db, std::string_view prefix = {}) {
    return CreateOrGetTable(db, TableName(prefix, config_.table_name), &table_);
  }
  // Loads records [lo, hi) in one transaction on `worker` (a part of a load
  // that a server runs as procedures).
  Status LoadRange(Worker* worker, uint64_t lo, uint64_t hi);
  Table* table() const { return table_; }

 private:
  static constexpr uint32_t kMaxOps = 16;
  uint32_t PickRecords(Rng& rng, uint64_t (&records)[kMaxOps]) const;
  // The keys of records[0..ops), one per row of `keys`, looked up together
  // (Transaction::Prefetch): a transaction knows them all before its first read.
  void PrefetchKeys(Transaction& txn, const uint64_t* records, uint32_t ops, char (&keys)[kMaxOps][8]) const;
  TxnOutcome ReadOnly(WorkerContext& ctx, const uint64_t* records, uint32_t ops);
  TxnOutcome ReadModifyWrite(WorkerContext& ctx, const uint64_t* records, uint32_t ops);

  YcsbConfig config_;
  std::optional<Zipf> zipf_;  // made by Load when zipf_theta > 0
  Table* table_ = nullptr;
};

}  // namespace rolis::workloads
