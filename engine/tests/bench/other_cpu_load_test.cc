// OtherCpuLoad (rolis-bench --other-cpu-load): each kind runs on the CPU it
// is given until the object goes, and goes promptly.
#include "other_cpu_load.h"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <thread>

namespace rolis::bench {
namespace {

using Clock = std::chrono::steady_clock;

TEST(OtherCpuLoad, NamesRoundTripAndUnknownOnesAreRefused) {
  for (OtherCpuLoadKind k : {OtherCpuLoadKind::kNone, OtherCpuLoadKind::kPause, OtherCpuLoadKind::kStream,
                             OtherCpuLoadKind::kRandom}) {
    OtherCpuLoadKind parsed = OtherCpuLoadKind::kNone;
    ASSERT_TRUE(ParseOtherCpuLoadKind(OtherCpuLoadName(k), &parsed)) << OtherCpuLoadName(k);
    EXPECT_EQ(parsed, k);
  }
  OtherCpuLoadKind parsed = OtherCpuLoadKind::kPause;
  EXPECT_FALSE(ParseOtherCpuLoadKind("lots", &parsed));
  EXPECT_FALSE(ParseOtherCpuLoadKind("", &parsed));
  EXPECT_EQ(parsed, OtherCpuLoadKind::kPause);  // untouched
}

TEST(OtherCpuLoad, EachKindWorksUntilItGoes) {
  for (OtherCpuLoadKind k : {OtherCpuLoadKind::kPause, OtherCpuLoadKind::kStream, OtherCpuLoadKind::kRandom}) {
    auto load = std::make_unique<OtherCpuLoad>(k, std::vector<int>{0}, size_t{4} << 20);
    const auto deadline = Clock::now() + std::chrono::seconds(10);
    while (load->rounds() < 3 && Clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    EXPECT_GE(load->rounds(), 3u) << OtherCpuLoadName(k);
    EXPECT_EQ(load->unpinned(), 0) << "CPU 0 is always there";
    const auto stop = Clock::now();
    load.reset();  // joins its thread
    EXPECT_LT(Clock::now() - stop, std::chrono::seconds(1)) << OtherCpuLoadName(k);
  }
}

TEST(OtherCpuLoad, NoneStartsNothing) {
  OtherCpuLoad load(OtherCpuLoadKind::kNone, {0});
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(load.rounds(), 0u);
}

}  // namespace
}  // namespace rolis::bench
