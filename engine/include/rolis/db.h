// Public API of the storage engine: Database, Table, Worker, Transaction and the
// commit hook that replication attaches to. See docs/architecture.md.
//
// Threading model (Silo): every thread that runs transactions owns one Worker,
// obtained once from Database::RegisterWorker(). A Worker and its transactions
// are used by that thread only. Workers carry the thread-local state of the
// commit protocol (last TID, epoch-based reclamation, commit-hook order).
#pragma once

#include <cstddef>
#include <cstdint>
#include <forward_list>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rolis/status.h"

namespace rolis {

using TableId = uint32_t;
using WorkerId = uint32_t;

// Limits enforced on every call; exceeding one returns kInvalidArgument or
// kResourceExhausted and changes nothing.
struct Limits {
  size_t max_key_bytes = 1024;
  size_t max_value_bytes = 64 * 1024;
  size_t max_write_set = 100000;  // entries per transaction
  size_t max_read_set = 1000000;  // entries per transaction
  size_t max_open_txns = 1024;    // open transactions per Worker
};

// One write of a committed transaction, as handed to the commit hook and as
// replayed on followers.
struct WriteRecord {
  TableId table;
  std::string_view key;
  std::string_view value;  // empty when is_delete; the runs when is_patch
  bool is_delete = false;
  // An update written as a patch (rolis/value_patch.h) against the record's
  // previous version, whose key is (this write's replication epoch,
  // base_ts). Only with Options::patch_updates; replay applies it to a
  // record whose newest version is at or above that key (and below the
  // write's) and refuses it otherwise.
  bool is_patch = false;
  uint64_t base_ts = 0;
};

// A write to replay with its replication order (see ApplyReplicated).
struct ReplicatedWrite {
  WriteRecord write;
  uint64_t order_epoch = 0;
  uint64_t order_ts = 0;
};

// A committed transaction's writes as the commit hook sees them, in two
// forms, each built only when first asked for (during OnCommit; the views
// end with it): as records, or already in the replication log's encoding
// (rolis/txn_encoding.h, the commit ts included). The engine encodes
// straight from its write set: filling records and encoding those took
// 533 instructions per YCSB++ read-modify-write transaction, this 305
// (callgrind; docs/benchmarks.md, "The commit hook gets the transaction
// encoded").
class CommittedWrites {
 public:
  virtual size_t size() const = 0;  // writes
  virtual std::span<const WriteRecord> records() const = 0;
  virtual std::string_view encoded() const = 0;

 protected:
  ~CommittedWrites() = default;
};

// Receives every committed read-write transaction, on the committing worker's
// thread, in commit order per worker (commit_ts strictly increases per worker).
// Implementations must be fast and must not call back into the transaction.
class CommitHook {
 public:
  virtual ~CommitHook() = default;
  virtual void OnCommit(WorkerId worker, uint64_t commit_ts, const CommittedWrites& writes) = 0;
};

struct Options {
  Limits limits;
  // Period of the snapshot epoch advancer (Silo uses 40 ms). Read-only
  // transactions read the snapshot of a recent closed epoch; reclamation of
  // old versions and deleted records runs behind it.
  uint32_t epoch_period_ms = 40;
  uint32_t max_workers = 64;  // at most 256 (the worker id is the low 8 bits of a ts)
  CommitHook* commit_hook = nullptr;  // not owned; may be null
  // Ask the allocator to back memory with transparent huge pages (fewer TLB
  // misses on large data sets). Affects the whole process's allocator. Off
  // by default: every fresh 2 MiB page is zeroed in one fault, a stall of
  // ~5 ms on a VM whose host has not backed that memory yet, and TPC-C grows
  // into fresh memory all the time (docs/operations.md, "Huge pages").
  bool huge_pages = false;
  // Hand the commit hook an update as a patch (WriteRecord::is_patch) when
  // the record's previous value was written by the same worker in the same
  // replication epoch, has the same length, and the patch is at most half
  // of the value. For the replication log only: its followers replay each
  // worker's writes in order, so they hold that previous value when the
  // patch comes (docs/replication.md, "Patches").
  bool patch_updates = false;
};

class Database;
class Transaction;

// A table handle; valid for the life of the Database.
class Table {
 public:
  TableId id() const { return id_; }
  const std::string& name() const { return name_; }

