// Log-linear histogram of non-negative integers (latencies in clock ticks):
// exact below 32, then 32 linear sub-buckets per power of two, so a reported
// quantile is within ~3% of the true value. Recording is one array increment;
// each thread keeps its own and the driver merges them at the end.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace rolis::bench {

using std::size_t;

class LogLinearHistogram {
 public:
  static constexpr int kSubBits = 5;
  static constexpr uint64_t kSub = uint64_t{1} << kSubBits;
  static constexpr size_t kBuckets = (64 - kSubBits + 1) * kSub;

  LogLinearHistogram() : counts_(kBuckets, 0) {}

  static size_t BucketOf(uint64_t v) {
    if (v < kSub) return static_cast<size_t>(v);
    const int msb = 63 - std::countl_zero(v);
    const int shift = msb - kSubBits;
    return (static_cast<size_t>(shift + 1) << kSubBits) + static_cast<size_t>((v >> shift) & (kSub - 1));
  }
  // Smallest value in bucket b, and the bucket's width.
  static uint64_t BucketLow(size_t b) {
    if (b < kSub) return b;
    const int shift = static_cast<int>(b >> kSubBits) - 1;
    return (kSub + (b & (kSub - 1))) << shift;
  }
  static uint64_t BucketWidth(size_t b) { return b < kSub ? 1 : uint64_t{1} << ((b >> kSubBits) - 1); }

  void Record(uint64_t v) {
    ++counts_[BucketOf(v)];
    ++total_;
  }
  void Merge(const LogLinearHistogram& other) {
    for (size_t i = 0; i < kBuckets; ++i) counts_[i] += other.counts_[i];
    total_ += other.total_;
  }
  uint64_t total() const { return total_; }

  // The q-quantile (0 < q <= 1): the middle of the bucket that holds the
  // ceil(q * total)-th smallest value; 0 when empty.
  double Quantile(double q) const {
    if (total_ == 0) return 0;
    uint64_t rank = static_cast<uint64_t>(q * static_cast<double>(total_));
    if (static_cast<double>(rank) < q * static_cast<double>(total_)) ++rank;
    if (rank == 0) rank = 1;
    uint64_t seen = 0;
    for (size_t b = 0; b < kBuckets; ++b) {
      seen += counts_[b];
      if (seen >= rank) {
        return static_cast<double>(BucketLow(b)) + static_cast<double>(BucketWidth(b) - 1) / 2.0;
      }
    }
    return static_cast<double>(BucketLow(kBuckets - 1));
  }

 private:
  std::vector<uint64_t> counts_;
  uint64_t total_ = 0;
};

}  // namespace rolis::bench
