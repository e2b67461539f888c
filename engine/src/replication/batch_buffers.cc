#include "batch_buffers.h"

namespace rolis::replication {

std::shared_ptr<BatchBuffers> BatchBuffers::Make(size_t max_buffers, size_t max_bytes) {
  return std::shared_ptr<BatchBuffers>(new BatchBuffers(max_buffers, max_bytes));
}

std::string BatchBuffers::Take(size_t reserve) {
  {
    std::lock_guard<std::mutex> g(mu_);
    if (!free_.empty()) {
      std::string b = std::move(free_.back());
      free_.pop_back();
      bytes_ -= b.capacity();
      return b;
    }
  }
  std::string b;
  b.reserve(reserve);
  return b;
}

std::shared_ptr<Batch> BatchBuffers::NewBatch() {
  return std::shared_ptr<Batch>(new Batch, [pool = shared_from_this()](Batch* b) {
    pool->GiveBack(std::move(b->payload));
    delete b;
  });
}

void BatchBuffers::GiveBack(std::string buffer) {
  const size_t cap = buffer.capacity();
  if (cap < kMinKept) return;  // small blocks are cheap to allocate anew
  std::lock_guard<std::mutex> g(mu_);
  // Full: the buffer (a parameter) is freed after the lock is let go.
  if (free_.size() >= max_buffers_ || bytes_ + cap > max_bytes_) return;
  bytes_ += cap;
  free_.push_back(std::move(buffer));
}

size_t BatchBuffers::buffers() const {
  std::lock_guard<std::mutex> g(mu_);
  return free_.size();
}

size_t BatchBuffers::bytes() const {
  std::lock_guard<std::mutex> g(mu_);
  return bytes_;
}

}  // namespace rolis::replication
