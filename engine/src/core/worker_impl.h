// WorkerImpl: the per-thread context. Holds a pool of transaction sets
// (read, write and node sets, value arena, reused between transactions so
// the hot path does not allocate), its open transactions and the epochs it
// published for them, and its share of reclamation (retired objects, absent
// records to unlink).
#pragma once

#include <cstdint>
#include <deque>
#include <thread>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "database_impl.h"
#include "txn_sets.h"

namespace rolis::core {

class WorkerImpl final : public Worker {
 public:
  WorkerImpl(DatabaseImpl* db, WorkerId id);
  ~WorkerImpl() override;

  WorkerId id() const override { return id_; }
  std::unique_ptr<Transaction> Begin() override;
  std::unique_ptr<Transaction> BeginReadOnly() override;
  void Quiesce() override;

  // ---- internal ----
  DatabaseImpl* db() const { return db_; }
  WorkerSlot& slot() const { return *slot_; }
  // Publishes the current epoch for a replicated write about to be
  // applied (no transaction open); does this worker's reclamation when the
  // epoch has moved.
  void Enter(bool read_only) { (void)EnterEpoch(read_only); }
  void Retire(void* p, RetiredKind kind, uint64_t epoch);
  // Queues r (locked by the caller, absent) for unlinking, once.
  void QueueAbsentLocked(TableImpl* t, Record* r);
  Status ApplyReplicated(TableImpl* t, const WriteRecord& write, uint64_t order_epoch, uint64_t order_ts);
  // Database::ApplyReplicatedBatch once the worker is checked and has
  // entered the epoch (replay_batch.cc).
  Status ApplyReplicatedBatch(std::span<const ReplicatedWrite> writes);

  // Open transactions. A Worker may have several open at once (a server
  // interleaves interactive transactions on one worker); each has its own
  // sets. The worker publishes, for the epoch advancer, the oldest epoch
  // any of them began in (read-only only if all are), and for snapshot
  // trimming the oldest snapshot any of them reads. `txn` only identifies
  // the transaction. Returns its sets; *snap gets its snapshot epoch when
  // read-only.
  TxnSets* OpenTxn(const void* txn, bool read_only, uint64_t* snap);  // read-only: *snap kIdle if no snapshot
  void CloseTxn(const void* txn, TxnSets* sets);
  bool has_open_txn() const { return !open_.empty(); }
  size_t open_txns() const { return open_.size(); }

  // Scratch shared by this worker's transactions (used within one call):
  // a commit's writes as the hook asks for them (CommitView).
  std::vector<WriteRecord> hook_buf_;
  std::string encoded_buf_;
  // The commit's patches (Options::patch_updates), in write order: which
  // write each is, where its runs sit in encoded_buf_ and the ts of the
  // version they were made against. Only the patched writes have one (a
  // vector of every write, refilled per commit, was 0.1% of a TPC-C worker).
  struct PatchRef {
    uint32_t write, at, len;
    uint64_t base_ts;
  };
  std::vector<PatchRef> patch_refs_;
  std::deque<std::string> scan_bufs_;  // one per nesting level of Scan
  int scan_depth_ = 0;

 private:
  // Reclamation at an epoch change (a share of what is ready) or, with
  // `all`, of everything ready (Quiesce).
  void Maintain(bool all);
  // Frees at most `budget` retired entries whose epoch the reclaim epoch
  // has passed, oldest first.
  void FreeReady(size_t budget);
  // A share of the backlog, at least kMinFreeBudget: reclaiming an epoch's
  // retired versions at once stalled a YCSB++ transaction 1-4 ms every
  // epoch (docs/benchmarks.md, "Reclamation spread over transactions");
  // spread over the following transactions, each pays tens of microseconds
  // at most, and a backlog that grows raises the share, so reclamation keeps
  // up.
  size_t FreeBudget() const;
  static constexpr size_t kMinFreeBudget = 32;
  static constexpr size_t kFreeBudgetShare = 64;
  static constexpr size_t kFreePrefetchAhead = 8;
  void ProcessAbsent();
  // True when the entry is finished with (unlinked, or nothing to do).
  bool TryUnlinkAbsent(AbsentEntry& a, uint64_t min_snap);

