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
};

// The result of one logical transaction, after its retries.
struct TxnOutcome {
  uint32_t type = 0;             // index into Workload::txn_types()
  bool committed = false;        // false with ok error: rolled back by the application
  uint32_t conflict_aborts = 0;  // attempts that ended in kAborted before the outcome
  Status error;                  // non-OK: a non-retryable failure (a bug or a limit)
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
};

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
    std::unique_ptr<Transaction> txn = read_only ? ctx.worker->BeginReadOnly() : ctx.worker->Begin();
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
        return out;
      }
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
