// PastCacheWriter (stream_copy.h) fills a buffer like appending to a
// string: for every alignment of the buffer and every split of the bytes
// into appends, whole lines by non-temporal stores and the rest through
// its waiting line, and it writes nothing outside the bytes appended.
#include "stream_copy.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace rolis::replication {
namespace {

std::string Pattern(size_t n, int seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; i++) s[i] = static_cast<char>(i * 131 + seed);
  return s;
}

// Appends of the given lengths, after a first append of 0 to 63 bytes (so
// that they meet every position in a line), into a reused buffer holding
// garbage: after Finish out[0, used) is every byte appended, in order, and
// the garbage past `used` is as it was.
void CheckAppends(const std::vector<size_t>& lengths) {
  size_t total = 0;
  for (size_t n : lengths) total += n;
  const std::string src = Pattern(total, 7);
  for (size_t offset = 0; offset < 64; offset++) {
    std::string out(offset + total + 130, '\x5a');
    std::string* buf = &out;
    PastCacheWriter w;
    size_t used = 0;
    const std::string lead = Pattern(offset, 3);
    w.Append(buf, &used, lead);
    size_t at = 0;
    for (size_t n : lengths) {
      w.Append(buf, &used, std::string_view(src).substr(at, n));
      at += n;
    }
    w.Finish(buf, used);
    ASSERT_EQ(used, offset + total);
    ASSERT_TRUE(std::string_view(*buf).substr(0, offset) == lead) << "offset " << offset;
    ASSERT_TRUE(std::string_view(*buf).substr(offset, total) == src) << "offset " << offset;
    for (size_t i = used; i < buf->size(); i++) ASSERT_EQ((*buf)[i], '\x5a') << "written past used, offset " << offset;
  }
}

TEST(PastCacheWriter, OneAppendOfEveryLength) {
  for (size_t n : {0, 1, 15, 16, 63, 64, 65, 127, 128, 129, 200, 511, 512, 700, 1024}) {
    SCOPED_TRACE(n);
    CheckAppends({n});
  }
}

TEST(PastCacheWriter, ManySmallAndLargeAppends) {
  std::mt19937 rng(11);
  for (int round = 0; round < 20; round++) {
    std::vector<size_t> lengths;
    for (int i = 0; i < 40; i++) lengths.push_back(rng() % 4 == 0 ? rng() % 300 : rng() % 70);
    SCOPED_TRACE(round);
    CheckAppends(lengths);
  }
}

// A buffer too short (or with too little capacity) grows, keeping what
// was appended, including the bytes still waiting in the writer.
TEST(PastCacheWriter, GrowsAShortBufferKeepingEveryByte) {
  const std::string src = Pattern(5000, 1);
  std::string want;
  for (std::string start : {std::string(), std::string(10, '\x5a'), std::string(100, '\x5a')}) {
    std::string buf = start;
    PastCacheWriter w;
    size_t used = 0;
    for (size_t at = 0, n = 1; at < src.size(); at += n, n = n * 3 % 97 + 1) {
      n = std::min(n, src.size() - at);
      w.Append(&buf, &used, std::string_view(src).substr(at, n));
    }
    w.Finish(&buf, used);
    buf.resize(used);
    EXPECT_EQ(buf, src);
  }
}

// Reset drops the waiting bytes: the buffer starts again from 0.
TEST(PastCacheWriter, ResetStartsTheBufferAgain) {
  std::string buf(256, '\x5a');
  PastCacheWriter w;
  size_t used = 0;
  w.Append(&buf, &used, Pattern(100, 2));
  w.Reset();
  used = 0;
  const std::string second = Pattern(30, 9);
  w.Append(&buf, &used, second);
  w.Finish(&buf, used);
  EXPECT_EQ(std::string_view(buf).substr(0, used), second);
}

}  // namespace
}  // namespace rolis::replication
