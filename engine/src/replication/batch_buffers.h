// The payload buffers of one leader stream's batches, reused.
//
// A batch's buffer is freed long after the worker filled it (when the log
// is compacted and the last send is done) and on another thread. Given back
// to the allocator, the worker's next buffers came from memory it had not
// touched: in replicated YCSB++ the leader's worker took ~8,000 more page
// faults per second than unreplicated for the first seconds of a run, on a
// VM where a first touch costs ~10 µs (docs/benchmarks.md, "Batch buffers
// reused, written past the caches"). Here a batch made by NewBatch() gives
// its payload back when its last reference drops, and Take() hands it to the
// worker again, its bytes as they are (the codec's AppendTxnAt overwrites
// them without a zero fill).
//
// Batches may outlive the Replica (gRPC holds one until it is sent): each
// holds a reference to the pool.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "types.h"

namespace rolis::replication {

class BatchBuffers : public std::enable_shared_from_this<BatchBuffers> {
 public:
  // Keeps at most `max_buffers` buffers and `max_bytes` of capacity; the
  // rest go back to the allocator.
  static std::shared_ptr<BatchBuffers> Make(size_t max_buffers, size_t max_bytes);

  // A buffer for the next batch: the most recently given back, or a new
  // one with `reserve` bytes of capacity.
  std::string Take(size_t reserve);
  // A batch whose payload comes back here when it is freed.
  std::shared_ptr<Batch> NewBatch();

  size_t buffers() const;
  size_t bytes() const;

 private:
  BatchBuffers(size_t max_buffers, size_t max_bytes) : max_buffers_(max_buffers), max_bytes_(max_bytes) {}
  void GiveBack(std::string buffer);

  static constexpr size_t kMinKept = 1024;
  const size_t max_buffers_, max_bytes_;
  mutable std::mutex mu_;
  std::vector<std::string> free_;  // newest last
  size_t bytes_ = 0;               // capacity held in free_
};

}  // namespace rolis::replication
