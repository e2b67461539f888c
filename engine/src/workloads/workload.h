// The driver interface shared by every workload (YCSB++, TPC-C) and the retry
// loop they run their transactions in.
//
// A driver (rolis-bench, a test) does:
//   auto w = MakeWorkload(...);
//   w->Load(db, threads);                       // creates tables, loads data
//   // then on each of `threads` threads, with its own Worker:
//   WorkerContext ctx(worker.get(), i, threads, seed);
//   w->InitThread(ctx);
//   while (running) { TxnOutcome o = w->RunOne(ctx); ... }
//
// RunOne runs one logical transaction to its end: it retries conflict aborts
// (kAborted) itself, with randomized exponential backoff, and reports how many
// there were. Workload code allocates nothing per transaction: buffers live in
// the per-thread state that InitThread creates.
#pragma once

#include <immintrin.h>

#include <bit>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rolis/db.h"
#include "rolis/status.h"
#include "workloads/rng.h"

namespace rolis::workloads {

// Workload-specific per-thread state (buffers, hints). Owned by WorkerContext.
class ThreadState {
 public:
  virtual ~ThreadState() = default;
};

// Everything a worker thread carries between transactions.
struct WorkerContext {
  WorkerContext(Worker* w, uint32_t thread_index, uint32_t thread_count, uint64_t seed)
      : worker(w), index(thread_index), threads(thread_count), rng(seed * 0x100000001b3ULL + thread_index) {}

  Worker* worker;    // not owned; registered on this thread
  uint32_t index;    // 0 .. threads-1
  uint32_t threads;  // number of worker threads of the run
  Rng rng;
  std::unique_ptr<ThreadState> state;  // set by Workload::InitThread
  // false: read-only transactions run as read-write ones that write nothing,
  // reading the newest versions and validated at commit, instead of on the
  // snapshot (which lags by up to an epoch): rolisd's procedures, whose
  // one-shot transactions are linearizable (docs/client.md, "Procedures").
  bool snapshot_reads = true;
};

// The result of one logical transaction, after its retries.
struct TxnOutcome {
  uint32_t type = 0;             // index into Workload::txn_types()
  bool committed = false;        // false with ok error: rolled back by the application
  uint32_t conflict_aborts = 0;  // attempts that ended in kAborted before the outcome
  Status error;                  // non-OK: a non-retryable failure (a bug or a limit)
  uint64_t commit_ts = 0;        // committed read-write transaction: its commit ts
  // When non-zero: the driver's clock (ticks) when the transaction was
  // submitted, for a runner that queues it (Calvin); its latency starts there.
  uint64_t submitted_at = 0;
  // Declared transactions (below): the execution found that the set its
  // reconnaissance computed no longer covers what it would touch, and rolled
  // back; the runner reconnoitres again (Workload::Reconnoiter) and
  // resubmits it, counting a conflict abort (docs/benchmarks.md, "Modes").
  bool set_changed = false;
};

// ---------------------------------------------------------------------------
// Transactions declared before they run (docs/benchmarks.md, "Suite"): 2PL
// locks the declared read and write sets, Calvin replicates the inputs and
// locks the sets in batch order. A workload that declares them implements
// Generate (pick the type and inputs, list the keys) and Execute (run that
// transaction to its end, deterministically from the inputs).

// One declared key: a hash of (table, key); lock tables may merge colliding
// hashes (more locking, never less).
struct LockKey {
  uint64_t hash = 0;
  bool write = false;
};

inline uint64_t LockHash(TableId table, std::string_view key) {
  uint64_t h = 0xcbf29ce484222325ULL ^ (static_cast<uint64_t>(table) * 0x9e3779b97f4a7c15ULL);
  for (unsigned char c : key) h = (h ^ c) * 0x100000001b3ULL;
  return h ^ (h >> 29);
}

struct TxnRequest {
  static constexpr uint32_t kMaxParams = 24;
  uint32_t type = 0;
  bool read_only = false;
  // The keys depend on what a reconnaissance read, not on the params alone
  // (Calvin replicates them with the inputs).
  bool reconnoitred = false;
  uint32_t nparams = 0;
  uint64_t params[kMaxParams] = {};  // the inputs: all Execute may depend on
  std::vector<LockKey> keys;         // the declared read and write set

