#include "server/worker_pool.h"

namespace rolis::server {

WorkerPool::WorkerPool(std::vector<std::unique_ptr<Worker>> workers)
    : n_(workers.size()), slots_(new Slot[workers.size()]) {
  for (size_t i = 0; i < n_; i++) {
    slots_[i].worker = std::move(workers[i]);
    slots_[i].index = static_cast<uint32_t>(i);
  }
}

WorkerPool::Slot* WorkerPool::LockAny() {
  // Each thread starts where it last succeeded, so threads spread over the
  // workers and a thread tends to reuse the same worker (warm caches).
  thread_local uint32_t hint = next_thread_.fetch_add(1, std::memory_order_relaxed);
  for (size_t i = 0; i < n_; i++) {
    Slot& s = slots_[(hint + i) % n_];
    if (s.reserved.load(std::memory_order_relaxed)) continue;
    if (s.mu.try_lock()) {
      if (s.reserved.load(std::memory_order_relaxed)) {  // reserved while we raced
        s.mu.unlock();
        continue;
      }
      hint = static_cast<uint32_t>((hint + i) % n_);
      return &s;
    }
  }
  for (size_t i = 0; i < n_; i++) {
    Slot& s = slots_[(hint + i) % n_];
    if (s.reserved.load(std::memory_order_relaxed)) continue;
    s.mu.lock();
    if (!s.reserved.load(std::memory_order_relaxed)) return &s;
    s.mu.unlock();
  }
  return nullptr;
}

WorkerPool::Slot* WorkerPool::PickForInteractive(bool single_txn_mode) {
  uint32_t start = next_interactive_.fetch_add(1, std::memory_order_relaxed);
  if (!single_txn_mode) return &slots_[start % n_];
  std::lock_guard<std::mutex> guard(reserve_mu_);
  size_t keep_free = n_ > 1 ? 1 : 0;
  size_t free_count = 0;
  for (size_t i = 0; i < n_; i++) free_count += !slots_[i].reserved.load();
  if (free_count <= keep_free) return nullptr;
  for (size_t i = 0; i < n_; i++) {
    Slot& s = slots_[(start + i) % n_];
    if (!s.reserved.load()) {
      s.reserved.store(true);
      return &s;
    }
  }
  return nullptr;
}

void WorkerPool::Release(Slot* slot, bool single_txn_mode) {
  if (!single_txn_mode) return;
  std::lock_guard<std::mutex> guard(reserve_mu_);
  slot->reserved.store(false);
}

}  // namespace rolis::server
