#include "version_cache.h"

#include "alloc.h"

namespace rolis::core {
namespace {

// Plain thread-locals (no destructor of their own), so that they can still
// be read while the thread's other thread-locals are being destroyed: a
// Database freed from one of those must not touch a cache already gone.
thread_local VersionCache* tl_cache = nullptr;
thread_local bool tl_cache_gone = false;

// Frees this thread's cache when the thread exits.
struct CacheReaper {
  bool armed = false;
  ~CacheReaper() {
    delete tl_cache;
    tl_cache = nullptr;
    tl_cache_gone = true;
  }
};
thread_local CacheReaper tl_reaper;

}  // namespace

VersionCache* VersionCache::Mine() {
  if (__builtin_expect(tl_cache != nullptr, 1)) return tl_cache;
  if (tl_cache_gone) return nullptr;
  // Made at first use: a thread that never frees or makes a version (a
  // gRPC poller, say) pays only the pointer. The reaper's first use
  // registers its destructor for this thread.
  tl_reaper.armed = true;
  tl_cache = new VersionCache();
  return tl_cache;
}

VersionCache::~VersionCache() {
  for (std::vector<void*>& s : stacks_) {
    for (void* block : s) Free(block);
  }
}

}  // namespace rolis::core
