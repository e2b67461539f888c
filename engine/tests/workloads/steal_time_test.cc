#include "steal_time.h"

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

TEST(StealTime, SumsTheEighthFieldOfTheNamedCpusOnly) {
  EXPECT_DOUBLE_EQ(StolenMillisIn(kStat, {0}, 100), 6180);
  EXPECT_DOUBLE_EQ(StolenMillisIn(kStat, {1}, 100), 5570);
  EXPECT_DOUBLE_EQ(StolenMillisIn(kStat, {0, 1}, 100), 11750);
  EXPECT_DOUBLE_EQ(StolenMillisIn(kStat, {12}, 1000), 1000);  // cpu12 is not cpu1
  EXPECT_DOUBLE_EQ(StolenMillisIn(kStat, {5}, 100), 0);
}

TEST(StealTime, OldKernelsWithoutTheStealFieldCountNothing) {
  EXPECT_DOUBLE_EQ(StolenMillisIn("cpu0 1 2 3 4 5 6 7\n", {0}, 100), 0);
  EXPECT_DOUBLE_EQ(StolenMillisIn("cpu0 1 2 3 4 5 6 7 9\n", {0}, 100), 90);
  EXPECT_DOUBLE_EQ(StolenMillisIn("cpu0 1 2 3 4 5 6 7 9\n", {0}, 0), -1);
}

TEST(StealTime, ReadsThisMachine) {
  double a = StolenMillis({0});
  ASSERT_GE(a, 0) << "/proc/stat has no cpu0 line";
  EXPECT_GE(StolenMillis({0}), a);
}

}  // namespace
}  // namespace rolis::bench
