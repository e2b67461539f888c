// Wait-die: shared locks share, an exclusive one excludes, a younger
// requester dies at once, an older one waits until the holder lets go.
#include "baselines/wait_die_lock_table.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace rolis::baselines {
namespace {

TEST(WaitDieLockTable, SharedShareExclusiveExcludesYoungerDies) {
  WaitDieLockTable t(10);
  const uint32_t s = t.SlotOf(42);
  ASSERT_TRUE(t.Acquire(s, /*write=*/false, 5, nullptr));
  ASSERT_TRUE(t.Acquire(s, false, 9, nullptr));  // readers share
  EXPECT_FALSE(t.Acquire(s, /*write=*/true, 10, nullptr));  // younger than the readers: dies
  t.Release(s, false);
  t.Release(s, false);
  ASSERT_TRUE(t.Acquire(s, true, 10, nullptr));
  EXPECT_FALSE(t.Acquire(s, false, 11, nullptr));  // younger than the writer: dies
  t.Release(s, true);
}

TEST(WaitDieLockTable, OlderWaitsForTheHolder) {
  WaitDieLockTable t(10);
  const uint32_t s = t.SlotOf(7);
  ASSERT_TRUE(t.Acquire(s, true, 20, nullptr));
  std::atomic<bool> granted{false}, waited{false};
  std::thread older([&] {
    granted = t.Acquire(s, true, 3, [&] { waited = true; });
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  EXPECT_TRUE(waited.load());
  EXPECT_FALSE(granted.load());
  t.Release(s, true);
  older.join();
  EXPECT_TRUE(granted.load());
  t.Release(s, true);
}

}  // namespace
}  // namespace rolis::baselines
