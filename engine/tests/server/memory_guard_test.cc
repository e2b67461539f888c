#include "server/memory_guard.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace rolis::server {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;

TEST(MemoryGuardTest, PressureStartsAtTheWatermarkAndClearsFivePointsBelow) {
  uint64_t now = 0;
  MemoryGuard g(1000 * kMiB, 90, [&] { return now; });
  EXPECT_EQ(g.high_bytes(), 900 * kMiB);
  EXPECT_EQ(g.low_bytes(), 850 * kMiB);

  now = 899 * kMiB;
  EXPECT_EQ(g.Sample(), 0);
  EXPECT_FALSE(g.under_pressure());
  now = 900 * kMiB;
  EXPECT_EQ(g.Sample(), 1);
  EXPECT_TRUE(g.under_pressure());
  EXPECT_EQ(g.resident(), 900 * kMiB);
  // Between the two thresholds it stays on: no flapping.
  now = 860 * kMiB;
  EXPECT_EQ(g.Sample(), 0);
  EXPECT_TRUE(g.under_pressure());
  now = 850 * kMiB;
  EXPECT_EQ(g.Sample(), 0);
  EXPECT_TRUE(g.under_pressure());
  now = 849 * kMiB;
  EXPECT_EQ(g.Sample(), -1);
  EXPECT_FALSE(g.under_pressure());
  // ... and, once off, stays off until the watermark again.
  now = 899 * kMiB;
  EXPECT_EQ(g.Sample(), 0);
  EXPECT_FALSE(g.under_pressure());
  now = 2000 * kMiB;
  EXPECT_EQ(g.Sample(), 1);
  EXPECT_EQ(g.Sample(), 0);
  EXPECT_TRUE(g.under_pressure());
}

TEST(MemoryGuardTest, NoLimitNeverRaisesPressure) {
  int reads = 0;
  MemoryGuard g(0, 90, [&] {
    reads++;
    return ~uint64_t{0};
  });
  EXPECT_EQ(g.Sample(), 0);
  EXPECT_FALSE(g.under_pressure());
  EXPECT_EQ(reads, 0);
  g.Start(std::chrono::milliseconds(1));  // no thread without a limit
  g.Stop();
}

TEST(MemoryGuardTest, AnUnreadableSampleKeepsTheState) {
  uint64_t now = 950 * kMiB;
  MemoryGuard g(1000 * kMiB, 90, [&] { return now; });
  EXPECT_EQ(g.Sample(), 1);
  now = 0;
  EXPECT_EQ(g.Sample(), 0);
  EXPECT_TRUE(g.under_pressure());
}

TEST(MemoryGuardTest, RefusalMessageSaysWhatToDo) {
  uint64_t now = 950 * kMiB;
  MemoryGuard g(1000 * kMiB, 90, [&] { return now; });
  g.Sample();
  EXPECT_EQ(g.RefusalMessage(),
            "memory nearly full (950 MiB of 1000 MiB limit): writes refused until it drops below 850 MiB; "
            "raise resources.limits.memory (--memory-limit) or delete data");
}

TEST(MemoryGuardTest, TheSamplerThreadFollowsTheReadings) {
  std::atomic<uint64_t> now{10 * kMiB};
  MemoryGuard g(100 * kMiB, 90, [&] { return now.load(); });
  g.Start(std::chrono::milliseconds(1));
  EXPECT_FALSE(g.under_pressure());
  now = 95 * kMiB;
  for (int i = 0; i < 5000 && !g.under_pressure(); i++) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_TRUE(g.under_pressure());
  now = 10 * kMiB;
  for (int i = 0; i < 5000 && g.under_pressure(); i++) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_FALSE(g.under_pressure());
  g.Stop();
}

TEST(MemoryGuardTest, ResidentBytesOfThisProcess) {
  EXPECT_GT(ReadResidentBytes(), uint64_t{1} << 20);
}

TEST(MemoryGuardTest, CgroupLimitFromV2OrV1FilesWithNoLimitAsNone) {
  auto root = std::filesystem::temp_directory_path() / ("memory_guard_test_" + std::to_string(getpid()));
  std::filesystem::create_directories(root / "memory");
  auto write = [](const std::filesystem::path& p, const std::string& text) { std::ofstream(p) << text; };
  EXPECT_EQ(CgroupMemoryLimit(root.string()), std::nullopt);  // no files

  write(root / "memory/memory.limit_in_bytes", "9223372036854771712\n");  // v1 "no limit"
  EXPECT_EQ(CgroupMemoryLimit(root.string()), std::nullopt);
  write(root / "memory/memory.limit_in_bytes", "536870912\n");
  EXPECT_EQ(CgroupMemoryLimit(root.string()), uint64_t{536870912});

  write(root / "memory.max", "max\n");  // v2 without a limit: v1 is then consulted
  EXPECT_EQ(CgroupMemoryLimit(root.string()), uint64_t{536870912});
  write(root / "memory.max", "1073741824\n");
  EXPECT_EQ(CgroupMemoryLimit(root.string()), uint64_t{1} << 30);
  write(root / "memory.max", "garbage\n");
  EXPECT_EQ(CgroupMemoryLimit(root.string()), uint64_t{536870912});
  std::filesystem::remove_all(root);
}

}  // namespace
}  // namespace rolis::server
