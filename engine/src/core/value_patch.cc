#include "rolis/value_patch.h"

#include <emmintrin.h>

#include <cstdint>
#include <cstring>

#include "rolis/copy_bytes.h"

namespace rolis {

namespace {

uint64_t Load64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

uint16_t Load16(const char* p) {
  uint16_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

constexpr size_t kRunHeader = 2 * sizeof(uint16_t);

char* PutRun(char* out, size_t at, const char* bytes, size_t len) {
  const uint16_t h[2] = {static_cast<uint16_t>(at), static_cast<uint16_t>(len)};
  std::memcpy(out, h, sizeof h);  // x86-64: little endian
  CopyBytes(out + sizeof h, bytes, len);  // a run is mostly a word or two
  return out + sizeof h + len;
}

// Calls fn(offset, bytes, length) for each run of a well-formed patch.
template <typename Fn>
void ForEachRun(std::string_view patch, Fn&& fn) {
  for (size_t at = 0; at < patch.size();) {
    const size_t off = Load16(patch.data() + at), n = Load16(patch.data() + at + 2);
    fn(off, patch.data() + at + kRunHeader, n);
    at += kRunHeader + n;
  }
}

// The 64 bytes at b and v are equal: four 16-byte compares and one test,
// half the instructions of eight 8-byte compares (AppendPatch was 6% of a
// replicated TPC-C worker's instructions, most of it comparing the
// unchanged bytes of stock rows).
bool Equal64(const char* b, const char* v) {
  auto eq = [&](int q) {
    return _mm_cmpeq_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 16 * q)),
                          _mm_loadu_si128(reinterpret_cast<const __m128i*>(v + 16 * q)));
  };
  const __m128i all = _mm_and_si128(_mm_and_si128(eq(0), eq(1)), _mm_and_si128(eq(2), eq(3)));
  return _mm_movemask_epi8(all) == 0xFFFF;
}

}  // namespace

bool WritePatch(std::string_view base, std::string_view value, size_t max_bytes, char* out, size_t* written) {
  if (base.size() != value.size() || value.size() > kMaxPatchedValue) return false;
  const size_t n = value.size();
  const char* b = base.data();
  const char* v = value.data();
  char* const start = out;
  const char* const limit = out + max_bytes;
  // Writes the run [at, at + len) of the new value, unless the patch would
  // then exceed its budget.
  auto put_run = [&](size_t at, size_t len) {
    if (static_cast<size_t>(limit - out) < kRunHeader + len) return false;
    out = PutRun(out, at, v + at, len);
    return true;
  };
  // Runs of differing 8-byte words (merging across an equal word would
  // cost 8 bytes to save a 4-byte header), then the tail bytes as one run.
  const size_t words_end = n & ~size_t{7};
  size_t i = 0;
  while (i < words_end) {
    // Most of a row is unchanged: equal bytes are skipped 64 at a time,
    // then a word at a time up to the next difference.
    while (i + 64 <= words_end && Equal64(b + i, v + i)) i += 64;
    while (i < words_end && Load64(b + i) == Load64(v + i)) i += 8;
    if (i == words_end) break;
    size_t j = i + 8;
    while (j < words_end && Load64(b + j) != Load64(v + j)) j += 8;
    if (!put_run(i, j - i)) return false;
    i = j;
  }
  if (words_end < n && std::memcmp(b + words_end, v + words_end, n - words_end) != 0 &&
      !put_run(words_end, n - words_end)) {
    return false;
  }
  *written = static_cast<size_t>(out - start);
  return true;
}

bool WriteRun(std::string_view value, size_t from, size_t to, size_t max_bytes, char* out, size_t* written) {
  if (from >= to || to > value.size() || value.size() > kMaxPatchedValue || kRunHeader + (to - from) > max_bytes) {
    return false;
  }
  *written = static_cast<size_t>(PutRun(out, from, value.data() + from, to - from) - out);
  return true;
}

bool AppendPatch(std::string_view base, std::string_view value, size_t max_bytes, std::string* out) {
  const size_t start = out->size();
  out->resize(start + max_bytes);
  size_t written = 0;
  const bool ok = WritePatch(base, value, max_bytes, out->data() + start, &written);
  out->resize(ok ? start + written : start);
  return ok;
}

bool PatchWellFormed(std::string_view patch) {
  size_t at = 0, end_of_last = 0;
  bool first = true;
  while (at < patch.size()) {
    if (patch.size() - at < kRunHeader) return false;
    const size_t off = Load16(patch.data() + at), len = Load16(patch.data() + at + 2);
    at += kRunHeader;
    if (len == 0 || patch.size() - at < len) return false;
    if (!first && off < end_of_last) return false;
    first = false;
    end_of_last = off + len;
    at += len;
  }
  return true;
}

bool PatchFits(std::string_view patch, size_t len) {
  bool fits = true;
  ForEachRun(patch, [&](size_t off, const char*, size_t n) { fits = fits && off + n <= len; });
  return fits;
}

bool ApplyPatch(std::string_view patch, char* value, size_t len) {
  // Checked first, so that a patch that does not fit changes nothing.
  if (!PatchFits(patch, len)) return false;
  ForEachRun(patch, [&](size_t off, const char* bytes, size_t n) { CopyBytes(value + off, bytes, n); });
  return true;
}

}  // namespace rolis
