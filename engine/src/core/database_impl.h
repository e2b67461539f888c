// DatabaseImpl: tables, worker slots, the global epochs and their advancer.
//
// Epochs (Silo). A global epoch E advances every Options.epoch_period_ms.
// Each worker publishes, in its slot, the epoch it saw when it began its
// current transaction (and whether that transaction is read-only), or kIdle
// after Quiesce. From these the advancer derives:
//   snap_epoch    S: every read-write transaction of epoch <= S has
//                 finished installing, so S is a consistent snapshot;
//   min_snap      the oldest snapshot any reader may still use: versions
//                 older than what min_snap needs can be trimmed;
//   reclaim_epoch objects unlinked at an epoch below it are unreachable by
//                 every thread and may be freed.
// A commit reads E after locking its write set; that is its snapshot epoch.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "btree.h"
#include "clock.h"
#include "rolis/db.h"

namespace rolis::core {

inline constexpr uint64_t kIdle = ~uint64_t{0};
inline constexpr int kWorkerIdBits = 8;
inline constexpr uint32_t kMaxWorkerIds = 1u << kWorkerIdBits;
inline constexpr uint32_t kMaxTables = 1u << 16;

enum class RetiredKind : uint8_t { kRecord, kVersions, kHeapValue };

// An object unlinked at `epoch`, freed once reclaim_epoch > epoch.
struct Retired {
  void* p;
  uint64_t epoch;
  RetiredKind kind;
};

class TableImpl;

// A record that is (or may become) absent and should be unlinked from its
// table once no snapshot can need it. Holds the key, not a trusted pointer:
// the reclaimer looks the key up again, so the entry stays safe even if the
// record was reclaimed through another path.
struct AbsentEntry {
  TableImpl* table;
  Record* rec;
  uint64_t epoch;  // do not look before min_snap reaches this
  std::string key;
};

// Per worker id state read by other threads; one cache line pair each so
// workers never share a line.
struct alignas(128) WorkerSlot {
  // (epoch << 1) | read_only of the current transaction, or kIdle.
  std::atomic<uint64_t> local{kIdle};
  // Snapshot epoch of the worker's read-only transaction, or kIdle.
  std::atomic<uint64_t> snap{kIdle};
  std::atomic<bool> in_use{false};
  uint64_t last_ts = 0;  // last commit ts of this id (kept across re-registration)
  // Counters, written only by the owning worker (relaxed), summed by Stats.
  alignas(64) std::atomic<uint64_t> commits{0};
  std::atomic<uint64_t> aborts{0};
  std::atomic<int64_t> records{0};   // allocated minus freed
  std::atomic<int64_t> versions{0};  // allocated minus freed
  std::atomic<int64_t> pending{0};   // retired + absent-queued, not yet reclaimed
};

inline void Bump(std::atomic<int64_t>& c, int64_t d) {
  c.store(c.load(std::memory_order_relaxed) + d, std::memory_order_relaxed);
}
inline void Bump(std::atomic<uint64_t>& c, uint64_t d) {
  c.store(c.load(std::memory_order_relaxed) + d, std::memory_order_relaxed);
}

class TableImpl final : public Table {
 public:
  TableImpl(TableId id, std::string name) : Table(id, std::move(name)) {}
  ~TableImpl();
  BTree tree;
};

class WorkerImpl;

class DatabaseImpl final : public Database {
 public:
  explicit DatabaseImpl(const Options& options);
  ~DatabaseImpl() override;

  Status CreateTable(std::string_view name, Table** table) override;
  Status GetTable(std::string_view name, Table** table) override;
  Status GetTable(TableId id, Table** table) override;
  std::unique_ptr<Worker> RegisterWorker() override;
  Status ApplyReplicated(Worker* worker, const WriteRecord& write, uint64_t order_epoch,
                         uint64_t order_ts) override;
  Status ApplyReplicatedBatch(Worker* worker, std::span<const ReplicatedWrite> writes) override;
  void SetReplicationEpoch(uint64_t epoch) override;
  void SetReplayHorizon(uint64_t epoch, uint64_t ts) override;
  const Limits& limits() const override { return options_.limits; }
  DatabaseStats Stats() const override;

