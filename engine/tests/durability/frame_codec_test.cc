// Frames and the record encodings: round trips, and every truncation or
// flipped byte of bytes from disk is refused with a status, never a crash.
#include <gtest/gtest.h>

#include "frame.h"
#include "record_codec.h"
#include "test_dir.h"

namespace rolis::durability {
namespace {

using replication::ControlVote;
using replication::Decided;
using replication::DecidedPtr;
using replication::Slot;

DecidedPtr SampleDecided() {
  auto d = std::make_shared<Decided>();
  d->record.epoch = 7;
  d->record.cut = {{3, 100}, {5, 250}};
  d->leader_id = 2;
  d->watermark = {5, 250};
  d->config = 3;
  d->members = {{1, "10.0.0.1:7000"}, {2, "10.0.0.2:7000"}, {4, "rolis-4.rolis:7000"}};
  return d;
}

std::string SlotPayload(uint32_t stream, const Slot& s) { return EncodeSlotMeta(stream, s) + s.value->payload; }

TEST(Records, RoundTripEveryKind) {
  Slot s = TestSlot(42, 9, 300);
  uint32_t stream = 0;
  Slot back;
  ASSERT_TRUE(DecodeSlot(SlotPayload(3, s), &stream, &back).ok());
  EXPECT_EQ(stream, 3u);
  EXPECT_EQ(back.index, 42u);
  EXPECT_EQ(back.ballot, 9u);
  EXPECT_EQ(back.value->payload, s.value->payload);
  EXPECT_EQ(back.value->key(), s.value->key());
  EXPECT_EQ(back.value->crc, s.value->crc);

  DecidedPtr d;
  ASSERT_TRUE(DecodeDecided(EncodeDecided(*SampleDecided()), &d).ok());
  EXPECT_EQ(*d, *SampleDecided());

  uint64_t e = 0;
  ASSERT_TRUE(DecodePromise(EncodePromise(12), &e).ok());
  EXPECT_EQ(e, 12u);

  ControlVote v{6, (3u << 8) | 2, (2u << 8) | 1, SampleDecided()}, vb;
  ASSERT_TRUE(DecodeControlVote(EncodeControlVote(v), &vb).ok());
  EXPECT_EQ(vb.instance, 6u);
  EXPECT_EQ(vb.promised, v.promised);
  EXPECT_EQ(vb.accepted_ballot, v.accepted_ballot);
  ASSERT_TRUE(vb.accepted);
  EXPECT_EQ(*vb.accepted, *v.accepted);

  replication::SnapshotReply h, hb;
  h.at = {4, 77};
  h.next_slot = {10, 20};
  h.skip = {0, 3};
  h.stream_key = {{4, 70}, {4, 77}};
  h.stream_barrier = {4, 3};
  h.decided = SampleDecided();
  h.leader_epoch = 4;
  ASSERT_TRUE(DecodeCheckpointHeader(EncodeCheckpointHeader(h), &hb).ok());
  EXPECT_EQ(hb.at, h.at);
  EXPECT_EQ(hb.next_slot, h.next_slot);
  EXPECT_EQ(hb.skip, h.skip);
  EXPECT_EQ(hb.stream_key, h.stream_key);
  EXPECT_EQ(hb.stream_barrier, h.stream_barrier);
  EXPECT_EQ(*hb.decided, *h.decided);
  EXPECT_EQ(hb.leader_epoch, 4u);

  std::string chunk;
  BeginWritesChunk(&chunk);
  AddToWritesChunk(&chunk, 1, "k1", "v1");
  AddToWritesChunk(&chunk, 2, std::string(1000, 'k'), "");
  FinishWritesChunk(&chunk, 2);
  std::vector<replication::SnapshotWrite> w;
  ASSERT_TRUE(DecodeWritesChunk(chunk, &w).ok());
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[1].key.size(), 1000u);
  EXPECT_EQ(w[1].table, 2u);
}

// Every prefix of every encoding is refused (nothing is optional), as is a
// byte more, a wrong version and a flipped batch payload byte.
TEST(Records, EveryTruncationAndAnUnknownVersionAreRefused) {
  std::vector<std::pair<std::string, std::function<Status(std::string_view)>>> cases = {
      {SlotPayload(1, TestSlot(5, 2, 40)),
       [](std::string_view in) { uint32_t t; Slot s; return DecodeSlot(in, &t, &s); }},
      {EncodeDecided(*SampleDecided()), [](std::string_view in) { DecidedPtr d; return DecodeDecided(in, &d); }},
      {EncodePromise(3), [](std::string_view in) { uint64_t e; return DecodePromise(in, &e); }},
      {EncodeControlVote(ControlVote{1, 2, 2, SampleDecided()}),
       [](std::string_view in) { ControlVote v; return DecodeControlVote(in, &v); }},
      {EncodeCheckpointEnd({5, 1}), [](std::string_view in) { CheckpointEnd e; return DecodeCheckpointEnd(in, &e); }},
  };
  for (auto& [bytes, decode] : cases) {
    ASSERT_TRUE(decode(bytes).ok());
    for (size_t n = 0; n < bytes.size(); n++) EXPECT_FALSE(decode(bytes.substr(0, n)).ok()) << n;
    EXPECT_FALSE(decode(bytes + "x").ok());
    std::string v = bytes;
    v[0] = 9;
    Status s = decode(v);
    EXPECT_FALSE(s.ok());
    EXPECT_NE(s.message().find("version"), std::string::npos) << s.message();
  }
  std::string p = SlotPayload(1, TestSlot(5, 2, 40));
  p[p.size() - 3] ^= 1;
  uint32_t t;
  Slot s;
  Status st = DecodeSlot(p, &t, &s);
  EXPECT_NE(st.message().find("crc"), std::string::npos) << st.message();
}

// A count that the bytes left could not hold is refused before anything
// is reserved (a corrupt count must not allocate gigabytes).
TEST(Records, AHugeCountIsRefusedWithoutAllocating) {
  std::string c;
  PutU8(&c, kRecordVersion);
  PutU32(&c, 0xfffffff0u);
  std::vector<replication::SnapshotWrite> w;
  Status s = DecodeWritesChunk(c, &w);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("does not fit"), std::string::npos) << s.message();
  std::string h;
  PutU8(&h, kRecordVersion);
  PutU64(&h, 1);
  PutU64(&h, 1);
  PutU32(&h, 1u << 30);
  replication::SnapshotReply r;
  EXPECT_FALSE(DecodeCheckpointHeader(h, &r).ok());
}

