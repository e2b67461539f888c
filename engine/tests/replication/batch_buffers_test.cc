// BatchBuffers: a freed batch's payload buffer comes back to the worker
// with its bytes, within the pool's bounds, even after its maker is gone.
#include "batch_buffers.h"

#include <gtest/gtest.h>

namespace rolis::replication {
namespace {

std::shared_ptr<Batch> Filled(BatchBuffers& pool, size_t n, char c) {
  std::shared_ptr<Batch> b = pool.NewBatch();
  b->payload = pool.Take(n);
  b->payload.assign(n, c);
  return b;
}

TEST(BatchBuffers, AFreedBatchsBufferComesBackWithItsBytes) {
  auto pool = BatchBuffers::Make(4, 1 << 20);
  std::shared_ptr<Batch> b = Filled(*pool, 5000, 'x');
  const char* at = b->payload.data();
  BatchPtr sent = b;  // the log or a send still holds it
  b.reset();
  EXPECT_EQ(pool->buffers(), 0u);
  sent.reset();
  ASSERT_EQ(pool->buffers(), 1u);
  EXPECT_GE(pool->bytes(), 5000u);
  std::string again = pool->Take(16);
  EXPECT_EQ(again.data(), at);
  EXPECT_EQ(again, std::string(5000, 'x'));  // not cleared: the codec overwrites it
  EXPECT_EQ(pool->buffers(), 0u);
  EXPECT_EQ(pool->bytes(), 0u);
  // Empty: a new buffer with the capacity asked for.
  EXPECT_GE(pool->Take(70000).capacity(), 70000u);
}

TEST(BatchBuffers, KeepsNoMoreThanItsBoundsAndNoSmallBuffers) {
  auto by_count = BatchBuffers::Make(2, 1 << 20);
  for (int i = 0; i < 5; i++) Filled(*by_count, 4096, 'a');  // each freed at once
  std::vector<std::shared_ptr<Batch>> held;
  for (int i = 0; i < 5; i++) held.push_back(Filled(*by_count, 4096, 'a'));
  held.clear();
  EXPECT_EQ(by_count->buffers(), 2u);

  auto by_bytes = BatchBuffers::Make(100, 3 * 8192);
  for (int i = 0; i < 5; i++) held.push_back(Filled(*by_bytes, 8192, 'b'));
  held.clear();
  EXPECT_LE(by_bytes->bytes(), 3u * 8192);
  EXPECT_GE(by_bytes->buffers(), 1u);

  auto small = BatchBuffers::Make(100, 1 << 20);
  Filled(*small, 100, 'c');
  EXPECT_EQ(small->buffers(), 0u);
}

TEST(BatchBuffers, ABatchOutlivesThePoolsOwner) {
  auto pool = BatchBuffers::Make(4, 1 << 20);
  std::shared_ptr<Batch> b = Filled(*pool, 4096, 'z');
  std::weak_ptr<BatchBuffers> watch = pool;
  pool.reset();  // the Replica is gone; gRPC still sends the batch
  EXPECT_FALSE(watch.expired());
  EXPECT_EQ(b->payload, std::string(4096, 'z'));
  b.reset();
  EXPECT_TRUE(watch.expired());
}

}  // namespace
}  // namespace rolis::replication
