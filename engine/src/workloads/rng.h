// Cheap pseudo-random numbers for workload generators: wyrand (64-bit state,
// one multiply per draw) seeded through splitmix64. Not for cryptography.
#pragma once

#include <cstdint>

namespace rolis::workloads {

// splitmix64 step: turns any seed (0, 1, 2, ...) into well-mixed bits.
inline uint64_t SplitMix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

class Rng {
 public:
  explicit Rng(uint64_t seed = 0) {
    uint64_t s = seed;
    state_ = SplitMix64(s);
  }

  uint64_t Next() {
    state_ += 0xa0761d6478bd642fULL;
    unsigned __int128 m = static_cast<unsigned __int128>(state_) * (state_ ^ 0xe7037ed1a0b428dbULL);
    return static_cast<uint64_t>(m >> 64) ^ static_cast<uint64_t>(m);
  }

  // Uniform in [0, n), n > 0 (multiply-shift: no division, bias below 2^-64 * n).
  uint64_t Uniform(uint64_t n) {
    return static_cast<uint64_t>((static_cast<unsigned __int128>(Next()) * n) >> 64);
  }

  // Uniform in [lo, hi], lo <= hi.
  int64_t UniformInt(int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(Uniform(static_cast<uint64_t>(hi - lo) + 1));
  }

  // True with probability percent/100.
  bool Percent(uint32_t percent) { return Uniform(100) < percent; }

 private:
  uint64_t state_;
};

}  // namespace rolis::workloads
