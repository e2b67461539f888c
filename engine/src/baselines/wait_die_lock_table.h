// The lock table of the 2PL baseline (two_phase_locking.h): shared and
// exclusive locks on hashed slots, with wait-die deadlock avoidance. A
// transaction carries a timestamp from its first attempt (kept across
// restarts, so it ages); when its lock conflicts it waits if it is older than
// every holder and dies (gives up, to restart) otherwise. Waits go from
// older to younger only, so there is no cycle.
//
// Keys map to slots by hash; two keys in one slot share its lock (more
// conflicts, never fewer). A transaction asks for each slot once (the runner
// dedupes its slots).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>

namespace rolis::baselines {

class WaitDieLockTable {
 public:
  explicit WaitDieLockTable(uint32_t slots_log2 = 18);

  uint32_t SlotOf(uint64_t hash) const { return static_cast<uint32_t>((hash * 0x9e3779b97f4a7c15ULL) >> shift_); }

  // Granted (true), or the caller must die (false). `before_wait` runs once,
  // before the first time the caller blocks.
  bool Acquire(uint32_t slot, bool write, uint64_t ts, const std::function<void()>& before_wait);
  void Release(uint32_t slot, bool write);

 private:
  struct alignas(32) Slot {
    std::atomic<uint32_t> latch{0};
    uint32_t readers = 0;
    uint64_t writer_ts = 0;      // 0: no writer
    uint64_t oldest_reader = 0;  // at most the smallest ts among the readers
  };
  void Latch(Slot& s);
  static void Unlatch(Slot& s) { s.latch.store(0, std::memory_order_release); }

  uint32_t shift_;
  std::unique_ptr<Slot[]> slots_;
};

}  // namespace rolis::baselines
