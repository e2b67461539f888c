#include "txn_sets.h"

#include <algorithm>

namespace rolis::core {

// ---------------------------------------------------------------- Arena

char* Arena::CopySlow(std::string_view s) {
  if (s.size() > kBlock / 4) {
    big_.emplace_back(new char[s.size()]);
    std::memcpy(big_.back().get(), s.data(), s.size());
    return big_.back().get();
  }
  if (blocks_.empty() || used_ + s.size() > kBlock) {
    if (!blocks_.empty()) ++block_;
    if (block_ == blocks_.size()) blocks_.emplace_back(new char[kBlock]);
    used_ = 0;
  }
  char* p = blocks_[block_].get() + used_;
  std::memcpy(p, s.data(), s.size());
  used_ += (s.size() + 7) & ~size_t{7};
  return p;
}

void Arena::Reset() {
  block_ = 0;
  used_ = 0;
  if (!big_.empty()) big_.clear();
  if (blocks_.size() > 4) blocks_.resize(4);
}

// ----------------------------------------------------------- WriteIndex

namespace {
inline size_t HashPtr(const void* p) {
  uint64_t x = reinterpret_cast<uintptr_t>(p);
  x ^= x >> 29;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 32;
  return static_cast<size_t>(x);
}
}  // namespace

void WriteIndex::ClearSlots() {
  std::fill(slots_.begin(), slots_.end(), 0u);
  used_ = 0;
  built_ = false;
}

void WriteIndex::Rebuild(const std::vector<WriteEntry>& writes) {
  size_t cap = 64;
  while (cap < writes.size() * 4) cap <<= 1;
  slots_.assign(cap, 0u);
  used_ = 0;
  built_ = true;
  for (uint32_t i = 0; i < writes.size(); ++i) {
    size_t mask = slots_.size() - 1;
    size_t h = HashPtr(writes[i].rec) & mask;
    while (slots_[h] != 0) h = (h + 1) & mask;
    slots_[h] = i + 1;
    ++used_;
  }
}

void WriteIndex::AddSlow(const Record* r, uint32_t pos, const std::vector<WriteEntry>& writes) {
  if (!built_ || (used_ + 1) * 2 > slots_.size()) {
    Rebuild(writes);  // includes pos
    return;
  }
  size_t mask = slots_.size() - 1;
  size_t h = HashPtr(r) & mask;
  while (slots_[h] != 0) h = (h + 1) & mask;
  slots_[h] = pos + 1;
  ++used_;
}

int WriteIndex::Find(const Record* r, const std::vector<WriteEntry>& writes) const {
  if (!built_) return -1;
  size_t mask = slots_.size() - 1;
  for (size_t h = HashPtr(r) & mask;; h = (h + 1) & mask) {
    uint32_t s = slots_[h];
    if (s == 0) return -1;
    if (writes[s - 1].rec == r) return static_cast<int>(s - 1);
  }
}

}  // namespace rolis::core
