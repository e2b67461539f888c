#include "baselines/wait_die_lock_table.h"

#include <immintrin.h>
#include <sched.h>

#include <chrono>
#include <thread>

namespace rolis::baselines {
namespace {

// Spin, then yield, then sleep: a holder may be waiting for replication
// (2PL+Paxos holds its locks until then), and the machine may have fewer
// CPUs than threads.
void Pause(uint32_t round) {
  if (round < 64) {
    _mm_pause();
  } else if (round < 512) {
    sched_yield();
  } else {
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

}  // namespace

WaitDieLockTable::WaitDieLockTable(uint32_t slots_log2)
    : shift_(64 - slots_log2), slots_(new Slot[size_t{1} << slots_log2]) {}

void WaitDieLockTable::Latch(Slot& s) {
  for (uint32_t round = 0;; ++round) {
    uint32_t expected = 0;
    if (s.latch.compare_exchange_weak(expected, 1, std::memory_order_acquire)) return;
    Pause(round < 64 ? round : 64);
  }
}

bool WaitDieLockTable::Acquire(uint32_t slot, bool write, uint64_t ts, const std::function<void()>& before_wait) {
  Slot& s = slots_[slot];
  bool waited = false;
  for (uint32_t round = 0;; ++round) {
    Latch(s);
    const bool free = write ? (s.readers == 0 && s.writer_ts == 0) : s.writer_ts == 0;
    if (free) {
      if (write) {
        s.writer_ts = ts;
      } else {
        s.oldest_reader = s.readers == 0 || ts < s.oldest_reader ? ts : s.oldest_reader;
        s.readers++;
      }
      Unlatch(s);
      return true;
    }
    const uint64_t oldest_holder = s.writer_ts != 0 ? s.writer_ts : s.oldest_reader;
    Unlatch(s);
    if (ts > oldest_holder) return false;  // younger than a holder: die
    if (!waited) {
      waited = true;
      if (before_wait) before_wait();
    }
    Pause(round);
  }
}

void WaitDieLockTable::Release(uint32_t slot, bool write) {
  Slot& s = slots_[slot];
  Latch(s);
  if (write) {
    s.writer_ts = 0;
  } else {
    s.readers--;
  }
  Unlatch(s);
}

}  // namespace rolis::baselines
