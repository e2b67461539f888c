// Search keys for the index. A key is a byte string ordered by memcmp, then
// by length. The index keeps the first 16 bytes of every key inline as two
// big-endian 64-bit "slices" (zero padded), so most comparisons are two
// integer compares; only keys that agree on 16 bytes and are both longer
// compare their remaining bytes.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace rolis::core {

inline constexpr uint32_t kInlineKeyBytes = 16;

// Big-endian load of n (0..8) bytes, zero padded on the right.
inline uint64_t LoadSlice(const char* p, size_t n) {
  uint64_t v = 0;
  if (n >= 8) {
    std::memcpy(&v, p, 8);
  } else {
    std::memcpy(&v, p, n);
  }
  return __builtin_bswap64(v);
}

inline uint64_t SliceAt(const char* p, size_t len, size_t off) {
  if (len <= off) return 0;
  size_t n = len - off;
  return LoadSlice(p + off, n < 8 ? n : 8);
}

struct KeyRef {
  const char* data = nullptr;
  uint32_t len = 0;
  uint64_t s0 = 0;
  uint64_t s1 = 0;

  KeyRef() = default;
  explicit KeyRef(std::string_view k)
      : data(k.data()), len(static_cast<uint32_t>(k.size())), s0(SliceAt(k.data(), k.size(), 0)),
        s1(SliceAt(k.data(), k.size(), 8)) {}
  std::string_view view() const { return {data, len}; }
};

inline int CompareLengths(uint32_t a, uint32_t b) { return a < b ? -1 : (a > b ? 1 : 0); }

// Compares a stored key, given by its slices and length, with k. `full`
// yields the stored key's bytes and length when the first 16 bytes tie and
// both keys are longer; it may fail (a torn optimistic read), and then the
// answer is arbitrary: the caller's version check rejects it.
template <class FullFn>
inline int CompareStored(uint64_t s0, uint64_t s1, uint32_t len, const KeyRef& k, FullFn&& full) {
  if (s0 != k.s0) return s0 < k.s0 ? -1 : 1;
  if (s1 != k.s1) return s1 < k.s1 ? -1 : 1;
  if (len <= kInlineKeyBytes || k.len <= kInlineKeyBytes) return CompareLengths(len, k.len);
  const char* p = nullptr;
  uint32_t plen = 0;
  if (!full(&p, &plen) || plen <= kInlineKeyBytes) return 0;
  uint32_t m = std::min(plen, k.len);
  int c = std::memcmp(p + kInlineKeyBytes, k.data + kInlineKeyBytes, m - kInlineKeyBytes);
  if (c != 0) return c;
  return CompareLengths(plen, k.len);
}

inline int CompareKeys(std::string_view a, std::string_view b) {
  size_t m = std::min(a.size(), b.size());
  int c = m ? std::memcmp(a.data(), b.data(), m) : 0;
  if (c != 0) return c;
  return a.size() < b.size() ? -1 : (a.size() > b.size() ? 1 : 0);
}

}  // namespace rolis::core