  // Publishes the epoch for a transaction beginning now and returns its
  // key (epoch << 1 | read_only), keeping an older epoch that another open
  // transaction still needs.
  uint64_t EnterEpoch(bool read_only);
  // Registers and returns a snapshot epoch for a read-only transaction.
  uint64_t RegisterSnapshot();
  // A read-only transaction's snapshot must not be below an epoch at which
  // replay dropped old versions: waits (bounded) until it is not, raising
  // *snap. False if it could not (a transaction of an older epoch stays open).
  bool AwaitVersionedSnapshot(uint64_t* snap);
  // Re-publishes for the transactions still open after one closed.
  void RepublishOpen();

  struct OpenTxnEntry {
    const void* txn;
    uint64_t key;   // epoch << 1 | read_only
    uint64_t snap;  // snapshot epoch, kIdle when read-write
  };
  std::vector<OpenTxnEntry> open_;
  std::vector<std::unique_ptr<TxnSets>> sets_;  // owns every TxnSets of this worker
  std::vector<TxnSets*> free_sets_;

  DatabaseImpl* db_;
  WorkerId id_;
  WorkerSlot* slot_;
  uint64_t seen_epoch_ = 0;
  uint64_t published_ = kIdle;
  uint64_t published_snap_ = kIdle;
  std::vector<Retired> retired_;
  size_t retired_head_ = 0;
  std::vector<AbsentEntry> absent_;

  // One replicated write whose key the group lookup may already have
  // resolved (`found`: its record, or the leaf to insert it into, whose
  // version moves on when the write inserts there; null: find or insert
  // it). Stamps the version `stamp`, or with kStampAtLock the epoch read
  // once the record is locked.
  static constexpr uint64_t kStampAtLock = ~uint64_t{0};
  Status ApplyOneReplicated(TableImpl* t, const KeyRef& k, const ReplicatedWrite& rw, BTree::GroupProbe* found,
                            uint64_t stamp, uint64_t min_snap, bool keep_old = true);
  // The record under k, inserted (absent, as a placeholder of vlen value
  // bytes) when the key has none; *created tells which. Into found->leaf
  // when that leaf has not moved since found->version (no second descent).
  Record* FindOrInsertReplicated(TableImpl* t, const KeyRef& k, std::string_view key, uint32_t vlen,
                                 BTree::GroupProbe* found, bool* created);
};

// Spins until the record lock is ours; returns the word with the lock bit.
uint64_t LockRecord(Record* r);
inline void UnlockRecord(Record* r, uint64_t locked_word) {
  r->word.store(locked_word & ~tid::kLock, std::memory_order_release);
}

// Installs a new newest version of a record the caller has locked, keeping
// the old one in the version chain when a snapshot may need it, trims the
// chain, queues absent records for unlinking, and unlocks. `epoch` is the
// snapshot epoch of the commit, read after locking.
// `retire_epoch` (>= epoch) stamps what the install unlinks; it must be read
// after locking (as `epoch` is for a commit), while `epoch`, the version's
// snapshot epoch, may be older (follower replay stamps a group with one).
// `keep_old` false: no snapshot can need the old version (follower replay,
// DatabaseImpl::ReplayMayDropOldVersions). `patch` (replay of a patch that
// fits the record's value, of length `len`): its runs are written over the
// value in place, and `val` is not read.
void InstallAndUnlock(WorkerImpl* w, TableImpl* t, Record* r, bool absent, const char* val, uint32_t len,
                      uint64_t ts, uint64_t epoch, uint64_t repl_epoch, uint64_t min_snap, uint64_t retire_epoch,
                      bool keep_old = true, const std::string_view* patch = nullptr);
inline void InstallAndUnlock(WorkerImpl* w, TableImpl* t, Record* r, bool absent, const char* val, uint32_t len,
                             uint64_t ts, uint64_t epoch, uint64_t repl_epoch, uint64_t min_snap) {
  InstallAndUnlock(w, t, r, absent, val, len, ts, epoch, repl_epoch, min_snap, epoch);
}

inline void SpinPause(uint32_t* spins) {
  if (++*spins < 256) {
    CpuRelax();
  } else {
    *spins = 0;
    std::this_thread::yield();
  }
}

}  // namespace rolis::core
