// The packed writes of a received snapshot (engine/src/replication/packed_writes.h).
#include "packed_writes.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace rolis::replication {
namespace {

std::vector<std::string> All(const PackedWrites& w) {
  std::vector<std::string> out;
  w.ForEach([&](const PackedWrites::Record& r) {
    out.push_back(std::to_string(r.table) + "/" + std::string(r.key) + "=" + std::to_string(r.value.size()));
    return true;
  });
  return out;
}

TEST(PackedWrites, RecordsComeBackInTheOrderAddedAcrossBlocksAndLargeValues) {
  PackedWrites w;
  std::vector<std::string> want;
  for (int i = 0; i < 3000; i++) {
    // 3000 values of 1000 bytes fill several 1 MiB blocks; one of 3 MiB is a block of its own.
    const size_t n = i == 1500 ? (size_t{3} << 20) : 1000;
    w.Add(i < 2000 ? 0 : 1, "k" + std::to_string(10000 + i), std::string(n, 'v'));
    want.push_back(std::to_string(i < 2000 ? 0 : 1) + "/k" + std::to_string(10000 + i) + "=" + std::to_string(n));
  }
  EXPECT_EQ(w.size(), 3000u);
  EXPECT_EQ(All(w), want);
  EXPECT_TRUE(w.in_scan_order());
  EXPECT_LT(w.bytes(), (size_t{3} << 20) + 3000 * 1100 + (size_t{2} << 20));
  const std::vector<PackedWrites::Ref> refs = w.Refs();
  ASSERT_EQ(refs.size(), 3000u);
  EXPECT_EQ(w.At(refs[1500]).value.size(), size_t{3} << 20);
  EXPECT_EQ(w.At(refs[2999]).key, "k12999");
  EXPECT_EQ(w.At(refs[2999]).table, 1u);
}

TEST(PackedWrites, AWriteBelowTheOneBeforeItIsNotScanOrder) {
  PackedWrites a;
  a.Add(0, "b", "1");
  a.Add(0, "a", "2");
  EXPECT_FALSE(a.in_scan_order());
  PackedWrites b;
  b.Add(1, "a", "1");
  b.Add(0, "z", "2");  // a lower table
  EXPECT_FALSE(b.in_scan_order());
  PackedWrites c;
  c.Add(0, "a", "1");
  c.Add(0, "a", "2");  // the same key twice
  EXPECT_FALSE(c.in_scan_order());
  PackedWrites d;
  d.Add(0, "z", "1");
  d.Add(1, "a", "2");
  d.Add(1, std::string("a\xff", 2), "3");  // bytes compare unsigned, as the index orders keys
  EXPECT_TRUE(d.in_scan_order());
}

TEST(ReceivedSnapshot, APositionItsCheckRefusesTakesNoWrites) {
  ReceivedSnapshot r([](const SnapshotReply& h) {
    return h.at.epoch > 2 ? Status::OK() : Status::FailedPrecondition("snapshot of epoch 2 not past 2");
  });
  SnapshotReply h;
  h.at = LogKey{2, 9};
  EXPECT_FALSE(r.Begin(h).ok());
  EXPECT_FALSE(r.Add(0, "k", "v").ok());
  EXPECT_FALSE(r.End().ok());
  EXPECT_FALSE(r.complete());
  EXPECT_EQ(r.writes().size(), 0u);

  h.at = LogKey{3, 9};
  ASSERT_TRUE(r.Begin(h).ok());
  ASSERT_TRUE(r.Add(0, "k", "v").ok());
  ASSERT_TRUE(r.End().ok());
  EXPECT_TRUE(r.complete());
  EXPECT_EQ(r.header().at.epoch, 3u);
  EXPECT_EQ(r.writes().size(), 1u);
  EXPECT_FALSE(r.Add(0, "l", "v").ok());
}

}  // namespace
}  // namespace rolis::replication
