// SpscRing (spsc.h): holds exactly the capacity it was given (a flow-control
// bound, not rounded to its power-of-two slots), keeps FIFO order across
// many wrap-arounds, lets go of what it pops, and hands every item from one
// thread to another once and in order.
#include "spsc.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <thread>

namespace rolis::replication {
namespace {

TEST(SpscRing, HoldsExactlyItsCapacityInOrderAcrossWrapArounds) {
  for (size_t cap : {size_t{1}, size_t{3}, size_t{64}, size_t{100}}) {
    SpscRing<uint64_t> ring(cap);
    uint64_t next_in = 0, next_out = 0;
    for (int round = 0; round < 50; ++round) {
      while (ring.TryPush(uint64_t{next_in})) ++next_in;
      EXPECT_EQ(next_in - next_out, cap) << "capacity " << cap;
      EXPECT_TRUE(ring.Full());
      EXPECT_EQ(ring.Size(), cap);
      // Take some (not all), so the counters wrap the slots at every offset.
      const size_t take = 1 + (round * 7) % cap;
      for (size_t i = 0; i < take; ++i) {
        uint64_t v = 0;
        ASSERT_TRUE(ring.TryPop(&v));
        EXPECT_EQ(v, next_out++);
      }
      EXPECT_FALSE(ring.Full());
      EXPECT_EQ(ring.Size(), cap - take);
    }
    uint64_t v = 0;
    while (ring.TryPop(&v)) EXPECT_EQ(v, next_out++);
    EXPECT_TRUE(ring.Empty());
    EXPECT_EQ(next_out, next_in);
  }
}

TEST(SpscRing, ZeroCapacityIsAlwaysFull) {
  SpscRing<int> ring(0);
  EXPECT_TRUE(ring.Full());
  EXPECT_FALSE(ring.TryPush(1));
  int v = 0;
  EXPECT_FALSE(ring.TryPop(&v));
}

TEST(SpscRing, APoppedItemIsNotKeptAliveByTheRing) {
  SpscRing<std::shared_ptr<int>> ring(4);
  auto item = std::make_shared<int>(7);
  std::weak_ptr<int> watch = item;
  ASSERT_TRUE(ring.TryPush(std::move(item)));
  std::shared_ptr<int> out;
  ASSERT_TRUE(ring.TryPop(&out));
  EXPECT_EQ(*out, 7);
  out.reset();
  EXPECT_TRUE(watch.expired());
}

TEST(SpscRing, EveryItemCrossesThreadsOnceAndInOrder) {
  constexpr uint64_t kItems = 2'000'000;
  SpscRing<uint64_t> ring(1000);
  std::thread producer([&] {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    for (uint64_t i = 0; i < kItems && std::chrono::steady_clock::now() < deadline;) {
      if (ring.TryPush(uint64_t{i})) ++i;
    }
  });
  uint64_t expected = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (expected < kItems && std::chrono::steady_clock::now() < deadline) {
    uint64_t v = 0;
    if (!ring.TryPop(&v)) continue;
    ASSERT_EQ(v, expected) << "out of order or lost";
    ++expected;
  }
  producer.join();
  EXPECT_EQ(expected, kItems);
  EXPECT_TRUE(ring.Empty());
}

}  // namespace
}  // namespace rolis::replication
