// Zipfian choice of one of n items (the YCSB generator of Gray et al.,
// "Quickly generating billion-record synthetic databases"): item i (0-based)
// is drawn with probability proportional to 1/(i+1)^theta. theta = 0 is
// uniform; 0 < theta < 1 skews toward the low items (the Rolis paper's
// skewed YCSB++, TAPIR's Retwis at 0.75). Items are not scrambled: the hot
// ones are the first records.
#pragma once

#include <cmath>
#include <cstdint>

#include "workloads/rng.h"

namespace rolis::workloads {

class Zipf {
 public:
  // n > 0, 0 <= theta < 1 (checked by the caller: ValidTheta).
  Zipf(uint64_t n, double theta) : n_(n), theta_(theta) {
    if (theta_ <= 0 || n_ < 2) return;
    zetan_ = Zeta(n_, theta_);
    const double zeta2 = 1 + std::pow(0.5, theta_);
    alpha_ = 1 / (1 - theta_);
    eta_ = (1 - std::pow(2.0 / static_cast<double>(n_), 1 - theta_)) / (1 - zeta2 / zetan_);
    half_pow_theta_ = 1 + std::pow(0.5, theta_);
  }

  static bool ValidTheta(double theta) { return theta >= 0 && theta < 1; }

  uint64_t Next(Rng& rng) const {
    if (theta_ <= 0 || n_ < 2) return rng.Uniform(n_);
    const double u = static_cast<double>(rng.Next() >> 11) * 0x1.0p-53;
    const double uz = u * zetan_;
    if (uz < 1) return 0;
    if (uz < half_pow_theta_) return 1;
    const uint64_t i = static_cast<uint64_t>(static_cast<double>(n_) * std::pow(eta_ * u - eta_ + 1, alpha_));
    return i < n_ ? i : n_ - 1;
  }

  double theta() const { return theta_; }

 private:
  // sum_{i=1..n} i^-theta: exact for the first 10^7 terms, the integral beyond.
  static double Zeta(uint64_t n, double theta) {
    const uint64_t exact = n < 10000000 ? n : 10000000;
    double z = 0;
    for (uint64_t i = 1; i <= exact; ++i) z += std::pow(static_cast<double>(i), -theta);
    if (n > exact) {
      z += (std::pow(static_cast<double>(n), 1 - theta) - std::pow(static_cast<double>(exact), 1 - theta)) / (1 - theta);
    }
    return z;
  }

  uint64_t n_;
  double theta_;
  double zetan_ = 0, alpha_ = 0, eta_ = 0, half_pow_theta_ = 0;
};

}  // namespace rolis::workloads
