#include "server/txn_table.h"

namespace rolis::server {
namespace {

// The splitmix64 finalizer: a bijection on 64-bit integers.
uint64_t Mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

}  // namespace

TxnTable::TxnTable(uint64_t id_seed) : key_(Mix(id_seed) | 1), shards_(new Shard[kShards]) {}

uint64_t TxnTable::NewId() {
  for (;;) {
    uint64_t id = Mix(key_ + counter_.fetch_add(1, std::memory_order_relaxed));
    if (id != 0) return id;
  }
}

bool TxnTable::TryReserve(uint32_t limit) {
  if (open_.fetch_add(1, std::memory_order_relaxed) >= static_cast<int64_t>(limit)) {
    open_.fetch_sub(1, std::memory_order_relaxed);
    return false;
  }
  return true;
}

void TxnTable::Unreserve() { open_.fetch_sub(1, std::memory_order_relaxed); }

void TxnTable::Insert(std::shared_ptr<OpenTxn> txn) {
  Shard& s = ShardOf(txn->id);
  std::lock_guard<std::mutex> g(s.mu);
  s.map.emplace(txn->id, std::move(txn));
}

std::shared_ptr<OpenTxn> TxnTable::Find(uint64_t id) const {
  Shard& s = ShardOf(id);
  std::lock_guard<std::mutex> g(s.mu);
  auto it = s.map.find(id);
  return it == s.map.end() ? nullptr : it->second;
}

bool TxnTable::Erase(uint64_t id) {
  Shard& s = ShardOf(id);
  std::lock_guard<std::mutex> g(s.mu);
  if (s.map.erase(id) == 0) return false;
  open_.fetch_sub(1, std::memory_order_relaxed);
  return true;
}

std::vector<std::shared_ptr<OpenTxn>> TxnTable::CollectExpired(Clock::time_point now) const {
  std::vector<std::shared_ptr<OpenTxn>> out;
  for (size_t i = 0; i < kShards; i++) {
    std::lock_guard<std::mutex> g(shards_[i].mu);
    for (const auto& [id, t] : shards_[i].map) {
      if (t->Expired(now)) out.push_back(t);
    }
  }
  return out;
}

std::vector<std::shared_ptr<OpenTxn>> TxnTable::All() const {
  std::vector<std::shared_ptr<OpenTxn>> out;
  for (size_t i = 0; i < kShards; i++) {
    std::lock_guard<std::mutex> g(shards_[i].mu);
    for (const auto& [id, t] : shards_[i].map) out.push_back(t);
  }
  return out;
}

}  // namespace rolis::server
