// CRC-32C with SSE4.2's crc32 instruction, three streams at a time.
//
// One crc32 instruction folds 8 bytes but waits 3 cycles for the previous
// one, so a single stream runs at a third of the instruction's throughput.
// A long input is cut into three equal blocks whose CRCs are computed in
// one loop (three independent chains), then joined: for the raw register
// (before the final inversion) the CRC is linear,
//   raw(s, A B) = Shift(raw(s, A), |B|) ^ raw(0, B),
// where Shift(x, n) is x advanced over n zero bytes. Shift over a fixed n is
// linear in x, so it is four table lookups, one per byte of x; the tables
// are built once, at first use, by running the instruction over zeros.
// Batches are checksummed by the leader's replication loop and again by
// every follower on receipt, on the CPU the followers share (perf: 3-4% of
// it in replicated TPC-C before this).
#include "crc32c.h"

#include <array>
#include <cstring>
#include <string>

#include <nmmintrin.h>

// engine/CMakeLists.txt builds everything with -march=x86-64-v2, which has
// SSE4.2; there is no table fallback to keep in step with this code.
#if !defined(__SSE4_2__)
#error "crc32c.cc needs SSE4.2 (-march=x86-64-v2, set in engine/CMakeLists.txt)"
#endif

namespace rolis::replication {
namespace {

uint64_t Load64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

uint32_t RawOneStream(uint32_t c32, const char* p, size_t n) {
  uint64_t c = c32;
  for (; n >= 8; p += 8, n -= 8) c = _mm_crc32_u64(c, Load64(p));
  c32 = static_cast<uint32_t>(c);
  for (; n > 0; p++, n--) c32 = _mm_crc32_u8(c32, static_cast<unsigned char>(*p));
  return c32;
}

// Shift(x, kBytes) as four lookups.
template <size_t kBytes>
class ZeroShift {
 public:
  ZeroShift() {
    uint32_t of_bit[32];
    const std::string zeros(kBytes, '\0');
    for (int i = 0; i < 32; i++) of_bit[i] = RawOneStream(1u << i, zeros.data(), kBytes);
    for (int b = 0; b < 4; b++) {
      for (uint32_t v = 0; v < 256; v++) {
        uint32_t x = 0;
        for (int k = 0; k < 8; k++) {
          if (v & (1u << k)) x ^= of_bit[8 * b + k];
        }
        table_[b][v] = x;
      }
    }
  }
  uint32_t operator()(uint32_t x) const {
    return table_[0][x & 0xFF] ^ table_[1][(x >> 8) & 0xFF] ^ table_[2][(x >> 16) & 0xFF] ^ table_[3][x >> 24];
  }

 private:
  std::array<std::array<uint32_t, 256>, 4> table_;
};

// Three blocks of kBlock bytes per step, as long as three fit.
template <size_t kBlock>
uint32_t RawThreeStreams(uint32_t c32, const char** pp, size_t* nn) {
  static const ZeroShift<kBlock> shift;
  const char* p = *pp;
  size_t n = *nn;
  for (; n >= 3 * kBlock; p += 3 * kBlock, n -= 3 * kBlock) {
    uint64_t a = c32, b = 0, c = 0;
    for (size_t i = 0; i < kBlock; i += 8) {
      a = _mm_crc32_u64(a, Load64(p + i));
      b = _mm_crc32_u64(b, Load64(p + kBlock + i));
      c = _mm_crc32_u64(c, Load64(p + 2 * kBlock + i));
    }
    c32 = shift(shift(static_cast<uint32_t>(a)) ^ static_cast<uint32_t>(b)) ^ static_cast<uint32_t>(c);
  }
  *pp = p;
  *nn = n;
  return c32;
}

}  // namespace

uint32_t Crc32c(std::string_view data, uint32_t crc) {
  uint32_t c = ~crc;
  const char* p = data.data();
  size_t n = data.size();
  c = RawThreeStreams<4096>(c, &p, &n);
  c = RawThreeStreams<256>(c, &p, &n);
  c = RawOneStream(c, p, n);
  return ~c;
}

}  // namespace rolis::replication