  void Reset(uint32_t t, bool ro) {
    type = t;
    read_only = ro;
    reconnoitred = false;
    nparams = 0;
    keys.clear();
  }
  void Param(uint64_t v) { params[nparams++] = v; }
  void Key(TableId table, std::string_view key, bool is_write) { keys.push_back({LockHash(table, key), is_write}); }
  // Sorted by hash, one entry per hash (a write wins): the order locks are taken in.
  void Normalize();
};

class Workload;

// Runs a workload's transactions when the workload does not run them itself
// (the 2PL and Calvin baselines, engine/src/baselines). Called on the
// worker thread of ctx, as Workload::RunOne would be.
class TxnRunner {
 public:
  virtual ~TxnRunner() = default;
  virtual TxnOutcome RunOne(WorkerContext& ctx, Workload* workload) = 0;
  // After the thread's last RunOne: finish what it still holds or queued.
  virtual Status ThreadEnd(WorkerContext& ctx, Workload* workload) { return Status::OK(); }
};

class Workload {
 public:
  virtual ~Workload() = default;

  virtual std::string_view name() const = 0;
  // Names of the transaction types, indexed by TxnOutcome::type.
  virtual std::span<const std::string_view> txn_types() const = 0;

  // Creates the tables in `db` and loads the initial population with
  // `threads` threads (each registers its own Worker). Call once.
  virtual Status Load(Database* db, uint32_t threads) = 0;

  // Prepares ctx.state for a worker thread; call on that thread after Load.
  virtual void InitThread(WorkerContext& ctx) = 0;

  // Picks a transaction type by the workload's mix and runs it to its end.
  virtual TxnOutcome RunOne(WorkerContext& ctx) = 0;

