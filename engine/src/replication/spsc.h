// A bounded single-producer single-consumer ring. Producers may be several
// threads over time as long as they are serialized (by a mutex that gives
// happens-before between them), which is how workers are used.
//
// Per push or pop: no division (the slots are a power of two, indexed by
// masking free-running counters) and, in the common case, no read of the
// other side's counter (each side keeps the last value it saw and reads
// the shared one again only when that says full, or empty). A worker
// pushes once per transaction (rolis-bench's latency samples): the modulo
// and the other side's cache line on every push were measurable there.
#pragma once

#include <atomic>
#include <bit>
#include <cstddef>
#include <memory>
#include <utility>

namespace rolis::replication {

template <typename T>
class SpscRing {
 public:
  explicit SpscRing(size_t capacity)
      : cap_(capacity), mask_(std::bit_ceil(capacity < 1 ? size_t{1} : capacity) - 1),
        buf_(new T[mask_ + 1]) {}

  // Producer. False when `capacity` items wait.
  bool TryPush(T&& v) {
    const size_t h = head_.load(std::memory_order_relaxed);
    if (h - tail_seen_ >= cap_) {
      tail_seen_ = tail_.load(std::memory_order_acquire);
      if (h - tail_seen_ >= cap_) return false;
    }
    buf_[h & mask_] = std::move(v);
    head_.store(h + 1, std::memory_order_release);
    return true;
  }
  bool Full() const {
    return head_.load(std::memory_order_relaxed) - tail_.load(std::memory_order_acquire) >= cap_;
  }

  // Consumer.
  bool TryPop(T* out) {
    const size_t t = tail_.load(std::memory_order_relaxed);
    if (t == head_seen_) {
      head_seen_ = head_.load(std::memory_order_acquire);
      if (t == head_seen_) return false;
    }
    // Moved out: a batch's shared_ptr left behind is null, so the ring does
    // not keep the batch alive.
    *out = std::move(buf_[t & mask_]);
    tail_.store(t + 1, std::memory_order_release);
    return true;
  }
  // Either side: how many items wait (exact for the producer's own pushes,
  // a lower bound for what the consumer has not yet taken).
  size_t Size() const {
    const size_t t = tail_.load(std::memory_order_acquire);
    return head_.load(std::memory_order_acquire) - t;
  }
  bool Empty() const { return tail_.load(std::memory_order_acquire) == head_.load(std::memory_order_acquire); }

 private:
  const size_t cap_;
  const size_t mask_;
  std::unique_ptr<T[]> buf_;
  // Free-running counters (never wrapped), each on its own line with what
  // its writer last saw of the other.
  alignas(64) std::atomic<size_t> head_{0};
  size_t tail_seen_ = 0;  // producer's
  alignas(64) std::atomic<size_t> tail_{0};
  size_t head_seen_ = 0;  // consumer's
};

}  // namespace rolis::replication
