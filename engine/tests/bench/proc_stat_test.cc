#include "proc_stat.h"

#include <gtest/gtest.h>

namespace rolis::bench {
namespace {

constexpr const char* kStat =
    "cpu  594504 176931 193185 874161 2674 0 12209 1175 0 0\n"
    "cpu0 341384 87287 73061 422170 663 0 3002 618 0 0\n"
    "cpu1 253119 89643 120123 451991 2010 0 9207 557 0 0\n"
    "cpu12 1 2 3 4 5 6 7 1000 0 0\n"
    "intr 123 4 5\n"
    "ctxt 1000\n";

TEST(ProcStat, StealSumsTheEighthFieldOfTheNamedCpusOnly) {
  EXPECT_DOUBLE_EQ(CpuTimesIn(kStat, {0}, 100).steal_ms, 6180);
  EXPECT_DOUBLE_EQ(CpuTimesIn(kStat, {1}, 100).steal_ms, 5570);
  EXPECT_DOUBLE_EQ(CpuTimesIn(kStat, {0, 1}, 100).steal_ms, 11750);
  EXPECT_DOUBLE_EQ(CpuTimesIn(kStat, {12}, 1000).steal_ms, 1000);  // cpu12 is not cpu1
  EXPECT_DOUBLE_EQ(CpuTimesIn(kStat, {5}, 100).steal_ms, 0);
}

TEST(ProcStat, BusyIsUserNiceSystemIrqSoftirq) {
  // cpu1: 253119 + 89643 + 120123 + 0 + 9207 ticks; idle, iowait and steal are not busy.
  EXPECT_DOUBLE_EQ(CpuTimesIn(kStat, {1}, 100).busy_ms, 4720920);
  EXPECT_DOUBLE_EQ(CpuTimesIn(kStat, {12}, 1000).busy_ms, 1 + 2 + 3 + 6 + 7);
  EXPECT_DOUBLE_EQ(CpuTimesIn(kStat, {5}, 100).busy_ms, 0);
}

TEST(ProcStat, ContextSwitchesAreMachineWide) {
  EXPECT_DOUBLE_EQ(CpuTimesIn(kStat, {0}, 100).context_switches, 1000);
  EXPECT_DOUBLE_EQ(CpuTimesIn("cpu0 1 2 3 4 5 6 7 9\n", {0}, 100).context_switches, -1);
}

TEST(ProcStat, OldKernelsWithoutTheStealFieldCountNoSteal) {
  EXPECT_DOUBLE_EQ(CpuTimesIn("cpu0 1 2 3 4 5 6 7\n", {0}, 100).steal_ms, 0);
  EXPECT_DOUBLE_EQ(CpuTimesIn("cpu0 1 2 3 4 5 6 7 9\n", {0}, 100).steal_ms, 90);
  EXPECT_DOUBLE_EQ(CpuTimesIn("cpu0 1 2 3 4 5 6 7 9\n", {0}, 0).steal_ms, -1);
}

TEST(ProcStat, ReadsThisMachine) {
  CpuTimes a = ProcStat::Read().Of({0});
  ASSERT_GE(a.steal_ms, 0) << "/proc/stat has no cpu0 line";
  ASSERT_GT(a.context_switches, 0);
  CpuTimes b = ProcStat::Read().Of({0});
  EXPECT_GE(b.steal_ms, a.steal_ms);
  EXPECT_GE(b.busy_ms, a.busy_ms);
  EXPECT_GE(b.context_switches, a.context_switches);
}

}  // namespace
}  // namespace rolis::bench