  // Whether Generate and Execute are implemented (TxnRequest above).
  virtual bool declares_sets() const { return false; }
  // Picks a transaction by the mix: its type, inputs and read/write set.
  virtual void Generate(WorkerContext& ctx, TxnRequest* req) {}
  // Recomputes the declared set (and what the reconnaissance read, in the
  // params) of `req` from its inputs and the current state, without locks:
  // for a transaction whose execution reported set_changed. A no-op for
  // workloads whose sets follow from their inputs.
  virtual void Reconnoiter(WorkerContext& ctx, TxnRequest* req) {}
  // Runs the transaction `req` describes to its end (RunTxn), touching only
  // its declared keys.
  virtual TxnOutcome Execute(WorkerContext& ctx, const TxnRequest& req) {
    TxnOutcome out;
    out.error = Status::InvalidArgument("this workload does not declare its transactions");
    return out;
  }
};

// RunOne of a workload that declares its transactions.
inline TxnOutcome GenerateAndExecute(Workload& w, WorkerContext& ctx, TxnRequest* req) {
  w.Generate(ctx, req);
  return w.Execute(ctx, *req);
}

// ---------------------------------------------------------------------------
// Retry loop.

// Give up on a transaction after this many conflict aborts in a row (a
// livelock would otherwise hang the benchmark); the outcome then carries
// kAborted as its error.
inline constexpr uint32_t kMaxAttempts = 100000;

// Spins for a random number of pause instructions; the window doubles with
// each consecutive abort, from 16 up to 16384 pauses (~1 us .. ~1 ms).
inline void BackoffAfterAbort(Rng& rng, uint32_t aborts_so_far) {
  uint32_t shift = aborts_so_far < 10 ? aborts_so_far : 10;
  uint64_t spins = rng.Uniform(uint64_t{16} << shift);
  for (uint64_t i = 0; i < spins; ++i) _mm_pause();
}

// Runs body(txn, &rollback) in fresh transactions until one commits, the body
// asks for an application rollback (sets rollback = true and returns OK), or
// a non-retryable error happens. kAborted from the body or from Commit is a
// conflict: counted, backed off, retried.
template <class Body>
inline TxnOutcome RunTxn(WorkerContext& ctx, uint32_t type, bool read_only, Body&& body) {
  TxnOutcome out;
  out.type = type;
  for (;;) {
    std::unique_ptr<Transaction> txn =
        read_only && ctx.snapshot_reads ? ctx.worker->BeginReadOnly() : ctx.worker->Begin();
    bool rollback = false;
    Status s = body(*txn, &rollback);
    if (s.ok()) {
      if (rollback) {
        txn->Abort();
        return out;
      }
      s = txn->Commit();
      if (s.ok()) {
        out.committed = true;
        if (!read_only) out.commit_ts = txn->commit_ts();
        return out;
      }
    } else if (read_only && !ctx.snapshot_reads && !s.IsAborted()) {
      // Not on a snapshot, the reads are consistent only once validated:
      // an error the body drew from them (an audit's wrong total) stands
      // only if they validate; otherwise it is a conflict. The body wrote
      // nothing, so the commit only validates.
      if (Status v = txn->Commit(); v.IsAborted()) s = std::move(v);
    } else {
      txn->Abort();
    }
    if (!s.IsAborted()) {
      out.error = std::move(s);
      return out;
    }
    if (++out.conflict_aborts >= kMaxAttempts) {
      out.error = Status::Aborted("gave up after too many conflict aborts");
      return out;
    }
    BackoffAfterAbort(ctx.rng, out.conflict_aborts);
  }
}

// ---------------------------------------------------------------------------
// Fixed-width keys: big-endian unsigned integers, so byte order = numeric order.

inline void StoreBigEndian16(char* p, uint16_t v) {
  if constexpr (std::endian::native == std::endian::little) v = __builtin_bswap16(v);
  std::memcpy(p, &v, 2);
}
inline void StoreBigEndian32(char* p, uint32_t v) {
  if constexpr (std::endian::native == std::endian::little) v = __builtin_bswap32(v);
  std::memcpy(p, &v, 4);
}
inline void StoreBigEndian64(char* p, uint64_t v) {
  if constexpr (std::endian::native == std::endian::little) v = __builtin_bswap64(v);
  std::memcpy(p, &v, 8);
}

template <size_t N>
class KeyBuilder {
 public:
  KeyBuilder& U8(uint8_t v) {
    buf_[len_++] = static_cast<char>(v);
    return *this;
  }
  KeyBuilder& U16(uint16_t v) {
    StoreBigEndian16(buf_ + len_, v);
    len_ += 2;
    return *this;
  }
  KeyBuilder& U32(uint32_t v) {
    StoreBigEndian32(buf_ + len_, v);
    len_ += 4;
    return *this;
  }
  KeyBuilder& U64(uint64_t v) {
    StoreBigEndian64(buf_ + len_, v);
    len_ += 8;
    return *this;
  }
  // Exactly `width` bytes: `s` then zero padding (s must be shorter or equal).
  KeyBuilder& Padded(std::string_view s, size_t width) {
    size_t n = s.size() < width ? s.size() : width;
    std::memcpy(buf_ + len_, s.data(), n);
    std::memset(buf_ + len_ + n, 0, width - n);
    len_ += width;
    return *this;
  }
  std::string_view view() const { return {buf_, len_}; }
  size_t size() const { return len_; }

 private:
  char buf_[N];
  size_t len_ = 0;
};

inline uint32_t DecodeU32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  if constexpr (std::endian::native == std::endian::little) v = __builtin_bswap32(v);
  return v;
}
inline uint64_t DecodeU64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  if constexpr (std::endian::native == std::endian::little) v = __builtin_bswap64(v);
  return v;
}

}  // namespace rolis::workloads
