// Copies of a few bytes without a call to the library's memcpy.
//
// The replication log is written on the leader's commit path a piece at a
// time: keys, values and patch runs, most of them under 64 bytes (TPC-C's
// order lines, orders and stock runs; YCSB++'s 8-byte keys and values). A
// call to memcpy per piece was a third of the encoder's instructions for
// YCSB++ (docs/benchmarks.md, "Short copies inline"), and TPC-C's 17-64
// byte values each took one too. Up to 64 bytes are copied here as two
// overlapping loads and stores of the widest word (or pair of 16-byte
// vectors) that fits twice.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include <emmintrin.h>

namespace rolis {
namespace copy_bytes_detail {

// Copies len bytes, sizeof(Word) <= len <= 2 * sizeof(Word): the first and
// the last sizeof(Word) bytes, overlapping in the middle. Both loads come
// before the stores, so dst may not overlap src.
template <typename Word>
inline void CopyTwoWords(char* dst, const char* src, size_t len) {
  Word head, tail;
  std::memcpy(&head, src, sizeof head);
  std::memcpy(&tail, src + len - sizeof tail, sizeof tail);
  std::memcpy(dst, &head, sizeof head);
  std::memcpy(dst + len - sizeof tail, &tail, sizeof tail);
}

// The same with kVectors 16-byte vectors at each end, 16 * kVectors <= len
// <= 32 * kVectors. Vectors, not a struct of their size: GCC copied a
// 32-byte struct through the stack.
template <int kVectors>
inline void CopyTwoVectorRuns(char* dst, const char* src, size_t len) {
  __m128i head[kVectors], tail[kVectors];
  const char* const src_tail = src + len - 16 * kVectors;
  char* const dst_tail = dst + len - 16 * kVectors;
  for (int i = 0; i < kVectors; i++) {
    head[i] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 16 * i));
    tail[i] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src_tail + 16 * i));
  }
  for (int i = 0; i < kVectors; i++) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 16 * i), head[i]);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst_tail + 16 * i), tail[i]);
  }
}

}  // namespace copy_bytes_detail

// Copies len bytes from src to dst (which do not overlap): inline up to 64,
// by memcpy beyond.
inline void CopyBytes(char* dst, const char* src, size_t len) {
  using namespace copy_bytes_detail;
  if (len > 16) {
    if (len > 64) {
      std::memcpy(dst, src, len);
    } else if (len > 32) {
      CopyTwoVectorRuns<2>(dst, src, len);
    } else {
      CopyTwoVectorRuns<1>(dst, src, len);
    }
  } else if (len >= 8) {
    CopyTwoWords<uint64_t>(dst, src, len);
  } else if (len >= 4) {
    CopyTwoWords<uint32_t>(dst, src, len);
  } else {
    for (size_t i = 0; i < len; i++) dst[i] = src[i];
  }
}

}  // namespace rolis
