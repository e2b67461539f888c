#include "stream_copy.h"

#include <emmintrin.h>

#include <algorithm>
#include <cstdint>

#include "rolis/copy_bytes.h"

namespace rolis::replication {
namespace {

// 64 bytes from src to the line at dst (64-aligned), around the caches.
inline void StreamLine(char* dst, const char* src) {
  auto* d = reinterpret_cast<__m128i*>(dst);
  const auto* s = reinterpret_cast<const __m128i*>(src);
  _mm_stream_si128(d, _mm_loadu_si128(s));
  _mm_stream_si128(d + 1, _mm_loadu_si128(s + 1));
  _mm_stream_si128(d + 2, _mm_loadu_si128(s + 2));
  _mm_stream_si128(d + 3, _mm_loadu_si128(s + 3));
}

}  // namespace

void PastCacheWriter::Flush(std::string* out, size_t used) {
  CopyBytes(out->data() + used - waiting_, line_, waiting_);
  waiting_ = 0;
}

void PastCacheWriter::Append(std::string* out, size_t* used, std::string_view bytes) {
  const char* src = bytes.data();
  size_t n = bytes.size();
  size_t at = *used;
  if (out->size() < at + n) {
    // Grown, and moved if its capacity is short: the waiting bytes go in
    // first, and the lines then start where the new buffer puts them.
    Flush(out, at);
    // resize zero-fills what it adds (0.5% of a TPC-C worker when every
    // transaction grew the buffer): only the bytes past the buffer's old
    // end are filled, a reused buffer's own bytes are just overwritten.
    if (out->capacity() < at + n) out->reserve(std::max(at + n, 2 * out->capacity()));
    out->resize(at + n);
  }
  *used = at + n;
  char* const base = out->data();
  if (waiting_ > 0) {
    const size_t k = std::min(n, kLine - waiting_);
    CopyBytes(line_ + waiting_, src, k);
    waiting_ += k;
    src += k;
    n -= k;
    at += k;
    if (waiting_ < kLine) return;
    StreamLine(base + at - kLine, line_);
    waiting_ = 0;
  } else if (const size_t into_line = reinterpret_cast<uintptr_t>(base + at) & (kLine - 1)) {
    // A line that starts before the buffer (its first), or whose first
    // bytes were flushed: the rest of it in place, by plain stores.
    const size_t k = std::min(n, kLine - into_line);
    CopyBytes(base + at, src, k);
    src += k;
    n -= k;
    at += k;
  }
  for (; n >= kLine; n -= kLine, at += kLine, src += kLine) StreamLine(base + at, src);
  CopyBytes(line_, src, n);
  waiting_ = n;
}

void PastCacheWriter::Finish(std::string* out, size_t used) {
  Flush(out, used);
  _mm_sfence();
}

}  // namespace rolis::replication
