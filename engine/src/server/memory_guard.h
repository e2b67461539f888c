// MemoryGuard: refuses client writes before the member reaches its memory
// limit, instead of letting the kernel OOM-kill it (docs/operations.md,
// "Memory limit"). A sampler thread reads the resident memory every 20 ms
// and raises a pressure flag above the high watermark (a percentage of the
// limit); the flag clears only once memory is 5 points of the limit below
// it, so it does not flap. Node refuses writes while the flag is up;
// replication (a follower's replay) is never refused.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

namespace rolis::server {

class MemoryGuard {
 public:
  // Bytes of memory in use now (0: unknown, which never raises pressure).
  using Reader = std::function<uint64_t()>;
  // Clear pressure this many percentage points of the limit below the watermark.
  static constexpr uint32_t kHysteresisPercent = 5;

  // limit 0: no limit (never under pressure). high_percent in 1..100.
  MemoryGuard(uint64_t limit, uint32_t high_percent, Reader read);
  ~MemoryGuard();

  // Takes one reading and updates the flag. Returns +1 when pressure started,
  // -1 when it ended, 0 otherwise. The sampler thread calls it; tests too.
  int Sample();
  // Starts the sampler thread (nothing with no limit), which also logs when
  // pressure starts (warn) and ends (info). Every 20 ms: one client's 512 KiB
  // puts over loopback add ~300 MB/s, which the headroom above the watermark
  // must absorb until the next reading; a reading of /proc/self/statm costs
  // microseconds.
  void Start(std::chrono::milliseconds period = std::chrono::milliseconds(20));
  void Stop();

  bool under_pressure() const { return pressure_.load(std::memory_order_relaxed); }
  uint64_t limit() const { return limit_; }
  uint64_t resident() const { return resident_.load(std::memory_order_relaxed); }
  uint64_t high_bytes() const { return high_; }
  uint64_t low_bytes() const { return low_; }
  // What a refused write is told (what to do included).
  std::string RefusalMessage() const;

 private:
  void Loop(std::chrono::milliseconds period);

  const uint64_t limit_;
  const uint64_t high_;  // pressure at or above
  const uint64_t low_;   // pressure clears below
  Reader read_;
  std::atomic<bool> pressure_{false};
  std::atomic<uint64_t> resident_{0};

  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

// Resident memory of this process (/proc/self/statm), 0 when unreadable.
uint64_t ReadResidentBytes();
// The memory limit of this process's cgroup: v2 <root>/memory.max, else v1
// <root>/memory/memory.limit_in_bytes. nullopt when there is none ("max", a
// "no limit" value of 2^60 bytes or more, or no such file).
std::optional<uint64_t> CgroupMemoryLimit(const std::string& root = "/sys/fs/cgroup");

}  // namespace rolis::server
