// The latency histogram: bucket layout and quantiles within its stated error.
#include "histogram.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

namespace rolis::bench {
namespace {

TEST(LogLinearHistogram, BucketsCoverEveryValueOnce) {
  // Every value maps to a bucket whose [low, low + width) contains it, and
  // buckets are ordered like their values.
  size_t prev = 0;
  for (uint64_t v : {0ULL, 1ULL, 31ULL, 32ULL, 33ULL, 63ULL, 64ULL, 65ULL, 1000ULL, 123456789ULL, ~0ULL}) {
    const size_t b = LogLinearHistogram::BucketOf(v);
    ASSERT_LT(b, LogLinearHistogram::kBuckets);
    EXPECT_LE(LogLinearHistogram::BucketLow(b), v);
    EXPECT_LE(v - LogLinearHistogram::BucketLow(b), LogLinearHistogram::BucketWidth(b) - 1);
    EXPECT_GE(b, prev);
    prev = b;
  }
  for (uint64_t v = 0; v < 100000; ++v) {
    const size_t b = LogLinearHistogram::BucketOf(v);
    ASSERT_TRUE(LogLinearHistogram::BucketLow(b) <= v && v < LogLinearHistogram::BucketLow(b) + LogLinearHistogram::BucketWidth(b)) << v;
  }
}

TEST(LogLinearHistogram, QuantilesWithinThreePercentOfExact) {
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> dist(8.0, 1.0);
  std::vector<uint64_t> values;
  LogLinearHistogram a, b;
  for (int i = 0; i < 200000; ++i) {
    uint64_t v = static_cast<uint64_t>(dist(rng));
    values.push_back(v);
    (i % 2 ? a : b).Record(v);  // two "threads", merged below
  }
  a.Merge(b);
  ASSERT_EQ(a.total(), values.size());
  std::sort(values.begin(), values.end());
  for (double q : {0.5, 0.9, 0.99, 0.999}) {
    const double exact = static_cast<double>(values[static_cast<size_t>(std::ceil(q * values.size())) - 1]);
    EXPECT_NEAR(a.Quantile(q), exact, exact * 0.03 + 1) << "q=" << q;
  }
}

TEST(LogLinearHistogram, EmptyAndSingleValue) {
  LogLinearHistogram h;
  EXPECT_EQ(h.Quantile(0.5), 0);
  h.Record(17);
  EXPECT_EQ(h.Quantile(0.5), 17);
  EXPECT_EQ(h.Quantile(0.99), 17);
}

}  // namespace
}  // namespace rolis::bench