 protected:
  Table(TableId id, std::string name) : id_(id), name_(std::move(name)) {}
  ~Table() = default;

 private:
  TableId id_;
  std::string name_;
};

// Per-thread context. Create with Database::RegisterWorker on the thread that
// will use it.
class Worker {
 public:
  virtual ~Worker() = default;
  virtual WorkerId id() const = 0;

  // Starts a transaction. A Worker may have several transactions open at
  // once (up to Limits.max_open_txns; past it, Begin returns a transaction
  // whose every operation fails with kResourceExhausted), each with its own
  // read and write sets; they conflict with each other as with any other
  // transaction. They are still used by one thread at a time. While one is
  // open, the epochs it began in are held back for every transaction: keep
  // transactions short.
  virtual std::unique_ptr<Transaction> Begin() = 0;
  // A read-only transaction on a consistent snapshot: never aborts, sees no
  // partial transaction, may be slightly stale (at most ~2 epoch periods).
  virtual std::unique_ptr<Transaction> BeginReadOnly() = 0;

  // Must be called from time to time by a worker with no transaction open (an
  // idle server thread), so reclamation is not held back by it.
  virtual void Quiesce() = 0;
};

// A key of a table, for calls that name several.
struct TableKey {
  Table* table;
  std::string_view key;
};

// Scan visitor: return false to stop early.
using ScanVisitor = std::function<bool(std::string_view key, std::string_view value)>;

class Transaction {
 public:
  virtual ~Transaction() = default;

  // Reads see the transaction's own writes.
  virtual Status Get(Table* table, std::string_view key, std::string* value) = 0;
  // Get without a copy into a caller's string: *value points into memory
  // owned by the transaction and stays valid until it commits or aborts.
  // (The default implementation, for other Transaction types, keeps a copy
  // of each value read this way until the transaction is destroyed.)
  virtual Status GetView(Table* table, std::string_view key, std::string_view* value) {
    std::string& buf = view_bufs_.emplace_front();
    Status s = Get(table, key, &buf);
    *value = buf;
    return s;
  }
  // A hint: the transaction is about to read or write these keys. Looks
  // them up together, so their index and record misses overlap instead of
  // being paid one after another, and remembers the records found, so the
  // Get, GetView, Put or Update of such a key that follows needs no index
  // descent. Reads nothing (no read set entry, nothing validated at commit)
  // and changes nothing; absent and invalid keys are skipped without an
  // error. Worth it for a transaction that knows several of its keys
  // before it reads the first (the default does nothing).
  virtual void Prefetch(std::span<const TableKey> keys) {}
  // Forward scan of keys in [begin, end) (end empty = unbounded), at most
  // `limit` keys (0 = no limit). The range is validated at commit (phantoms).
  virtual Status Scan(Table* table, std::string_view begin, std::string_view end, size_t limit,
                      const ScanVisitor& visit) = 0;
  // Upsert.
  virtual Status Put(Table* table, std::string_view key, std::string_view value) = 0;
  // Overwrites bytes [offset, offset + bytes.size()) of the key's value as
  // this transaction reads it and keeps the rest: a read-modify-write of a
  // field. kNotFound if the key is absent; kInvalidArgument, with nothing
  // written, if the range passes the value's end. The key counts as read
  // (validated at commit). With Options::patch_updates the commit can log
  // the update as a patch of the words it names, without comparing the
  // whole value with the one it replaces. (The default implementation, for
  // other Transaction types: Get, then Put.)
  virtual Status Update(Table* table, std::string_view key, size_t offset, std::string_view bytes);
  // Fails with kAlreadyExists if the key is present (checked again at commit).
  virtual Status Insert(Table* table, std::string_view key, std::string_view value) = 0;
  // Fails with kNotFound if absent.
  virtual Status Delete(Table* table, std::string_view key) = 0;

