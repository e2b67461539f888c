// VersionCache (version_cache.h): freed versions are reused by the next
// version of the same size class on the same thread, never by another
// class; the cache holds at most kMaxCachedBytes of blocks; versions larger
// than its largest class bypass it.
#include "version_cache.h"

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>

#include "record.h"

namespace rolis::core {
namespace {

Version* MakeVersion(size_t value_bytes, char fill = 'v') {
  std::string value(value_bytes, fill);
  return NewVersion(/*ts=*/7, /*epoch=*/3, /*repl_epoch=*/1, /*absent=*/false, value.data(),
                    static_cast<uint32_t>(value.size()));
}

TEST(VersionCache, AFreedVersionIsReusedByTheNextOfItsClassOnThisThread) {
  std::thread([] {  // a fresh thread: an empty cache
    Version* a = MakeVersion(8);
    const size_t cls = VersionCache::ClassOf(sizeof(Version) + 8);
    EXPECT_EQ(VersionCache::Mine()->cached(cls), 0u);
    EXPECT_EQ(FreeVersionChain(a), 1u);
    EXPECT_EQ(VersionCache::Mine()->cached(cls), 1u);
    // Another class does not take it.
    Version* big = MakeVersion(100);
    EXPECT_NE(static_cast<void*>(big), static_cast<void*>(a));
    // The same class does, and the new version is whole.
    Version* b = MakeVersion(5, 'w');  // 40 + 5 bytes: the class of 40 + 8 (33..48)
    EXPECT_EQ(static_cast<void*>(b), static_cast<void*>(a));
    EXPECT_EQ(VersionCache::Mine()->cached(cls), 0u);
    EXPECT_EQ(b->len, 5u);
    EXPECT_EQ(std::string(b->data(), b->len), std::string(5, 'w'));
    EXPECT_EQ(b->prev.load(), nullptr);
    FreeVersionChain(b);
    FreeVersionChain(big);
  }).join();
}

TEST(VersionCache, AChainIsCachedVersionByVersionUpToTheBound) {
  std::thread([] {
    const size_t cls = VersionCache::ClassOf(sizeof(Version) + 8);
    const size_t fit = VersionCache::kMaxCachedBytes / VersionCache::BytesOf(cls);
    Version* head = nullptr;
    const uint32_t n = static_cast<uint32_t>(fit + 10);
    for (uint32_t i = 0; i < n; i++) {
      Version* v = MakeVersion(8);
      v->prev.store(head);
      head = v;
    }
    EXPECT_EQ(FreeVersionChain(head), n);
    EXPECT_EQ(VersionCache::Mine()->cached(cls), fit);  // the rest went to the allocator
    EXPECT_LE(VersionCache::Mine()->cached_bytes(), VersionCache::kMaxCachedBytes);
  }).join();
}

TEST(VersionCache, VersionsLargerThanTheLargestClassBypassIt) {
  std::thread([] {
    Version* v = MakeVersion(VersionCache::kMaxBytes);  // 40 + 256 bytes
    FreeVersionChain(v);
    for (size_t c = 0; c < VersionCache::kClasses; c++) EXPECT_EQ(VersionCache::Mine()->cached(c), 0u) << c;
  }).join();
}

// A version freed while the thread exits, after its cache is gone (from the
// destructor of a thread-local made before the cache), goes to the
// allocator: no cache is made again for the dying thread.
std::atomic<int> late_free_saw_cache{-1};
struct FreesAVersionAtThreadExit {
  Version* v = nullptr;
  ~FreesAVersionAtThreadExit() {
    late_free_saw_cache = VersionCache::Mine() != nullptr ? 1 : 0;
    FreeVersionChain(v);
  }
};

TEST(VersionCache, AVersionFreedAfterTheCacheIsGoneGoesToTheAllocator) {
  std::thread([] {
    thread_local FreesAVersionAtThreadExit holder;  // made first, destroyed last
    holder.v = MakeVersion(8);
    ASSERT_NE(VersionCache::Mine(), nullptr);  // the cache is made after the holder
  }).join();
  EXPECT_EQ(late_free_saw_cache.load(), 0);
}

TEST(VersionCache, ClassesCoverEveryByteCountOnce) {
  EXPECT_EQ(VersionCache::ClassOf(1), 0u);
  EXPECT_EQ(VersionCache::ClassOf(16), 0u);
  EXPECT_EQ(VersionCache::ClassOf(17), 1u);
  EXPECT_EQ(VersionCache::ClassOf(VersionCache::kMaxBytes), VersionCache::kClasses - 1);
  for (size_t b = 1; b <= VersionCache::kMaxBytes; b++) {
    EXPECT_GE(VersionCache::BytesOf(VersionCache::ClassOf(b)), b);
    EXPECT_LT(VersionCache::BytesOf(VersionCache::ClassOf(b)), b + VersionCache::kGranule);
  }
}

}  // namespace
}  // namespace rolis::core
