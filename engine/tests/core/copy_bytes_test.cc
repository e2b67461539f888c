// rolis::CopyBytes (rolis/copy_bytes.h) copies exactly len bytes for every
// length its five inline cases and its memcpy case cover, from and to any
// alignment, and touches nothing around the destination.
#include "rolis/copy_bytes.h"

#include <gtest/gtest.h>

#include <string>

namespace rolis {
namespace {

TEST(CopyBytes, CopiesEveryLengthAtEveryAlignmentAndNothingElse) {
  constexpr size_t kLongest = 200, kGuard = 80;
  std::string src(kLongest + 16, '\0');
  for (size_t i = 0; i < src.size(); i++) src[i] = static_cast<char>(i * 37 + 1);
  for (size_t len = 0; len <= kLongest; len++) {
    for (size_t from = 0; from < 16; from++) {
      for (size_t to = 0; to < 16; to += 5) {
        std::string dst(kGuard + to + len + kGuard, '\x5a');
        CopyBytes(dst.data() + kGuard + to, src.data() + from, len);
        ASSERT_EQ(dst.substr(kGuard + to, len), src.substr(from, len)) << "len " << len << " from " << from;
        ASSERT_EQ(dst.substr(0, kGuard + to), std::string(kGuard + to, '\x5a')) << "written before, len " << len;
        ASSERT_EQ(dst.substr(kGuard + to + len), std::string(kGuard, '\x5a')) << "written after, len " << len;
      }
    }
  }
}

}  // namespace
}  // namespace rolis
