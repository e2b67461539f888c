// Retwis as TAPIR ran it: one table of `keys` 8-byte values, keys drawn
// zipfian (theta 0.75) and distinct within a transaction.
//   add-user      5%   1 get, 3 puts
//   follow       15%   2 gets, 2 puts
//   post-tweet   30%   3 gets, 5 puts
//   get-timeline 50%   1..10 gets, read-only
// On average 4 gets and 2 puts per transaction. A put writes the key's value
// plus 1 (gets come first; a put's key is one of the gets' when there is one).
#pragma once

#include <cstdint>
#include <optional>

#include "workloads/load_util.h"
#include "workloads/workload.h"
#include "workloads/zipf.h"

namespace rolis::workloads {

struct RetwisConfig {
  uint64_t keys = 1000000;
  double zipf_theta = 0.75;
};

enum RetwisTxnType : uint32_t { kRetwisAddUser = 0, kRetwisFollow = 1, kRetwisPostTweet = 2, kRetwisGetTimeline = 3 };

class Retwis : public Workload {
 public:
  explicit Retwis(const RetwisConfig& config) : config_(config) {}
  std::string_view name() const override { return "retwis"; }
  std::span<const std::string_view> txn_types() const override;
  Status Load(Database* db, uint32_t threads) override;
  void InitThread(WorkerContext& ctx) override;
  TxnOutcome RunOne(WorkerContext& ctx) override;
  bool declares_sets() const override { return true; }
  void Generate(WorkerContext& ctx, TxnRequest* req) override;
  TxnOutcome Execute(WorkerContext& ctx, const TxnRequest& req) override;

  // Binds the table (created when absent) without loading it (as Bank::Attach).
  Status Attach(Database* db, std::string_view prefix = {}) {
    return CreateOrGetTable(db, TableName(prefix, "retwis"), &table_);
  }
  Table* table() const { return table_; }
  const RetwisConfig& config() const { return config_; }

  // Gets and puts of a transaction of `type` with `timeline_gets` for get-timeline.
  static uint32_t Gets(uint32_t type, uint32_t timeline_gets);
  static uint32_t Puts(uint32_t type);

 private:
  RetwisConfig config_;
  Table* table_ = nullptr;
  std::optional<Zipf> zipf_;
};

}  // namespace rolis::workloads
