#include "rolis/value_patch.h"

#include <cstring>

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

void PutRun(std::string* out, size_t at, const char* bytes, size_t len) {
  const uint16_t h[2] = {static_cast<uint16_t>(at), static_cast<uint16_t>(len)};
  out->append(reinterpret_cast<const char*>(h), sizeof h);  // x86-64: little endian
  out->append(bytes, len);
}

constexpr size_t kRunHeader = 2 * sizeof(uint16_t);

}  // namespace

uint64_t ValueHash(std::string_view value) {
  // Four multiply-mix lanes over 8-byte words (independent chains: a
  // 320-byte row in ~60 cycles), then the odd words, the tail and the length.
  constexpr uint64_t kMul = 0x9E3779B97F4A7C15ull;
  uint64_t h[4] = {0x243F6A8885A308D3ull, 0x13198A2E03707344ull, 0xA4093822299F31D0ull, 0x082EFA98EC4E6C89ull};
  const char* p = value.data();
  size_t n = value.size();
  for (; n >= 32; p += 32, n -= 32) {
    for (int l = 0; l < 4; ++l) {
      h[l] = (h[l] ^ Load64(p + 8 * l)) * kMul;
      h[l] ^= h[l] >> 29;
    }
  }
  for (int l = 0; n >= 8; p += 8, n -= 8, ++l) {
    h[l] = (h[l] ^ Load64(p)) * kMul;
    h[l] ^= h[l] >> 29;
  }
  uint64_t tail = 0;
  std::memcpy(&tail, p, n);  // n < 8
  uint64_t a = (h[0] ^ tail ^ (value.size() << 1)) * kMul;
  a = (a ^ (h[1] * kMul)) * kMul;
  a = (a ^ (h[2] * kMul) ^ (h[3] >> 7)) * kMul;
  a = (a ^ h[3]) * kMul;
  return a ^ (a >> 32);
}

bool AppendPatch(std::string_view base, std::string_view value, size_t max_bytes, std::string* out) {
  if (base.size() != value.size() || value.size() > kMaxPatchedValue) return false;
  const size_t start = out->size();
  const size_t n = value.size();
  const char* b = base.data();
  const char* v = value.data();
  // Runs of differing 8-byte words (merging across an equal word would
  // cost 8 bytes to save a 4-byte header), then the tail bytes as one run.
  size_t i = 0;
  const size_t words_end = n & ~size_t{7};
  while (i < words_end) {
    if (Load64(b + i) == Load64(v + i)) {
      i += 8;
      continue;
    }
    size_t j = i + 8;
    while (j < words_end && Load64(b + j) != Load64(v + j)) j += 8;
    if (out->size() - start + kRunHeader + (j - i) > max_bytes) {
      out->resize(start);
      return false;
    }
    PutRun(out, i, v + i, j - i);
    i = j;
  }
  if (words_end < n && std::memcmp(b + words_end, v + words_end, n - words_end) != 0) {
    if (out->size() - start + kRunHeader + (n - words_end) > max_bytes) {
      out->resize(start);
      return false;
    }
    PutRun(out, words_end, v + words_end, n - words_end);
  }
  return true;
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
  for (size_t at = 0; at < patch.size();) {
    const size_t off = Load16(patch.data() + at), n = Load16(patch.data() + at + 2);
    if (off + n > len) return false;
    at += kRunHeader + n;
  }
  return true;
}

bool ApplyPatch(std::string_view patch, char* value, size_t len) {
  // Checked first, so that a patch that does not fit changes nothing.
  if (!PatchFits(patch, len)) return false;
  for (size_t at = 0; at < patch.size();) {
    const size_t off = Load16(patch.data() + at), n = Load16(patch.data() + at + 2);
    std::memcpy(value + off, patch.data() + at + kRunHeader, n);
    at += kRunHeader + n;
  }
  return true;
}

}  // namespace rolis
