// Paxos STM's hash table: `elements` 8-byte values. A read-only transaction
// gets 100 elements; a read-write one gets 8 and puts 2 of them (each plus 1).
#pragma once

#include <cstdint>

#include "workloads/load_util.h"
#include "workloads/workload.h"

namespace rolis::workloads {

struct HashTableConfig {
  uint64_t elements = 10000;
  uint32_t read_only_percent = 50;  // --mix=90/10: 90
  uint32_t read_only_gets = 100;
  uint32_t read_write_gets = 8;  // of which the first read_write_puts are written
  uint32_t read_write_puts = 2;
};

enum HashTableTxnType : uint32_t { kHashGets = 0, kHashGetsAndPuts = 1 };

class HashTable : public Workload {
 public:
  explicit HashTable(const HashTableConfig& config) : config_(config) {}
  std::string_view name() const override { return "hash"; }
  std::span<const std::string_view> txn_types() const override;
  Status Load(Database* db, uint32_t threads) override;
  void InitThread(WorkerContext& ctx) override;
  TxnOutcome RunOne(WorkerContext& ctx) override;
  bool declares_sets() const override { return true; }
  void Generate(WorkerContext& ctx, TxnRequest* req) override;
  TxnOutcome Execute(WorkerContext& ctx, const TxnRequest& req) override;

  Table* table() const { return table_; }
  const HashTableConfig& config() const { return config_; }
  // Binds the table (created when absent) without loading it (as Bank::Attach).
  Status Attach(Database* db, std::string_view prefix = {}) {
    return CreateOrGetTable(db, TableName(prefix, "hash"), &table_);
  }

 private:
  HashTableConfig config_;
  Table* table_ = nullptr;
};

}  // namespace rolis::workloads
