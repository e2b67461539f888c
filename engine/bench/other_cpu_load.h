// A synthetic load on the CPUs the workers do not use, for the question
// "what kind of work beside the worker slows it?" (rolis-bench
// --other-cpu-load, engine/bench/interference.sh). With --replicas=3 on two
// vCPUs the followers run there; these loads take them apart: `pause` keeps
// the CPU busy without touching memory, `stream` writes a large buffer
// sequentially, 1 MiB at a time through the caches (bandwidth and L3
// pollution, no misses the prefetchers cannot hide; one `memset` of the
// whole buffer cost nothing, plausibly streamed past the caches), `random`
// reads one byte at a random place of it at a time (a miss each, like
// replay's lookups). docs/benchmarks.md, "Measuring on a small machine".
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace rolis::bench {

enum class OtherCpuLoadKind { kNone, kPause, kStream, kRandom };

// "none", "pause", "stream", "random"; false for anything else.
bool ParseOtherCpuLoadKind(std::string_view name, OtherCpuLoadKind* out);
const char* OtherCpuLoadName(OtherCpuLoadKind kind);
// Every name ParseOtherCpuLoadKind takes (for a flag's check).
std::vector<std::string> OtherCpuLoadNames();

// One thread per CPU in `cpus`, pinned there, running `kind` until the
// object goes. The buffer of `stream` and `random` (`buffer_bytes`, shared)
// is written once before the threads start, so the load runs at full
// strength from its first second.
class OtherCpuLoad {
 public:
  static constexpr size_t kDefaultBufferBytes = size_t{512} << 20;
  OtherCpuLoad(OtherCpuLoadKind kind, const std::vector<int>& cpus, size_t buffer_bytes = kDefaultBufferBytes);
  ~OtherCpuLoad();
  OtherCpuLoad(const OtherCpuLoad&) = delete;
  OtherCpuLoad& operator=(const OtherCpuLoad&) = delete;

  // Rounds of work done so far (a round: 2^16 pauses, one pass over the
  // buffer, or 2^16 random reads), over all threads.
  uint64_t rounds() const { return rounds_.load(std::memory_order_relaxed); }
  // Threads that could not be pinned to their CPU.
  int unpinned() const { return unpinned_.load(); }

 private:
  void Run(int cpu, uint64_t seed);

  const OtherCpuLoadKind kind_;
  std::unique_ptr<char[]> buffer_;
  size_t buffer_bytes_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> rounds_{0};
  std::atomic<int> unpinned_{0};
  std::vector<std::thread> threads_;
};

}  // namespace rolis::bench