  // ---- internal ----
  const Options& options() const { return options_; }
  // The table behind a handle of this database, or null.
  TableImpl* Resolve(Table* t) const {
    TableId id = t->id();
    if (id >= kMaxTables) return nullptr;
    TableImpl* ti = tables_[id].load(std::memory_order_acquire);
    return ti == t ? ti : nullptr;
  }
  TableImpl* TableById(TableId id) const {
    return id < kMaxTables ? tables_[id].load(std::memory_order_acquire) : nullptr;
  }
  // Clock for commit timestamps: nanoseconds since Open, >= 1.
  uint64_t ClockTicks() const { return MonotonicNanos() - clock_base_; }
  bool BelowReplayHorizon(uint64_t epoch, uint64_t ts) const;
  // The checks of a replicated write that do not depend on the worker;
  // *t gets its table.
  Status CheckReplicated(const WriteRecord& write, uint64_t order_epoch, TableImpl** t) const;
  WorkerSlot& slot(WorkerId id) { return slots_[id]; }
  void ReleaseWorker(WorkerId id, std::vector<Retired> retired, std::vector<AbsentEntry> absent);
  // Moves absent entries left by destroyed workers to `out`.
  void AdoptOrphans(std::vector<AbsentEntry>* out);
  bool HasOrphans() const { return orphan_count_.load(std::memory_order_relaxed) != 0; }
  // Runs one epoch advance now (tests use it to move epochs deterministically).
  void AdvanceEpochForTest() { AdvanceOnce(); }

  // The global epochs (see the file comment), each on its own line.
  alignas(64) std::atomic<uint64_t> epoch_{2};
  alignas(64) std::atomic<uint64_t> snap_epoch_{1};
  std::atomic<uint64_t> min_snap_{1};
  std::atomic<uint64_t> reclaim_epoch_{1};

  // Follower replay may overwrite a record without keeping its old version
  // while no other worker is inside a transaction or holds a snapshot and no
  // read-only transaction began for kReadersQuietMs (ReplayMayDropOldVersions);
  // unversioned_epoch_ is the newest epoch it did so at. A read-only
  // transaction that begins below it waits until its snapshot reaches it
  // (WorkerImpl::AwaitVersionedSnapshot). Each side stores, then loads the
  // other's (seq_cst): one of the two always sees the other. Off the line
  // of epoch_, which every transaction reads.
  static constexpr uint64_t kReadersQuietMs = 1000;
  alignas(64) std::atomic<uint64_t> unversioned_epoch_{0};
  // Epoch of the newest read-only begin (0: none yet), written once per
  // epoch at most (NoteSnapshotBegin).
  std::atomic<uint64_t> last_snapshot_epoch_{0};
  void NoteSnapshotBegin(uint64_t epoch) {
    if (last_snapshot_epoch_.load(std::memory_order_relaxed) < epoch) {
      last_snapshot_epoch_.store(epoch, std::memory_order_relaxed);
    }
  }
  bool ReplayMayDropOldVersions(const WorkerSlot* replayer, uint64_t stamp);
  std::atomic<uint64_t> repl_epoch_{0};

 private:
  void AdvanceLoop();
  void AdvanceOnce();
  void FreeRetired(const Retired& r);

  Options options_;
  uint64_t clock_base_;
  uint32_t max_workers_;
  std::unique_ptr<WorkerSlot[]> slots_;
  std::unique_ptr<std::atomic<TableImpl*>[]> tables_;

  std::mutex tables_mu_;
  std::unordered_map<std::string, TableImpl*> tables_by_name_;
  uint32_t table_count_ = 0;

  std::mutex horizon_mu_;
  uint64_t horizon_epoch_ = 0, horizon_ts_ = 0;
  std::atomic<bool> has_horizon_{false};

  std::mutex advance_mu_;  // serializes AdvanceOnce
  std::mutex orphans_mu_;
  std::vector<Retired> orphan_retired_;
  std::vector<AbsentEntry> orphan_absent_;
  std::atomic<size_t> orphan_count_{0};
  std::atomic<uint64_t> orphan_records_freed_{0};
  std::atomic<uint64_t> orphan_versions_freed_{0};

  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  bool stop_ = false;
  std::thread advancer_;
};

}  // namespace rolis::core
