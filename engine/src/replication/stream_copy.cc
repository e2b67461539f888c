#include "stream_copy.h"

#include <emmintrin.h>

#include <cstdint>
#include <cstring>

namespace rolis::replication {

void CopyPastCaches(char* dst, const char* src, size_t n) {
  constexpr size_t kLine = 64;
  // Up to the first line boundary, and the tail after the last whole line,
  // by plain stores: a line written in part by non-temporal stores would
  // go to memory in pieces.
  size_t head = (kLine - (reinterpret_cast<uintptr_t>(dst) & (kLine - 1))) & (kLine - 1);
  if (head > n) head = n;
  std::memcpy(dst, src, head);
  dst += head;
  src += head;
  n -= head;
  if (n < kLine) {
    std::memcpy(dst, src, n);
    return;
  }
  for (; n >= kLine; n -= kLine, dst += kLine, src += kLine) {
    auto* d = reinterpret_cast<__m128i*>(dst);
    const auto* s = reinterpret_cast<const __m128i*>(src);
    _mm_stream_si128(d, _mm_loadu_si128(s));
    _mm_stream_si128(d + 1, _mm_loadu_si128(s + 1));
    _mm_stream_si128(d + 2, _mm_loadu_si128(s + 2));
    _mm_stream_si128(d + 3, _mm_loadu_si128(s + 3));
  }
  std::memcpy(dst, src, n);
  _mm_sfence();
}

}  // namespace rolis::replication
