#include "rolis/prefault.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <optional>
#include <mutex>
#include <string>

#ifdef ROLIS_USE_MIMALLOC
#include <mimalloc.h>
#endif

namespace rolis {
namespace {

std::mutex prefault_mu;
std::atomic<size_t> prefaulted{0};

std::string Mib(size_t bytes) { return std::to_string(bytes >> 20) + " MiB"; }

// A number from a file that holds one ("max" and the like: none).
std::optional<uint64_t> ReadNumber(const char* path) {
  std::ifstream f(path);
  uint64_t v = 0;
  if (f >> v) return v;
  return std::nullopt;
}

// What this process may still fault in: the kernel's MemAvailable, and
// what its memory cgroup's limit leaves (v2, then v1). With overcommit the
// mapping itself never fails: touching more than this gets the process
// killed instead, so it is checked first.
uint64_t AvailableMemory() {
  uint64_t avail = UINT64_MAX;
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  uint64_t kib = 0;
  std::string unit;
  while (meminfo >> key >> kib >> unit) {
    if (key == "MemAvailable:") avail = kib * 1024;
  }
  struct {
    const char* limit;
    const char* usage;
  } cgroups[] = {{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"},
                 {"/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes"}};
  for (const auto& c : cgroups) {
    auto limit = ReadNumber(c.limit), usage = ReadNumber(c.usage);
    if (limit && usage) {
      avail = std::min(avail, *limit > *usage ? *limit - *usage : 0);
      break;
    }
  }
  return avail;
}

}  // namespace

size_t PrefaultedBytes() { return prefaulted.load(); }

bool PrefaultSupported() {
#ifdef ROLIS_USE_MIMALLOC
  return true;
#else
  return false;
#endif
}

Status PrefaultMemory(size_t bytes, bool huge_pages, const std::function<void(size_t, size_t)>& progress) {
  if (bytes == 0) return Status::OK();
  std::lock_guard<std::mutex> g(prefault_mu);
  if (prefaulted.load() != 0) {
    return Status::FailedPrecondition("memory was already prefaulted in this process (" + Mib(prefaulted.load()) + ")");
  }
#ifndef ROLIS_USE_MIMALLOC
  (void)huge_pages;
  (void)progress;
  return Status::FailedPrecondition(
      "this build's allocator (the system's, as in sanitizer builds) cannot take prefaulted memory: run without "
      "--prefault-memory");
#else
  if (bytes > (size_t{1} << 46)) return Status::InvalidArgument("prefault of " + Mib(bytes) + ": too large");
  const size_t size = PrefaultSize(bytes);
  if (const uint64_t avail = AvailableMemory(); size > avail) {
    return Status::ResourceExhausted("cannot prefault " + Mib(size) + ": only " + Mib(avail) +
                                     " available to this process (MemAvailable and its memory cgroup's limit); ask "
                                     "for less, or give it more memory");
  }
  // Mapped with room to align the start to the allocator's unit; the
  // slack on either side is unmapped again.
  const size_t mapped = size + kPrefaultUnit;
  void* raw = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) {
    return Status::ResourceExhausted("cannot map " + Mib(size) + " to prefault: " + std::strerror(errno) +
                                     " (ask for less, or give the process more memory)");
  }
  const uintptr_t base = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t start = (base + kPrefaultUnit - 1) & ~(uintptr_t{kPrefaultUnit} - 1);
  if (start > base) munmap(raw, start - base);
  if (const uintptr_t end = base + mapped; end > start + size) munmap(reinterpret_cast<void*>(start + size), end - start - size);
  char* p = reinterpret_cast<char*>(start);
  // Advice only: a host without THP in madvise or always mode gets 4 KiB pages.
  if (huge_pages) madvise(p, size, MADV_HUGEPAGE);
  // One write per page faults it in (the kernel zeroes it); a volatile
  // store so that the compiler keeps every one.
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  constexpr size_t kReportEvery = size_t{1} << 30;
  for (size_t off = 0; off < size; off += page) {
    *static_cast<volatile char*>(p + off) = 0;
    if (progress && (off + page) % kReportEvery == 0) progress(off + page, size);
  }
  // Committed, zeroed, and "large": mimalloc treats the range as pinned and
  // never decommits or resets it, so it stays faulted in.
  if (!mi_manage_os_memory(p, size, /*is_committed=*/true, /*is_large=*/true, /*is_zero=*/true, /*numa_node=*/-1)) {
    munmap(p, size);
    return Status::Internal("the allocator refused the prefaulted range of " + Mib(size));
  }
  prefaulted.store(size);
  if (progress && size % kReportEvery != 0) progress(size, size);
  return Status::OK();
#endif
}

}  // namespace rolis
