// The commits and reads that wait for the leader's watermark G to pass a
// timestamp of this epoch (docs/replication.md, "Normal operation": a
// transaction is acknowledged once G covers it).
//
// Invariant kept here: I3's acknowledgement side. A waiter is completed ok
// only when G (as LeaderStreams publishes it) covers its ts while this
// member is the open leader; once it stops leading, every waiter is
// completed as failed (the outcome is unknown to the client). Each waiter
// is completed exactly once, outside the lock.
//
// Lock order: mu_ is a leaf (taken under the leader's lock by
// LeaderStreams; completions run after it is released).
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <queue>
#include <string>
#include <utility>
#include <vector>

namespace rolis::replication {

// Completion of an AwaitWatermark: ok, or not (the member stopped leading
// before G passed the key; the transaction's outcome is unknown).
class WatermarkWaiter {
 public:
  virtual ~WatermarkWaiter() = default;
  virtual void Done(bool ok, const std::string& why) = 0;
};

class WatermarkWaiters {
 public:
  // The leader's published state, read under the lock (so that a waiter
  // cannot slip past a step-down): open for writes, and G's ts while open.
  WatermarkWaiters(const std::atomic<bool>* open, const std::atomic<uint64_t>* covered_ts)
      : open_(open), covered_ts_(covered_ts) {}

  // Waits for G to cover `ts` while open; otherwise `w` fails at the next Complete.
  void Add(uint64_t ts, WatermarkWaiter* w);
  bool empty() const;
  // Every waiter fails (at the next Complete) with `why`.
  void FailAll(const std::string& why);
  // Completes the waiters G covers while open, or fails them all (not
  // open), and those already failed; outside the lock.
  void Complete();

 private:
  struct Waiter {
    uint64_t ts;
    WatermarkWaiter* w;
    bool operator>(const Waiter& o) const { return ts > o.ts; }
  };
  const std::atomic<bool>* const open_;
  const std::atomic<uint64_t>* const covered_ts_;
  mutable std::mutex mu_;
  std::priority_queue<Waiter, std::vector<Waiter>, std::greater<Waiter>> waiting_;
  std::vector<std::pair<WatermarkWaiter*, std::string>> failed_;  // to complete with failure
};

}  // namespace rolis::replication
