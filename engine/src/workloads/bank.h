// Paxos STM's bank: `accounts` accounts of `initial` each. A read-write
// transaction moves 1..10 from one account to another (when the first holds
// it); a read-only one audits every account and fails the run (kInternal)
// when the total is not accounts * initial: the bank total check of every
// mode (docs/benchmarks.md, "Suite").
#pragma once

#include <cstdint>

#include "workloads/load_util.h"
#include "workloads/workload.h"

namespace rolis::workloads {

struct BankConfig {
  uint64_t accounts = 10000;
  int64_t initial = 1000;
  uint32_t read_only_percent = 50;  // --mix=90/10: 90
};

enum BankTxnType : uint32_t { kBankAudit = 0, kBankTransfer = 1 };

class Bank : public Workload {
 public:
  explicit Bank(const BankConfig& config) : config_(config) {}
  std::string_view name() const override { return "bank"; }
  std::span<const std::string_view> txn_types() const override;
  Status Load(Database* db, uint32_t threads) override;
  void InitThread(WorkerContext& ctx) override;
  TxnOutcome RunOne(WorkerContext& ctx) override;
  bool declares_sets() const override { return true; }
  void Generate(WorkerContext& ctx, TxnRequest* req) override;
  TxnOutcome Execute(WorkerContext& ctx, const TxnRequest& req) override;

  // Binds the table (created when absent) without loading it: a server that
  // loads and runs the workload as procedures (server/procedures.h). Its name
  // is `prefix` followed by the workload's (a server keeps its benchmark
  // tables apart from user tables this way).
  Status Attach(Database* db, std::string_view prefix = {}) {
    return CreateOrGetTable(db, TableName(prefix, "bank"), &table_);
  }
  Table* table() const { return table_; }
  const BankConfig& config() const { return config_; }

  // kInternal unless the accounts sum to accounts * initial (after a run).
  Status CheckTotal(Database* db) const;
  int64_t expected_total() const { return static_cast<int64_t>(config_.accounts) * config_.initial; }

 private:
  BankConfig config_;
  Table* table_ = nullptr;
};

}  // namespace rolis::workloads
