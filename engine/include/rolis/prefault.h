// Memory faulted in up front for the engine (rolisd --prefault-memory).
//
// An in-memory store grows into fresh pages all the time (TPC-C inserts),
// and the first write of a fresh page is a page fault that zeroes it: on a
// VM whose host has taken the page back, ~10 µs. Faulted in once at start
// and handed to the allocator for good, that memory never faults again
// (docs/operations.md, "Prefaulted memory").
#pragma once

#include <cstddef>
#include <functional>

#include "rolis/status.h"

namespace rolis {

// The unit the allocator takes memory in: a request is rounded up to it.
inline constexpr size_t kPrefaultUnit = size_t{64} << 20;

// What PrefaultMemory(bytes) faults in: bytes rounded up to kPrefaultUnit.
inline constexpr size_t PrefaultSize(size_t bytes) {
  return (bytes + kPrefaultUnit - 1) / kPrefaultUnit * kPrefaultUnit;
}

// Maps `bytes` (rounded up to kPrefaultUnit), writes every page once and
// gives the range to the allocator, which serves allocations from it first
// and never returns it to the kernel. With `huge_pages` the range is
// advised for transparent huge pages first (rolisd's --huge-pages): their
// 2 MiB zeroing, which stalls a thread that faults one in, then happens
// here, and the engine keeps the TLB reach. At most once per process (the
// allocator is the process's); 0 does nothing. `progress(done, total)` is
// called after each GiB. Fails, changing nothing, when the size exceeds
// what the process may still use (MemAvailable, its memory cgroup's limit),
// when it cannot be mapped, or when the build's allocator cannot take it.
Status PrefaultMemory(size_t bytes, bool huge_pages = false,
                      const std::function<void(size_t done, size_t total)>& progress = {});

// Whether this build's allocator can take prefaulted memory (mimalloc;
// sanitizer builds use the system allocator, which cannot).
bool PrefaultSupported();

// What PrefaultMemory gave the allocator in this process (0: nothing).
size_t PrefaultedBytes();

}  // namespace rolis
