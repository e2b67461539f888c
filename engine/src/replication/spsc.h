// A bounded single-producer single-consumer ring. Producers may be several
// threads over time as long as they are serialized (by a mutex that gives
// happens-before between them), which is how workers are used.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <optional>

namespace rolis::replication {

template <typename T>
class SpscRing {
 public:
  explicit SpscRing(size_t capacity) : cap_(capacity + 1), buf_(new std::optional<T>[cap_]) {}

  // Producer. False when full.
  bool TryPush(T&& v) {
    size_t h = head_.load(std::memory_order_relaxed);
    size_t n = (h + 1) % cap_;
    if (n == tail_.load(std::memory_order_acquire)) return false;
    buf_[h].emplace(std::move(v));
    head_.store(n, std::memory_order_release);
    return true;
  }
  bool Full() const {
    size_t h = head_.load(std::memory_order_relaxed);
    return (h + 1) % cap_ == tail_.load(std::memory_order_acquire);
  }

  // Consumer.
  bool TryPop(T* out) {
    size_t t = tail_.load(std::memory_order_relaxed);
    if (t == head_.load(std::memory_order_acquire)) return false;
    *out = std::move(*buf_[t]);
    buf_[t].reset();
    tail_.store((t + 1) % cap_, std::memory_order_release);
    return true;
  }
  // Either side: how many items wait (exact for the producer's own pushes,
  // a lower bound for what the consumer has not yet taken).
  size_t Size() const {
    size_t h = head_.load(std::memory_order_acquire), t = tail_.load(std::memory_order_acquire);
    return (h + cap_ - t) % cap_;
  }
  bool Empty() const { return tail_.load(std::memory_order_acquire) == head_.load(std::memory_order_acquire); }

 private:
  const size_t cap_;
  std::unique_ptr<std::optional<T>[]> buf_;
  alignas(64) std::atomic<size_t> head_{0};
  alignas(64) std::atomic<size_t> tail_{0};
};

}  // namespace rolis::replication
