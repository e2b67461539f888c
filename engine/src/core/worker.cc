#include <algorithm>
#include <cstring>
#include <thread>

#include "txn_impl.h"
#include "rolis/value_patch.h"
#include "worker_impl.h"

namespace rolis::core {

// ------------------------------------------------------------- locking

uint64_t LockRecord(Record* r) {
  uint32_t spins = 0;
  uint64_t w = r->word.load(std::memory_order_relaxed);
  for (;;) {
    if (!(w & tid::kLock)) {
      if (r->word.compare_exchange_weak(w, w | tid::kLock, std::memory_order_seq_cst,
                                        std::memory_order_relaxed)) {
        return w | tid::kLock;
      }
      continue;
    }
    SpinPause(&spins);
    w = r->word.load(std::memory_order_relaxed);
  }
}

// ------------------------------------------------------------- install

namespace {

// Drops the versions no snapshot can need: every version older than the
// newest one whose epoch is <= min_snap.
void TrimChain(WorkerImpl* w, Record* r, uint64_t min_snap, uint64_t retire_epoch) {
  Version* v = r->chain.load(std::memory_order_relaxed);
  while (v && v->epoch > min_snap) v = v->prev.load(std::memory_order_relaxed);
  if (!v) return;
  Version* tail = v->prev.load(std::memory_order_relaxed);
  if (!tail) return;
  v->prev.store(nullptr, std::memory_order_release);
  w->Retire(tail, RetiredKind::kVersions, retire_epoch);
}

}  // namespace

void InstallAndUnlock(WorkerImpl* w, TableImpl* t, Record* r, bool absent, const char* val, uint32_t len,
                      uint64_t ts, uint64_t epoch, uint64_t repl_epoch, uint64_t min_snap, uint64_t retire_epoch,
                      bool keep_old, const std::string_view* patch) {
  const uint64_t old = r->word.load(std::memory_order_relaxed);
  const bool old_absent = (old & tid::kAbsent) != 0;
  Version* chain = r->chain.load(std::memory_order_relaxed);
  // Keep the old version unless it was written in this same epoch (no
  // snapshot can need it then: snapshots below `epoch` want an older one,
  // snapshots at or above it want ours) or it is an absent version with
  // nothing older (the end of a chain already reads as absent).
  if (keep_old && r->epoch != epoch && !(old_absent && chain == nullptr)) {
    Version* v = NewVersion(r->ts, r->epoch, r->repl_epoch, old_absent, r->ValuePtrLocked(), old_absent ? 0 : r->vlen);
    v->prev.store(chain, std::memory_order_relaxed);
    r->chain.store(v, std::memory_order_release);
    chain = v;
    Bump(w->slot().versions, 1);
  } else if (!keep_old && chain) {
    // No snapshot can need what this install replaces, so none needs
    // anything older either: the whole chain goes. Left in place (versions
    // kept while readers were around), its head, cold by then, was read by
    // TrimChain on every later install of the record: a miss per replayed
    // write, 10% of a follower's replay (docs/benchmarks.md, "Followers keep
    // no old versions when nobody reads").
    r->chain.store(nullptr, std::memory_order_release);
    w->Retire(chain, RetiredKind::kVersions, retire_epoch);
    chain = nullptr;
  }
  if (!absent) {
    char* dst = r->ValuePtrLocked();
    if (len > r->CapacityOf(dst)) {
      uint32_t cap = (len + len / 4 + 15u) & ~15u;
      HeapValue* h = NewHeapValue(cap);
      if (dst != r->inline_value()) w->Retire(dst, RetiredKind::kHeapValue, retire_epoch);
      dst = h->data();
      __atomic_store_n(reinterpret_cast<char**>(r->inline_value()), dst, __ATOMIC_RELAXED);
      __atomic_store_n(&r->flags, static_cast<uint16_t>(r->flags | kFlagHeapValue), __ATOMIC_RELEASE);
    }
    if (patch) {
      ApplyPatch(*patch, dst, len);  // fits: the caller checked
    } else if (len) {
      std::memcpy(dst, val, len);
    }
    St(r->vlen, len);
  } else {
    St(r->vlen, 0u);
  }
  St(r->ts, ts);
  St(r->epoch, epoch);
  St(r->repl_epoch, static_cast<uint32_t>(repl_epoch));
  if (chain) TrimChain(w, r, min_snap, retire_epoch);
  if (absent) w->QueueAbsentLocked(t, r);
  r->word.store(tid::Make(ts, absent), std::memory_order_release);
}

// ------------------------------------------------------------- worker

WorkerImpl::WorkerImpl(DatabaseImpl* db, WorkerId id) : db_(db), id_(id), slot_(&db->slot(id)) {
  hook_buf_.reserve(32);
  retired_.reserve(1024);
  open_.reserve(4);
}

WorkerImpl::~WorkerImpl() {
  // Hand what is still pending to the database; another worker or the
  // advancer finishes it.
  std::vector<Retired> retired(retired_.begin() + static_cast<ptrdiff_t>(retired_head_), retired_.end());
  Bump(slot_->pending, -static_cast<int64_t>(retired.size() + absent_.size()));
  db_->ReleaseWorker(id_, std::move(retired), std::move(absent_));
  slot_->snap.store(kIdle, std::memory_order_seq_cst);
  slot_->local.store(kIdle, std::memory_order_seq_cst);
}

std::unique_ptr<Transaction> WorkerImpl::Begin() {
  if (__builtin_expect(open_.size() >= db_->options().limits.max_open_txns, 0)) {
    return std::make_unique<TxnImpl>(this, TxnImpl::Mode::kRejected);
  }
  return std::make_unique<TxnImpl>(this, TxnImpl::Mode::kReadWrite);
}

std::unique_ptr<Transaction> WorkerImpl::BeginReadOnly() {
  if (__builtin_expect(open_.size() >= db_->options().limits.max_open_txns, 0)) {
    return std::make_unique<TxnImpl>(this, TxnImpl::Mode::kRejected);
  }
  return std::make_unique<TxnImpl>(this, TxnImpl::Mode::kReadOnly);
}

TxnSets* WorkerImpl::OpenTxn(const void* txn, bool read_only, uint64_t* snap) {
  const uint64_t key = EnterEpoch(read_only);
  uint64_t s = kIdle;
  if (read_only) {
    db_->NoteSnapshotBegin(key >> 1);
    s = RegisterSnapshot();
    if (!AwaitVersionedSnapshot(&s)) s = kIdle;  // the caller refuses the transaction
  }
  if (snap) *snap = s;
  open_.push_back({txn, key, s});
  if (free_sets_.empty()) {
    sets_.push_back(std::make_unique<TxnSets>());
    return sets_.back().get();
  }
  TxnSets* sets = free_sets_.back();
  free_sets_.pop_back();
  return sets;
}

void WorkerImpl::CloseTxn(const void* txn, TxnSets* sets) {
  sets->Clear();
  free_sets_.push_back(sets);
  if (open_.size() == 1) {
    // The common case. What this transaction published stays until the
    // next Begin or Quiesce, as it did with one transaction per worker.
    open_.clear();
    return;
  }
  for (size_t i = 0; i < open_.size(); ++i) {
    if (open_[i].txn == txn) {
      open_[i] = open_.back();
      open_.pop_back();
      break;
    }
  }
  RepublishOpen();
}

uint64_t WorkerImpl::EnterEpoch(bool read_only) {
  uint64_t e = db_->epoch_.load(std::memory_order_seq_cst);
  const uint64_t key = (e << 1) | (read_only ? 1 : 0);
  // With other transactions open the published epoch is theirs (older or
  // equal) and stays; it stops being read-only if this one writes.
  uint64_t want = open_.empty() ? key : (published_ & (read_only ? ~uint64_t{0} : ~uint64_t{1}));
  if (want != published_) {
    // seq_cst: the published epoch must be visible before this worker reads
    // anything it could keep a pointer to (the advancer reads it after
    // bumping E).
    slot_->local.store(want, std::memory_order_seq_cst);
    published_ = want;
  }
  if (e != seen_epoch_) {
    seen_epoch_ = e;
    Maintain(/*all=*/false);
  } else if (retired_head_ < retired_.size()) {
    FreeReady(FreeBudget());
  }
  return key;
}

bool WorkerImpl::AwaitVersionedSnapshot(uint64_t* snap) {
  // Registered first (RegisterSnapshot), then this load: see
  // DatabaseImpl::ReplayMayDropOldVersions.
  uint64_t u = db_->unversioned_epoch_.load(std::memory_order_seq_cst);
  if (u <= *snap) return true;
  const uint64_t deadline = MonotonicNanos() + 2'000'000'000;
  while (*snap < u) {
    if (MonotonicNanos() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    *snap = RegisterSnapshot();
  }
  return true;
}

uint64_t WorkerImpl::RegisterSnapshot() {
  for (const OpenTxnEntry& o : open_) {
    // Another open read-only transaction keeps an older (or equal)
    // snapshot published, which protects the versions of any newer one.
    if (o.snap != kIdle) return db_->snap_epoch_.load(std::memory_order_seq_cst);
  }
  for (;;) {
    uint64_t s = db_->snap_epoch_.load(std::memory_order_seq_cst);
    if (s == published_snap_) return s;
    slot_->snap.store(s, std::memory_order_seq_cst);
    published_snap_ = s;
    // If the advancer moved S meanwhile it may not have seen our store;
    // take the newer S instead.
    if (db_->snap_epoch_.load(std::memory_order_seq_cst) == s) return s;
  }
}

void WorkerImpl::RepublishOpen() {
  // Raising what is published to the oldest still-open transaction is
  // safe: each of them is at least that new.
  uint64_t epoch = kIdle, snap = kIdle;
  uint64_t read_only = 1;
  for (const OpenTxnEntry& o : open_) {
    epoch = std::min(epoch, o.key >> 1);
    read_only &= o.key & 1;
    snap = std::min(snap, o.snap);
  }
  const uint64_t want = (epoch << 1) | read_only;
  if (want != published_) {
    slot_->local.store(want, std::memory_order_seq_cst);
    published_ = want;
  }
  if (snap != kIdle && snap != published_snap_) {
    slot_->snap.store(snap, std::memory_order_seq_cst);
    published_snap_ = snap;
  }
}

void WorkerImpl::Quiesce() {
  if (!open_.empty()) return;
  // Publish an epoch while reclaiming (the absent-queue pass reads the index).
  uint64_t e = db_->epoch_.load(std::memory_order_seq_cst);
  slot_->local.store((e << 1) | 1, std::memory_order_seq_cst);
  seen_epoch_ = e;
  Maintain(/*all=*/true);
  slot_->snap.store(kIdle, std::memory_order_seq_cst);
  published_snap_ = kIdle;
  slot_->local.store(kIdle, std::memory_order_seq_cst);
  published_ = kIdle;
}

void WorkerImpl::Retire(void* p, RetiredKind kind, uint64_t epoch) {
  retired_.push_back({p, epoch, kind});
  Bump(slot_->pending, 1);
}

void WorkerImpl::QueueAbsentLocked(TableImpl* t, Record* r) {
  if (r->flags & kFlagGcQueued) return;
  St(r->flags, r->flags | kFlagGcQueued);
  absent_.push_back({t, r, r->epoch, std::string(r->key())});
  Bump(slot_->pending, 1);
}

void WorkerImpl::Maintain(bool all) {
  FreeReady(all ? SIZE_MAX : FreeBudget());
  if (db_->HasOrphans()) {
    size_t before = absent_.size();
    db_->AdoptOrphans(&absent_);
    Bump(slot_->pending, static_cast<int64_t>(absent_.size() - before));
  }
  if (!absent_.empty()) ProcessAbsent();
  // A stale snapshot registration would hold back trimming.
  if (published_snap_ != kIdle && open_.empty()) {
    slot_->snap.store(kIdle, std::memory_order_seq_cst);
    published_snap_ = kIdle;
  }
}

size_t WorkerImpl::FreeBudget() const {
  return std::max<size_t>(kMinFreeBudget, (retired_.size() - retired_head_) / kFreeBudgetShare);
}

void WorkerImpl::FreeReady(size_t budget) {
  uint64_t reclaim = db_->reclaim_epoch_.load(std::memory_order_acquire);
  size_t i = retired_head_;
  const size_t end = budget >= retired_.size() - i ? retired_.size() : i + budget;
  int64_t records = 0, versions = 0;
  while (i < end && retired_[i].epoch < reclaim) {
    // Freeing reads each object's first line (a version's link and length),
    // cold an epoch later: ask for a later entry's now.
    if (i + kFreePrefetchAhead < end) __builtin_prefetch(retired_[i + kFreePrefetchAhead].p);
    const Retired& r = retired_[i];
    switch (r.kind) {
      case RetiredKind::kRecord: {
        Record* rec = static_cast<Record*>(r.p);
        versions += static_cast<int64_t>(FreeVersionChain(rec->chain.load(std::memory_order_relaxed)));
        rec->chain.store(nullptr, std::memory_order_relaxed);
        FreeRecord(rec);
        ++records;
        break;
      }
      case RetiredKind::kVersions:
        versions += static_cast<int64_t>(FreeVersionChain(static_cast<Version*>(r.p)));
        break;
      case RetiredKind::kHeapValue:
        FreeHeapValue(static_cast<char*>(r.p));
        break;
    }
    ++i;
  }
  if (i == retired_head_) return;  // nothing ready: the common case between epochs
  Bump(slot_->pending, -static_cast<int64_t>(i - retired_head_));
  Bump(slot_->records, -records);
  Bump(slot_->versions, -versions);
  retired_head_ = i;
  if (retired_head_ == retired_.size()) {
    retired_.clear();
    retired_head_ = 0;
  } else if (retired_head_ > 4096 && retired_head_ * 2 > retired_.size()) {
    retired_.erase(retired_.begin(), retired_.begin() + static_cast<ptrdiff_t>(retired_head_));
    retired_head_ = 0;
  }
}

void WorkerImpl::ProcessAbsent() {
  uint64_t min_snap = db_->min_snap_.load(std::memory_order_acquire);
  size_t keep = 0, n = absent_.size();
  for (size_t i = 0; i < n; ++i) {
    if (!TryUnlinkAbsent(absent_[i], min_snap)) {
      if (keep != i) absent_[keep] = std::move(absent_[i]);
      ++keep;
    }
  }
  absent_.resize(keep);
  Bump(slot_->pending, -static_cast<int64_t>(n - keep));
}

bool WorkerImpl::TryUnlinkAbsent(AbsentEntry& a, uint64_t min_snap) {
  if (a.epoch > min_snap) return false;
  KeyRef k(a.key);
  Record* r = a.table->tree.Lookup(k).rec;
  if (r != a.rec) return true;  // unlinked (or replaced) meanwhile
  uint64_t w = LockRecord(r);
  if (!(w & tid::kLatest)) {
    UnlockRecord(r, w);
    return true;
  }
  if (!(w & tid::kAbsent)) {  // written again: nothing to unlink
    St(r->flags, r->flags & ~kFlagGcQueued);
    UnlockRecord(r, w);
    return true;
  }
  if (r->epoch > min_snap) {  // deleted again later; a snapshot may still need the chain
    a.epoch = r->epoch;
    UnlockRecord(r, w);
    return false;
  }
  if ((r->flags & kFlagReplTombstone) && !db_->BelowReplayHorizon(r->repl_epoch, r->ts)) {
    UnlockRecord(r, w);
    return false;
  }
  a.table->tree.Remove(k, r);
  // Clearing `latest` (and so changing the word) tells every holder of the
  // pointer that the record is gone: readers look the key up again, and
  // validation of a read of it fails.
  r->word.store(w & ~(tid::kLatest | tid::kLock), std::memory_order_release);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  Retire(r, RetiredKind::kRecord, db_->epoch_.load(std::memory_order_seq_cst));
  return true;
}

Status WorkerImpl::ApplyReplicated(TableImpl* t, const WriteRecord& write, uint64_t order_epoch,
                                   uint64_t order_ts) {
  // One write alone: its version takes the epoch read once its record is
  // locked, as a commit's does (replay_batch.cc has the shared steps).
  return ApplyOneReplicated(t, KeyRef(write.key), ReplicatedWrite{write, order_epoch, order_ts}, /*found=*/nullptr,
                            kStampAtLock, db_->min_snap_.load(std::memory_order_acquire));
}

}  // namespace rolis::core
