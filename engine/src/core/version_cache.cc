#include "version_cache.h"

#include <memory>

#include "alloc.h"

namespace rolis::core {

VersionCache& VersionCache::Mine() {
  // Made at first use: a thread that never frees or makes a version (a
  // gRPC poller, say) pays only the pointer.
  thread_local std::unique_ptr<VersionCache> mine;
  if (__builtin_expect(mine == nullptr, 0)) mine = std::make_unique<VersionCache>();
  return *mine;
}

VersionCache::~VersionCache() {
  for (std::vector<void*>& s : stacks_) {
    for (void* block : s) Free(block);
  }
}

}  // namespace rolis::core
