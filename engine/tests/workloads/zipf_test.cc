// Zipf: draws stay in range, theta 0 is uniform, and under skew item 0's
// share is 1/zeta(n, theta), as the distribution says.
#include "workloads/zipf.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace rolis::workloads {
namespace {

TEST(Zipf, DrawsStayInRangeAndSkewMatchesTheDistribution) {
  constexpr uint64_t kN = 1000;
  constexpr int kDraws = 400000;
  for (double theta : {0.0, 0.5, 0.9, 0.99}) {
    Zipf z(kN, theta);
    Rng rng(7);
    std::vector<int> counts(kN);
    for (int i = 0; i < kDraws; ++i) {
      const uint64_t x = z.Next(rng);
      ASSERT_LT(x, kN);
      counts[x]++;
    }
    double zeta = 0;
    for (uint64_t i = 1; i <= kN; ++i) zeta += std::pow(static_cast<double>(i), -theta);
    const double want0 = kDraws / zeta;
    EXPECT_NEAR(counts[0], want0, want0 * 0.05 + 50) << "theta " << theta;
    if (theta > 0) EXPECT_GT(counts[0], counts[kN / 2] * 4) << "theta " << theta;
  }
}

TEST(Zipf, ThetaMustBeBelowOne) {
  EXPECT_TRUE(Zipf::ValidTheta(0));
  EXPECT_TRUE(Zipf::ValidTheta(0.99));
  EXPECT_FALSE(Zipf::ValidTheta(1));
  EXPECT_FALSE(Zipf::ValidTheta(-0.1));
}

}  // namespace
}  // namespace rolis::workloads