TEST(Frames, RoundTripAndEveryFlippedByteIsCaught) {
  std::string file;
  AppendFrame(&file, FrameType::kPromise, EncodePromise(4));
  AppendFrame(&file, FrameType::kDecided, EncodeDecided(*SampleDecided()));
  std::vector<FrameType> seen;
  FrameScan scan;
  ASSERT_TRUE(ScanFrames(file, [&](const Frame& f, size_t) { seen.push_back(f.type); return Status::OK(); }, &scan).ok());
  EXPECT_EQ(seen, (std::vector<FrameType>{FrameType::kPromise, FrameType::kDecided}));
  EXPECT_EQ(scan.valid_end, file.size());
  EXPECT_EQ(scan.fault, FrameFault::kNone);
  for (size_t i = 0; i < file.size(); i++) {
    std::string bad = file;
    bad[i] ^= 0x04;
    ASSERT_TRUE(ScanFrames(bad, [](const Frame&, size_t) { return Status::OK(); }, &scan).ok());
    EXPECT_NE(scan.fault, FrameFault::kNone) << "flip at " << i;
  }
  // Zeros (a preallocated or lost page) are not a frame.
  Frame f;
  size_t next;
  EXPECT_EQ(ParseFrame(std::string(64, '\0'), 0, &f, &next), FrameFault::kBadChecksum);
}

// A bad frame is a tail only when nothing well formed follows it.
TEST(Frames, ABadFrameWithGoodFramesAfterItIsNotATail) {
  std::string a, b, c;
  AppendFrame(&a, FrameType::kPromise, EncodePromise(1));
  AppendFrame(&b, FrameType::kPromise, EncodePromise(2));
  AppendFrame(&c, FrameType::kPromise, EncodePromise(3));
  auto scan = [](const std::string& data) {
    FrameScan s;
    EXPECT_TRUE(ScanFrames(data, [](const Frame&, size_t) { return Status::OK(); }, &s).ok());
    return s;
  };
  std::string torn = a + b + c.substr(0, c.size() - 3);
  FrameScan s = scan(torn);
  EXPECT_EQ(s.fault, FrameFault::kShortPayload);
  EXPECT_TRUE(s.tail);
  EXPECT_EQ(s.valid_end, a.size() + b.size());

  std::string middle = a + b + c;
  middle[a.size() + kFrameHeaderBytes + 2] ^= 0x01;  // in b's payload
  s = scan(middle);
  EXPECT_EQ(s.fault, FrameFault::kBadChecksum);
  EXPECT_FALSE(s.tail);
  EXPECT_EQ(s.valid_end, a.size());

  std::string huge_len = a + b + c;
  huge_len[a.size() + 3] = static_cast<char>(0x0f);  // b's length runs past the end
  s = scan(huge_len);
  EXPECT_FALSE(s.tail) << FrameFaultName(s.fault);

  std::string zeros = a + std::string(100, '\0');
  s = scan(zeros);
  EXPECT_TRUE(s.tail);
}

}  // namespace
}  // namespace rolis::durability
