// TxnImpl: one transaction. Read-write transactions run Silo's optimistic
// concurrency control; read-only transactions read a consistent snapshot of
// a closed epoch from the version chains and never abort. The read, write
// and node sets (TxnSets) come from the Worker's pool and are reused.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "worker_impl.h"

namespace rolis::core {

class TxnImpl final : public Transaction {
 public:
  enum class Mode : uint8_t {
    kReadWrite,
    kReadOnly,
    kRejected,  // begun past Limits.max_open_txns: every call fails
  };
  TxnImpl(WorkerImpl* w, Mode mode);
  ~TxnImpl() override;

  // Transaction objects are recycled through a small per-thread cache: a
  // transaction per operation would otherwise cost a malloc and a free.
  static void* operator new(size_t n);
  static void operator delete(void* p);

  Status Get(Table* table, std::string_view key, std::string* value) override;
  Status GetView(Table* table, std::string_view key, std::string_view* value) override;
  void Prefetch(std::span<const TableKey> keys) override;  // txn_prefetch.cc
  Status Scan(Table* table, std::string_view begin, std::string_view end, size_t limit,
              const ScanVisitor& visit) override;
  Status Put(Table* table, std::string_view key, std::string_view value) override;
  Status Update(Table* table, std::string_view key, size_t offset, std::string_view bytes) override;
  Status Insert(Table* table, std::string_view key, std::string_view value) override;
  Status Delete(Table* table, std::string_view key) override;
  Status Commit() override;
  void Abort() override;
  uint64_t commit_ts() const override { return commit_ts_; }
  bool read_only() const override { return mode_ == Mode::kReadOnly; }
  uint64_t max_read_ts() const override { return max_read_ts_; }

  // Keeps the node set valid across this transaction's own inserts.
  struct NodeSetFixup {
    std::vector<NodeEntry>* nodes;
    void OnLeafChanged(Leaf* l, uint64_t before, uint64_t after);
    void OnLeafSplit(Leaf* l, uint64_t before, uint64_t after, Leaf* nl, uint64_t nv);
  };

 private:
  enum class State : uint8_t { kOpen, kCommitted, kAborted };
  struct Observed {
    uint64_t word;
    uint64_t ts;
    uint64_t repl_epoch;
  };

  Status NotUsable() const;
  bool usable() const { return state_ == State::kOpen && mode_ != Mode::kRejected; }
  Status CheckTableAndKey(Table* table, std::string_view key, TableImpl** t) const;
  Status CheckWrite(Table* table, std::string_view key, TableImpl** t) const;
  Status CheckValue(std::string_view value) const;
  Status ReadSetFull() const;
  Status WriteSetFull() const;
  Status SetsHaveRoom(bool with_read) const;  // OK, or the first full set's status

  template <class Sink>
  Status GetWith(Table* table, std::string_view key, Sink& sink);
  Record* FindRecent(const TableImpl* t, const KeyRef& k) const { return s_->recent.Find(t->id(), k); }
  void Remember(const TableImpl* t, const KeyRef& k, Record* r) { s_->recent.Remember(t->id(), k, r); }
  Status BadTableOrKey(Table* table, std::string_view key) const;
  WriteEntry* FindWrite(const Record* r);
  void AddRead(Record* r, const Observed& o);
  void AddNode(Leaf* leaf, uint64_t version);
  void AddWrite(const WriteEntry& e);
  // The record of k, found or inserted as a placeholder (*created) in one
  // descent; null when k is absent and the read or write set is full.
  // with_read: the caller also adds a read entry (Insert), so both sets
  // need room.
  Record* FindOrCreate(TableImpl* t, const KeyRef& k, uint32_t value_cap, bool with_read, bool* created);

  bool ValidateReads(bool holding_write_locks) const;
  bool ValidateNodes() const;
  bool InSortedWriteSet(const Record* r) const;
  void UnlockWrites(size_t n);
  Status AbortWith(const char* why);
  void Finish(State s);

  WorkerImpl* w_;
  DatabaseImpl* db_;
  const Limits* limits_;
  TxnSets* s_ = nullptr;  // from the worker's pool while open (null once finished or if rejected)
  Mode mode_;
  State state_ = State::kOpen;
  const char* rejected_why_ = nullptr;  // kRejected for another reason than max_open_txns
  bool doomed_ = false;        // a read saw its record unlinked: commit must abort
  uint64_t snap_ = 0;          // snapshot epoch (read-only)
  uint64_t repl_epoch_ = 0;    // replication epoch at begin
  uint64_t dep_ts_ = 0;        // largest ts read in this replication epoch
  uint64_t max_read_ts_ = 0;
  uint64_t commit_ts_ = 0;
};

}  // namespace rolis::core
