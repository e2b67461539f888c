// The sending side of the Snapshot call (engine/src/rolisd/snapshot_chunks.h):
// chunks of about the chunk size sent as the writes come, the position in
// the first, `last` on the last only, and a reader that goes away.
#include "snapshot_chunks.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace rolis::replication {
namespace {

SnapshotReply Header() {
  SnapshotReply h;
  h.ok = true;
  h.at = LogKey{3, 77};
  h.next_slot = {5, 6};
  h.skip = {0, 1};
  h.stream_key = {LogKey{3, 70}, LogKey{3, 71}};
  h.stream_barrier = {2, 2};
  h.leader_epoch = 3;
  return h;
}

TEST(SnapshotChunks, WritesGoOutInChunksOfAboutTheChunkSizeWithThePositionFirstAndLastOnTheLast) {
  std::vector<v1::SnapshotChunk> sent;
  SnapshotChunkSink sink([&](const v1::SnapshotChunk& c) { sent.push_back(c); return true; }, 4096);
  ASSERT_TRUE(sink.Begin(Header()).ok());
  const std::string value(1000, 'v');
  for (int i = 0; i < 40; i++) {
    ASSERT_TRUE(sink.Add(i < 20 ? 0 : 1, "k" + std::to_string(100 + i), value).ok());
    // A full chunk leaves at once: never more than one chunk is held.
    EXPECT_LE(static_cast<size_t>(i + 1) - [&] { size_t n = 0; for (auto& c : sent) n += c.writes_size(); return n; }(), 5u);
  }
  ASSERT_TRUE(sink.End().ok());
  ASSERT_GE(sent.size(), 8u);
  EXPECT_TRUE(sent[0].ok());
  EXPECT_EQ(sent[0].at().epoch(), 3u);
  EXPECT_EQ(sent[0].at().ts(), 77u);
  EXPECT_EQ(sent[0].next_slot_size(), 2);
  EXPECT_EQ(sent[0].stream_key_size(), 2);
  EXPECT_EQ(sent[0].leader_epoch(), 3u);
  std::vector<std::string> keys;
  for (size_t i = 0; i < sent.size(); i++) {
    EXPECT_EQ(sent[i].last(), i + 1 == sent.size()) << i;
    if (i > 0) {
      EXPECT_EQ(sent[i].next_slot_size(), 0) << i;
    }
    for (const auto& w : sent[i].writes()) keys.push_back(std::to_string(w.table()) + "/" + w.key());
  }
  ASSERT_EQ(keys.size(), 40u);
  EXPECT_EQ(keys.front(), "0/k100");
  EXPECT_EQ(keys.back(), "1/k139");
  EXPECT_EQ(sink.chunks(), sent.size());
}

TEST(SnapshotChunks, AReaderThatGoesAwayFailsTheAddThatFillsAChunk) {
  int calls = 0;
  SnapshotChunkSink sink([&](const v1::SnapshotChunk&) { return ++calls < 2; }, 1024);
  ASSERT_TRUE(sink.Begin(Header()).ok());
  const std::string value(600, 'v');
  EXPECT_TRUE(sink.Add(0, "a", value).ok());
  EXPECT_TRUE(sink.Add(0, "b", value).ok());  // the first chunk goes
  EXPECT_TRUE(sink.Add(0, "c", value).ok());
  const Status s = sink.Add(0, "d", value);  // the second does not
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("went away"), std::string::npos) << s.message();
}

TEST(SnapshotChunks, ARefusalIsOneLastChunkAndOnlyBeforeBegin) {
  std::vector<v1::SnapshotChunk> sent;
  SnapshotChunkSink sink([&](const v1::SnapshotChunk& c) { sent.push_back(c); return true; });
  ASSERT_TRUE(sink.Refuse("not a caught-up follower"));
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_FALSE(sent[0].ok());
  EXPECT_TRUE(sent[0].last());
  EXPECT_EQ(sent[0].error(), "not a caught-up follower");

  SnapshotChunkSink begun([&](const v1::SnapshotChunk& c) { sent.push_back(c); return true; });
  ASSERT_TRUE(begun.Begin(Header()).ok());
  EXPECT_FALSE(begun.Refuse("too late"));
  EXPECT_FALSE(begun.Begin(Header()).ok());
  EXPECT_EQ(sent.size(), 1u);
}

TEST(SnapshotChunks, AddOrEndBeforeBeginIsAnError) {
  SnapshotChunkSink sink([](const v1::SnapshotChunk&) { return true; });
  EXPECT_FALSE(sink.Add(0, "k", "v").ok());
  EXPECT_FALSE(sink.End().ok());
}

}  // namespace
}  // namespace rolis::replication
