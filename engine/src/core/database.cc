#include <algorithm>
#include <chrono>
#include <cstdlib>

#include "rolis/thread_name.h"
#include "rolis/value_patch.h"
#include "txn_impl.h"
#include "worker_impl.h"

#ifdef ROLIS_USE_MIMALLOC
#include <mimalloc.h>
#endif

namespace rolis {

std::unique_ptr<Database> Database::Open(const Options& options) {
  return std::make_unique<core::DatabaseImpl>(options);
}

}  // namespace rolis

namespace rolis::core {

TableImpl::~TableImpl() {
  tree.ForEachRecordUnsafe([](Record* r) { FreeRecord(r); });
}

DatabaseImpl::DatabaseImpl(const Options& options) : options_(options) {
  if (options_.epoch_period_ms == 0) options_.epoch_period_ms = 1;
#ifdef ROLIS_USE_MIMALLOC
  // Records and index nodes spread over gigabytes; with 4 KiB pages nearly
  // every lookup also misses the TLB. mimalloc then madvises its segments
  // for transparent huge pages (segments allocated from now on).
  if (options_.huge_pages && !getenv("ROLIS_NO_HUGE")) mi_option_enable(mi_option_large_os_pages);
  // Freed memory stays committed for a second before it goes back to the
  // kernel (mimalloc's default: 25 ms). Replication batches and gRPC
  // messages are freed and allocated again at a high rate, and every page
  // handed back was faulted in and zeroed again: a fifth of the followers'
  // CPU in replicated TPC-C (docs/benchmarks.md, "Allocator: mimalloc with a
  // 1 s decommit delay"). The environment's
  // MIMALLOC_DECOMMIT_DELAY, if set, wins.
  if (!getenv("MIMALLOC_DECOMMIT_DELAY")) mi_option_set(mi_option_decommit_delay, 1000);
#endif
  max_workers_ = std::clamp<uint32_t>(options_.max_workers, 1, kMaxWorkerIds);
  options_.max_workers = max_workers_;
  // Ticks start at 1 so that every commit ts exceeds the 0 of a fresh record.
  clock_base_ = MonotonicNanos() - 1;
  slots_.reset(new WorkerSlot[max_workers_]);
  tables_.reset(new std::atomic<TableImpl*>[kMaxTables]);
  for (uint32_t i = 0; i < kMaxTables; ++i) tables_[i].store(nullptr, std::memory_order_relaxed);
  advancer_ = std::thread([this] { AdvanceLoop(); });
}

DatabaseImpl::~DatabaseImpl() {
  {
    std::lock_guard<std::mutex> lk(stop_mu_);
    stop_ = true;
  }
  stop_cv_.notify_all();
  advancer_.join();
  for (const Retired& r : orphan_retired_) FreeRetired(r);
  for (uint32_t i = 0; i < table_count_; ++i) delete tables_[i].load(std::memory_order_relaxed);
}

Status DatabaseImpl::CreateTable(std::string_view name, Table** table) {
  if (name.empty()) return Status::InvalidArgument("table name is empty");
  if (name.size() > 256) return Status::InvalidArgument("table name exceeds 256 bytes");
  std::lock_guard<std::mutex> lk(tables_mu_);
  auto it = tables_by_name_.find(std::string(name));
  if (it != tables_by_name_.end()) {
    if (table) *table = it->second;
    return Status::AlreadyExists("table " + std::string(name) + " already exists");
  }
  if (table_count_ == kMaxTables) {
    return Status::ResourceExhausted("too many tables (max " + std::to_string(kMaxTables) + ")");
  }
  TableId id = table_count_++;
  auto* t = new TableImpl(id, std::string(name));
  tables_by_name_.emplace(std::string(name), t);
  tables_[id].store(t, std::memory_order_release);
  if (table) *table = t;
  return Status::OK();
}

Status DatabaseImpl::GetTable(std::string_view name, Table** table) {
  std::lock_guard<std::mutex> lk(tables_mu_);
  auto it = tables_by_name_.find(std::string(name));
  if (it == tables_by_name_.end()) return Status::NotFound("no table named " + std::string(name));
  if (table) *table = it->second;
  return Status::OK();
}

Status DatabaseImpl::GetTable(TableId id, Table** table) {
  TableImpl* t = TableById(id);
  if (!t) return Status::NotFound("no table with id " + std::to_string(id));
  if (table) *table = t;
  return Status::OK();
}

std::unique_ptr<Worker> DatabaseImpl::RegisterWorker() {
  for (uint32_t i = 0; i < max_workers_; ++i) {
    bool expected = false;
    if (slots_[i].in_use.compare_exchange_strong(expected, true)) {
      return std::make_unique<WorkerImpl>(this, static_cast<WorkerId>(i));
    }
  }
  return nullptr;
}

void DatabaseImpl::ReleaseWorker(WorkerId id, std::vector<Retired> retired, std::vector<AbsentEntry> absent) {
  {
    std::lock_guard<std::mutex> lk(orphans_mu_);
    orphan_retired_.insert(orphan_retired_.end(), retired.begin(), retired.end());
    for (AbsentEntry& a : absent) orphan_absent_.push_back(std::move(a));
    orphan_count_.store(orphan_retired_.size() + orphan_absent_.size(), std::memory_order_relaxed);
  }
  slots_[id].in_use.store(false, std::memory_order_release);
}

void DatabaseImpl::AdoptOrphans(std::vector<AbsentEntry>* out) {
  std::unique_lock<std::mutex> lk(orphans_mu_, std::try_to_lock);
  if (!lk.owns_lock() || orphan_absent_.empty()) return;
  for (AbsentEntry& a : orphan_absent_) out->push_back(std::move(a));
  orphan_absent_.clear();
  orphan_count_.store(orphan_retired_.size(), std::memory_order_relaxed);
}

Status DatabaseImpl::CheckReplicated(const WriteRecord& write, uint64_t order_epoch, TableImpl** table) const {
  TableImpl* t = TableById(write.table);
  if (!t) return Status::NotFound("no table with id " + std::to_string(write.table));
  if (write.key.empty()) return Status::InvalidArgument("key is empty");
  const Limits& lim = options_.limits;
  if (write.key.size() > lim.max_key_bytes) {
    return Status::InvalidArgument("key of " + std::to_string(write.key.size()) + " bytes exceeds max_key_bytes=" +
                                   std::to_string(lim.max_key_bytes));
  }
  if (!write.is_delete && write.value.size() > lim.max_value_bytes) {
    return Status::InvalidArgument("value of " + std::to_string(write.value.size()) +
                                   " bytes exceeds max_value_bytes=" + std::to_string(lim.max_value_bytes));
  }
  if (write.is_patch && (write.is_delete || !PatchWellFormed(write.value))) {
    return Status::InvalidArgument("malformed patch");
  }
  if (order_epoch > UINT32_MAX) return Status::InvalidArgument("replication epoch exceeds 2^32-1");
  *table = t;
  return Status::OK();
}

Status DatabaseImpl::ApplyReplicated(Worker* worker, const WriteRecord& write, uint64_t order_epoch,
                                     uint64_t order_ts) {
  if (worker == nullptr) return Status::InvalidArgument("worker is null");
  auto* w = static_cast<WorkerImpl*>(worker);
  if (w->db() != this) return Status::InvalidArgument("worker belongs to another database");
  TableImpl* t = nullptr;
  Status s = CheckReplicated(write, order_epoch, &t);
  if (!s.ok()) return s;
  if (w->has_open_txn()) return Status::FailedPrecondition("worker has an open transaction");
  w->Enter(false);
  return w->ApplyReplicated(t, write, order_epoch, order_ts);
}

Status DatabaseImpl::ApplyReplicatedBatch(Worker* worker, std::span<const ReplicatedWrite> writes) {
  if (worker == nullptr) return Status::InvalidArgument("worker is null");
  auto* w = static_cast<WorkerImpl*>(worker);
  if (w->db() != this) return Status::InvalidArgument("worker belongs to another database");
  if (w->has_open_txn()) return Status::FailedPrecondition("worker has an open transaction");
  if (writes.empty()) return Status::OK();
  w->Enter(false);  // once for the group: its records stay unreclaimed until the next Enter
  return w->ApplyReplicatedBatch(writes);
}

void DatabaseImpl::SetReplicationEpoch(uint64_t epoch) {
  // Records keep 32 bits of it (Paxos epochs count failovers).
  repl_epoch_.store(std::min<uint64_t>(epoch, UINT32_MAX), std::memory_order_release);
}

void DatabaseImpl::SetReplayHorizon(uint64_t epoch, uint64_t ts) {
  std::lock_guard<std::mutex> lk(horizon_mu_);
  if (epoch > horizon_epoch_ || (epoch == horizon_epoch_ && ts > horizon_ts_)) {
    horizon_epoch_ = epoch;
    horizon_ts_ = ts;
  }
  has_horizon_.store(true, std::memory_order_release);
}

bool DatabaseImpl::BelowReplayHorizon(uint64_t epoch, uint64_t ts) const {
  if (!has_horizon_.load(std::memory_order_acquire)) return false;
  std::lock_guard<std::mutex> lk(const_cast<std::mutex&>(horizon_mu_));
  return epoch < horizon_epoch_ || (epoch == horizon_epoch_ && ts <= horizon_ts_);
}

DatabaseStats DatabaseImpl::Stats() const {
  DatabaseStats s;
  int64_t records = 0, versions = 0, pending = 0;
  for (uint32_t i = 0; i < max_workers_; ++i) {
    const WorkerSlot& w = slots_[i];
    s.commits += w.commits.load(std::memory_order_relaxed);
    s.aborts += w.aborts.load(std::memory_order_relaxed);
    records += w.records.load(std::memory_order_relaxed);
    versions += w.versions.load(std::memory_order_relaxed);
    pending += w.pending.load(std::memory_order_relaxed);
  }
  pending += static_cast<int64_t>(orphan_count_.load(std::memory_order_relaxed));
  records -= static_cast<int64_t>(orphan_records_freed_.load(std::memory_order_relaxed));
  versions -= static_cast<int64_t>(orphan_versions_freed_.load(std::memory_order_relaxed));
  s.live_records = static_cast<uint64_t>(std::max<int64_t>(records, 0));
  s.live_versions = static_cast<uint64_t>(std::max<int64_t>(versions, 0));
  s.pending_reclaim = static_cast<uint64_t>(std::max<int64_t>(pending, 0));
  s.snapshot_epoch = snap_epoch_.load(std::memory_order_acquire);
  s.current_epoch = epoch_.load(std::memory_order_acquire);
  return s;
}

bool DatabaseImpl::ReplayMayDropOldVersions(const WorkerSlot* replayer, uint64_t stamp) {
  const uint64_t last_reader = last_snapshot_epoch_.load(std::memory_order_relaxed);
  const uint64_t quiet_epochs = kReadersQuietMs / options_.epoch_period_ms + 1;
  if (last_reader != 0 && stamp < last_reader + quiet_epochs) return false;
  // Announce first, then look: a reader registers its snapshot first, then
  // looks at unversioned_epoch_.
  uint64_t u = unversioned_epoch_.load(std::memory_order_relaxed);
  while (u < stamp && !unversioned_epoch_.compare_exchange_weak(u, stamp, std::memory_order_seq_cst)) {
  }
  std::atomic_thread_fence(std::memory_order_seq_cst);
  for (uint32_t i = 0; i < max_workers_; ++i) {
    if (&slots_[i] == replayer) continue;
    if (slots_[i].snap.load(std::memory_order_seq_cst) != kIdle) return false;
    if (slots_[i].local.load(std::memory_order_seq_cst) != kIdle) return false;
  }
  return true;
}

void DatabaseImpl::AdvanceLoop() {
  NameThisThread("rolis-epochs");
  std::unique_lock<std::mutex> lk(stop_mu_);
  const auto period = std::chrono::milliseconds(options_.epoch_period_ms);
  while (!stop_) {
    stop_cv_.wait_for(lk, period, [this] { return stop_; });
    if (stop_) break;
    lk.unlock();
    AdvanceOnce();
    lk.lock();
  }
}

void DatabaseImpl::AdvanceOnce() {
  std::lock_guard<std::mutex> guard(advance_mu_);
  // Bump E first, then read every worker's published epoch (both seq_cst):
  // a worker whose publication we miss published after the bump, so its
  // commits read an epoch >= e.
  const uint64_t e = epoch_.fetch_add(1, std::memory_order_seq_cst) + 1;
  uint64_t min_rw = e, min_all = e, min_reader = kIdle;
  for (uint32_t i = 0; i < max_workers_; ++i) {
    uint64_t l = slots_[i].local.load(std::memory_order_seq_cst);
    if (l != kIdle) {
      uint64_t le = l >> 1;
      min_all = std::min(min_all, le);
      if (!(l & 1)) min_rw = std::min(min_rw, le);
    }
  }
  // Every read-write transaction of an epoch below min_rw has finished.
  uint64_t S = snap_epoch_.load(std::memory_order_relaxed);
  if (min_rw - 1 > S) {
    S = min_rw - 1;
    snap_epoch_.store(S, std::memory_order_seq_cst);
  }
  for (uint32_t i = 0; i < max_workers_; ++i) {
    min_reader = std::min(min_reader, slots_[i].snap.load(std::memory_order_seq_cst));
  }
  uint64_t ms = std::min(S, min_reader);
  if (ms > min_snap_.load(std::memory_order_relaxed)) min_snap_.store(ms, std::memory_order_release);
  if (min_all > reclaim_epoch_.load(std::memory_order_relaxed)) {
    reclaim_epoch_.store(min_all, std::memory_order_release);
  }
  // Objects left by destroyed workers.
  if (orphan_count_.load(std::memory_order_relaxed) != 0) {
    std::lock_guard<std::mutex> lk(orphans_mu_);
    uint64_t reclaim = reclaim_epoch_.load(std::memory_order_relaxed);
    size_t keep = 0;
    for (const Retired& r : orphan_retired_) {
      if (r.epoch < reclaim) {
        FreeRetired(r);
      } else {
        orphan_retired_[keep++] = r;
      }
    }
    orphan_retired_.resize(keep);
    orphan_count_.store(orphan_retired_.size() + orphan_absent_.size(), std::memory_order_relaxed);
  }
}

void DatabaseImpl::FreeRetired(const Retired& r) {
  switch (r.kind) {
    case RetiredKind::kRecord: {
      Record* rec = static_cast<Record*>(r.p);
      orphan_versions_freed_.fetch_add(FreeVersionChain(rec->chain.load(std::memory_order_relaxed)));
      rec->chain.store(nullptr, std::memory_order_relaxed);
      FreeRecord(rec);
      orphan_records_freed_.fetch_add(1);
      break;
    }
    case RetiredKind::kVersions:
      orphan_versions_freed_.fetch_add(FreeVersionChain(static_cast<Version*>(r.p)));
      break;
    case RetiredKind::kHeapValue:
      FreeHeapValue(static_cast<char*>(r.p));
      break;
  }
}

}  // namespace rolis::core
