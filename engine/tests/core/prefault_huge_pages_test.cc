// Prefaulted memory with huge pages (PrefaultMemory(..., huge_pages=true),
// rolisd's --prefault-memory with --huge-pages): the range is faulted in as
// transparent huge pages where the host allows them, so the engine's 2 MiB
// page zeroing happens at start. Its own binary: a prefault is once per
// process.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "rolis/prefault.h"

namespace rolis {
namespace {

// "[madvise]" or "[always]" in the kernel's THP setting: advised memory may
// get huge pages.
bool HostAllowsAdvisedHugePages() {
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string line;
  std::getline(f, line);
  return line.find("[madvise]") != std::string::npos || line.find("[always]") != std::string::npos;
}

size_t AnonHugePagesBytes() {
  std::ifstream f("/proc/self/smaps_rollup");
  std::string key;
  size_t kib = 0, total = 0;
  std::string unit;
  while (f >> key) {
    if (key == "AnonHugePages:" && f >> kib >> unit) total += kib * 1024;
  }
  return total;
}

TEST(PrefaultHugePagesTest, TheRangeIsFaultedInAsHugePagesWhereTheHostAllowsThem) {
  if (!PrefaultSupported()) GTEST_SKIP() << "the system allocator cannot take prefaulted memory";
  if (!HostAllowsAdvisedHugePages()) GTEST_SKIP() << "transparent huge pages are off on this host";
  const size_t before = AnonHugePagesBytes();
  ASSERT_TRUE(PrefaultMemory(size_t{128} << 20, /*huge_pages=*/true).ok());
  const size_t after = AnonHugePagesBytes();
  // Not necessarily all of it (the kernel may not find free 2 MiB blocks),
  // but with no huge page at all the advice did not reach the range.
  EXPECT_GT(after, before) << "AnonHugePages " << before << " -> " << after << " bytes";
}

}  // namespace
}  // namespace rolis
