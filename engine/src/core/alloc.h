// Allocation for engine objects (records, versions, index nodes). mimalloc
// when available; the system allocator in sanitizer builds.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <cstring>

#ifdef ROLIS_USE_MIMALLOC
#include <mimalloc.h>
#endif

namespace rolis::core {

inline void* Alloc(size_t n) {
#ifdef ROLIS_USE_MIMALLOC
  return mi_malloc(n);
#else
  return std::malloc(n);
#endif
}

// Aligned to `align` (a power of two, at most 4096); n a multiple of it.
inline void* AllocAligned(size_t n, size_t align) {
#ifdef ROLIS_USE_MIMALLOC
  return mi_malloc_aligned(n, align);
#else
  return std::aligned_alloc(align, n);
#endif
}

// Zeroed, aligned to `align` (a power of two, at most 4096).
inline void* AllocZeroedAligned(size_t n, size_t align) {
#ifdef ROLIS_USE_MIMALLOC
  return mi_zalloc_aligned(n, align);
#else
  size_t rounded = (n + align - 1) / align * align;
  void* p = std::aligned_alloc(align, rounded);
  if (p) std::memset(p, 0, rounded);
  return p;
#endif
}

inline void Free(void* p) {
#ifdef ROLIS_USE_MIMALLOC
  mi_free(p);
#else
  std::free(p);
#endif
}

}  // namespace rolis::core
