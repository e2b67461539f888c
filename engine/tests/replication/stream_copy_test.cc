// CopyPastCaches (stream_copy.h) copies like memcpy at every alignment and
// length, whole lines by non-temporal stores and the ends by plain ones,
// and writes nothing outside [dst, dst + n).
#include "stream_copy.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace rolis::replication {
namespace {

TEST(CopyPastCaches, CopiesEveryLengthAtEveryAlignmentAndNothingElse) {
  std::string src(1100, '\0');
  for (size_t i = 0; i < src.size(); i++) src[i] = static_cast<char>(i * 131 + 7);
  alignas(64) std::vector<char> dst(1024 + 256);
  for (size_t offset = 0; offset < 64; offset++) {
    for (size_t n : {0, 1, 15, 16, 63, 64, 65, 127, 128, 129, 200, 511, 512, 700, 1024}) {
      std::fill(dst.begin(), dst.end(), '\x5a');
      const size_t base = (64 - (reinterpret_cast<uintptr_t>(dst.data()) & 63)) & 63;  // a line boundary
      char* to = dst.data() + base + offset;
      CopyPastCaches(to, src.data() + offset % 7, n);
      ASSERT_TRUE(std::string_view(to, n) == std::string_view(src).substr(offset % 7, n))
          << "offset " << offset << " length " << n;
      for (char* p = dst.data(); p < to; p++) ASSERT_EQ(*p, '\x5a') << "written before dst";
      for (char* p = to + n; p < dst.data() + dst.size(); p++) ASSERT_EQ(*p, '\x5a') << "written past dst + n";
    }
  }
}

}  // namespace
}  // namespace rolis::replication
