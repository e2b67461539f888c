// WorkerImpl: the per-thread context. Holds the state of the one open
// transaction (read, write and node sets, value arena, reused between
// transactions so the hot path does not allocate), the epoch it published,
// and its share of reclamation (retired objects, absent records to unlink).
#pragma once

#include <cstdint>
#include <deque>
#include <thread>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "database_impl.h"

namespace rolis::core {

struct ReadEntry {
  Record* rec;
  uint64_t word;  // TID word observed (never locked)
};

enum class WriteKind : uint8_t { kPut, kDelete };

struct WriteEntry {
  Record* rec;
  TableImpl* table;
  const char* val;  // in the worker's arena
  uint32_t len;
  WriteKind kind;
  bool created;  // this transaction inserted the placeholder record
};

struct NodeEntry {
  Leaf* leaf;
  uint64_t version;
};

// Bump allocator for the values of a transaction's writes; reset per
// transaction, blocks kept.
class Arena {
 public:
  const char* Copy(std::string_view s);
  void Reset();

 private:
  static constexpr size_t kBlock = 64 * 1024;
  std::vector<std::unique_ptr<char[]>> blocks_;
  size_t block_ = 0, used_ = 0;
  std::vector<std::unique_ptr<char[]>> big_;
};

// Open-addressing index Record* -> write-set position, used once a write set
// outgrows a linear search.
class WriteIndex {
 public:
  static constexpr size_t kLinearLimit = 16;
  void Clear();
  void Add(const Record* r, uint32_t pos, const std::vector<WriteEntry>& writes);
  int Find(const Record* r, const std::vector<WriteEntry>& writes) const;  // -1 if absent

 private:
  void Rebuild(const std::vector<WriteEntry>& writes);
  std::vector<uint32_t> slots_;  // pos + 1, 0 = empty
  size_t used_ = 0;
  bool built_ = false;
};

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
  // Publishes the current epoch for a transaction (or replay) about to run;
  // does this worker's reclamation when the epoch has moved.
  void Enter(bool read_only);
  // Registers and returns a snapshot epoch for a read-only transaction.
  uint64_t RegisterSnapshot();
  void Retire(void* p, RetiredKind kind, uint64_t epoch);
  // Queues r (locked by the caller, absent) for unlinking, once.
  void QueueAbsentLocked(TableImpl* t, Record* r);
  Status ApplyReplicated(TableImpl* t, const WriteRecord& write, uint64_t order_epoch, uint64_t order_ts);

  // Transaction state.
  bool txn_open_ = false;
  std::vector<ReadEntry> reads_;
  std::vector<WriteEntry> writes_;
  std::vector<NodeEntry> nodes_;
  WriteIndex windex_;
  Arena arena_;
  std::vector<WriteRecord> hook_buf_;
  std::deque<std::string> scan_bufs_;  // one per nesting level of Scan
  int scan_depth_ = 0;

 private:
  void Maintain();
  void FreeReady();
  void ProcessAbsent();
  // True when the entry is finished with (unlinked, or nothing to do).
  bool TryUnlinkAbsent(AbsentEntry& a, uint64_t min_snap);

  DatabaseImpl* db_;
  WorkerId id_;
  WorkerSlot* slot_;
  uint64_t seen_epoch_ = 0;
  uint64_t published_ = kIdle;
  uint64_t published_snap_ = kIdle;
  std::vector<Retired> retired_;
  size_t retired_head_ = 0;
  std::vector<AbsentEntry> absent_;
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
void InstallAndUnlock(WorkerImpl* w, TableImpl* t, Record* r, bool absent, const char* val, uint32_t len,
                      uint64_t ts, uint64_t epoch, uint64_t repl_epoch, uint64_t min_snap);

inline void SpinPause(uint32_t* spins) {
  if (++*spins < 256) {
    CpuRelax();
  } else {
    *spins = 0;
    std::this_thread::yield();
  }
}

}  // namespace rolis::core
