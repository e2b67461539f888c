#include "idle_watch.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace rolis::replication {
namespace {

using namespace std::chrono_literals;

// A call that keeps moving is never cancelled, however long it takes in all.
TEST(IdleWatch, ACallThatKeepsMovingIsNotCancelled) {
  grpc::ClientContext ctx;
  IdleWatch watch(&ctx, 100ms);
  const auto end = std::chrono::steady_clock::now() + 400ms;  // four idle bounds in all
  while (std::chrono::steady_clock::now() < end) {
    watch.Progress();
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_FALSE(watch.fired());
}

// One that stops moving is cancelled after the idle bound.
TEST(IdleWatch, ACallThatStopsMovingIsCancelled) {
  grpc::ClientContext ctx;
  IdleWatch watch(&ctx, 50ms);
  watch.Progress();
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (!watch.fired() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(5ms);
  EXPECT_TRUE(watch.fired());
}

// A watch ended before its bound cancels nothing.
TEST(IdleWatch, AWatchEndedEarlyCancelsNothing) {
  grpc::ClientContext ctx;
  const auto t0 = std::chrono::steady_clock::now();
  { IdleWatch watch(&ctx, 10s); }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 1s) << "the destructor does not wait out the bound";
}

}  // namespace
}  // namespace rolis::replication
