// A per-thread cache of freed Version blocks, by size class, that
// NewVersion takes from before it asks the allocator.
//
// Why: an overwrite in a later epoch copies the old value into a new
// Version, and reclamation frees versions an epoch or more later. The
// allocator's free-list pop reads the link stored in the free block itself,
// a cache miss on memory last touched an epoch ago: mi_malloc was 11% of a
// YCSB++ worker's samples, nearly all on that load (docs/benchmarks.md,
// "A per-thread cache of freed versions"). Popping a pointer from this array
// touches only the array, and the next block of the class, known from the
// array, is prefetched for the next version.
//
// Reclamation frees an epoch's versions at once (tens of thousands under
// YCSB++), and commits make new ones one at a time until the next epoch:
// the cache must hold an epoch's worth to serve them. Bounded in bytes: at
// most kMaxCachedBytes of blocks per thread; beyond that, and for versions
// larger than kMaxBytes, blocks go back to the allocator.
// A block freed by one thread may be reused by another (the allocator
// allows it); what a thread holds when it exits goes back to the allocator.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace rolis::core {

class VersionCache {
 public:
  static constexpr size_t kGranule = 16;
  static constexpr size_t kMaxBytes = 256;  // block size of the largest class
  static constexpr size_t kClasses = kMaxBytes / kGranule;
  static constexpr size_t kMaxCachedBytes = size_t{4} << 20;  // ~87K blocks of 48 bytes: an epoch of YCSB++ needs ~40K

  // The size class of a block of `bytes` (1..kMaxBytes), and its block size.
  static size_t ClassOf(size_t bytes) { return (bytes + kGranule - 1) / kGranule - 1; }
  static size_t BytesOf(size_t cls) { return (cls + 1) * kGranule; }

  // This thread's cache (made at its first use); null once the thread's
  // thread-locals are being destroyed (the caller uses the allocator).
  static VersionCache* Mine();

  // A cached block of class `cls`, or null.
  void* Take(size_t cls) {
    std::vector<void*>& s = stacks_[cls];
    if (s.empty()) return nullptr;
    void* block = s.back();
    s.pop_back();
    bytes_ -= BytesOf(cls);
    // The next one of the class is known without touching it: fetch it now,
    // so that the next version is written into a line already here.
    if (!s.empty()) __builtin_prefetch(s.back(), 1);
    return block;
  }
  // Keeps `block` (of class `cls`) for reuse; false when the cache is full
  // (the caller frees it).
  bool Keep(size_t cls, void* block) {
    if (bytes_ + BytesOf(cls) > kMaxCachedBytes) return false;
    stacks_[cls].push_back(block);
    bytes_ += BytesOf(cls);
    return true;
  }
  size_t cached(size_t cls) const { return stacks_[cls].size(); }
  size_t cached_bytes() const { return bytes_; }

  VersionCache() = default;
  VersionCache(const VersionCache&) = delete;
  VersionCache& operator=(const VersionCache&) = delete;
  ~VersionCache();

 private:
  std::vector<void*> stacks_[kClasses];  // LIFO: the most recently freed first
  size_t bytes_ = 0;
};

}  // namespace rolis::core