  // OK, or kAborted (retry the whole transaction). After Commit or Abort every
  // call returns kFailedPrecondition.
  virtual Status Commit() = 0;
  virtual void Abort() = 0;

  // Commit timestamp of a committed read-write transaction (0 otherwise).
  virtual uint64_t commit_ts() const = 0;
  virtual bool read_only() const = 0;

  // Largest commit timestamp among the record versions this transaction has
  // read so far (0 if none). A read-only transaction on the leader may use it
  // to wait, before replying, until the commit watermark passes what it read.
  virtual uint64_t max_read_ts() const { return 0; }

 protected:
  // Update's range check: OK if [offset, offset + len) lies within a value
  // of value_len bytes.
  static Status CheckUpdateRange(size_t value_len, size_t offset, size_t len) {
    return offset <= value_len && len <= value_len - offset ? Status::OK() : UpdateRangeError(value_len, offset, len);
  }

 private:
  static Status UpdateRangeError(size_t value_len, size_t offset, size_t len);
  std::forward_list<std::string> view_bufs_;  // the default GetView's copies (empty: no allocation)
};

struct DatabaseStats {
  uint64_t commits = 0;
  uint64_t aborts = 0;
  uint64_t live_records = 0;
  uint64_t live_versions = 0;      // record versions not yet reclaimed
  uint64_t pending_reclaim = 0;    // objects waiting for the epoch to pass
  uint64_t snapshot_epoch = 0;
  uint64_t current_epoch = 0;
};

class Database {
 public:
  static std::unique_ptr<Database> Open(const Options& options);
  virtual ~Database() = default;

  virtual Status CreateTable(std::string_view name, Table** table) = 0;
  // kNotFound for an unknown name.
  virtual Status GetTable(std::string_view name, Table** table) = 0;
  virtual Status GetTable(TableId id, Table** table) = 0;

  // Returns nullptr when Options.max_workers workers are registered. A
  // Worker must be destroyed before the Database, and a Transaction before
  // its Worker.
  virtual std::unique_ptr<Worker> RegisterWorker() = 0;

  // Installs a replicated write with last-writer-wins on `order` (larger
  // wins; equal is a duplicate and ignored). Used by follower replay; no OCC.
  // `order` is the replication key (epoch, ts) packed by the caller so that
  // unsigned comparison orders it.
  virtual Status ApplyReplicated(Worker* worker, const WriteRecord& write, uint64_t order_epoch,
                                 uint64_t order_ts) = 0;

  // ApplyReplicated of writes[0..n) in order, in one call: the same
  // result, write for write, as n calls (a later write of a key in the group
  // sees the earlier one). Cheaper: the worker enters the epoch once, the
  // keys are looked up as a group (their misses overlap) and a found record
  // is written without another descent. The engine's read-only snapshots see
  // all of the group's writes or none. An invalid write is skipped and the others
  // applied; the first error is returned.
  virtual Status ApplyReplicatedBatch(Worker* worker, std::span<const ReplicatedWrite> writes) {
    Status first;
    for (const ReplicatedWrite& w : writes) {
      Status s = ApplyReplicated(worker, w.write, w.order_epoch, w.order_ts);
      if (!s.ok() && first.ok()) first = std::move(s);
    }
    return first;
  }

  // The replication epoch that local commits are stamped with (default 0).
  // ApplyReplicated compares (epoch, ts) epoch first, so a leader of epoch e
  // sets e here before it opens for writes.
  virtual void SetReplicationEpoch(uint64_t epoch) {}
  // Follower replay: every replicated write with order at or below
  // (epoch, ts) has been applied on every stream, so a tombstone left by a
  // replicated delete at or below it can no longer be needed to make an
  // older, late write lose and may be reclaimed. Until it is raised,
  // replicated tombstones are kept.
  virtual void SetReplayHorizon(uint64_t epoch, uint64_t ts) {}

  virtual const Limits& limits() const = 0;
  virtual DatabaseStats Stats() const = 0;
};

}  // namespace rolis
