// TPC-A: `branches` branches of 10 tellers and `accounts_per_branch` accounts.
// One transaction type: add a delta (-99..99) to an account, its teller and
// its branch, and insert a history row. The branch is drawn zipfian
// (`zipf_theta`, DAST's conflict knob: 0 spreads the transactions over the
// branches, near 1 most hit branch 0); teller and account uniform within it.
// Check: branches, tellers and accounts each sum to the history's deltas.
#pragma once

#include <cstdint>
#include <optional>

#include "workloads/load_util.h"
#include "workloads/workload.h"
#include "workloads/zipf.h"

namespace rolis::workloads {

struct TpcaConfig {
  uint64_t branches = 100;
  uint64_t tellers_per_branch = 10;
  uint64_t accounts_per_branch = 10000;
  double zipf_theta = 0;
};

class Tpca : public Workload {
 public:
  explicit Tpca(const TpcaConfig& config) : config_(config) {}
  std::string_view name() const override { return "tpca"; }
  std::span<const std::string_view> txn_types() const override;
  Status Load(Database* db, uint32_t threads) override;
  void InitThread(WorkerContext& ctx) override;
  TxnOutcome RunOne(WorkerContext& ctx) override;
  bool declares_sets() const override { return true; }
  void Generate(WorkerContext& ctx, TxnRequest* req) override;
  TxnOutcome Execute(WorkerContext& ctx, const TxnRequest& req) override;

  // Binds the tables (created when absent) without loading them (as
  // Bank::Attach). The tables in the order Attach creates them.
  Status Attach(Database* db, std::string_view prefix = {});
  Table* branch() const { return branch_; }
  Table* teller() const { return teller_; }
  Table* account() const { return account_; }
  const TpcaConfig& config() const { return config_; }

  // kInternal unless branches, tellers and accounts each sum to the sum of
  // the history's deltas.
  Status CheckConsistency(Database* db) const;

 private:
  TpcaConfig config_;
  Table* branch_ = nullptr;
  Table* teller_ = nullptr;
  Table* account_ = nullptr;
  Table* history_ = nullptr;
  std::optional<Zipf> zipf_;
};

}  // namespace rolis::workloads
