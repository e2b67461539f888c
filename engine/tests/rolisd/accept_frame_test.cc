// AcceptFrame: the leader's prebuilt AcceptRequest bytes parse, with the
// generated code, to the message ToWire builds, and their payload slice is
// the batch's own memory, kept alive by the frame.
#include "accept_frame.h"

#include <gtest/gtest.h>
#include <grpcpp/impl/codegen/proto_utils.h>

#include <random>

#include "wire.h"

namespace rolis::replication::wire {
namespace {

AcceptMsg SampleAccept(size_t payload_bytes) {
  auto b = std::make_shared<Batch>();
  b->kind = BatchKind::kTxns;
  b->epoch = 3;
  b->last_ts = 123456789;
  b->txn_count = 7;
  b->payload.resize(payload_bytes);
  std::mt19937 rng(payload_bytes);
  for (char& c : b->payload) c = static_cast<char>(rng());
  b->crc = 0xdeadbeef;
  auto d = std::make_shared<Decided>();
  d->record.epoch = 3;
  d->record.cut[2] = 99;
  d->leader_id = 1;
  d->members = {{1, "a:1"}, {2, "b:2"}, {3, "c:3"}};
  AcceptMsg m;
  m.from = 1;
  m.epoch = 3;
  m.stream = 2;
  m.slot = Slot{41, 3, b};
  m.commit_watermark = LogKey{3, 1000};
  m.log_start = 5;
  m.compact_below = 4;
  m.decided = d;
  m.leader_client_address = "leader:7000";
  return m;
}

v1::AcceptRequest Parse(const grpc::ByteBuffer& frame) {
  grpc::ByteBuffer copy(frame);
  v1::AcceptRequest out;
  grpc::Status s = grpc::GenericDeserialize<grpc::ProtoBufferReader, v1::AcceptRequest>(&copy, &out);
  EXPECT_TRUE(s.ok()) << s.error_message();
  return out;
}

TEST(AcceptFrame, ParsesToWhatToWireBuildsForEveryPayloadSize) {
  // Sizes around the varint steps of the three nested lengths.
  for (size_t n : {0, 1, 100, 127, 128, 16380, 16384, 100000, 2097152}) {
    SCOPED_TRACE(n);
    const AcceptMsg m = SampleAccept(n);
    v1::AcceptRequest want;
    ToWire(m, &want);
    const v1::AcceptRequest got = Parse(AcceptFrame(m));
    EXPECT_EQ(got.SerializeAsString(), want.SerializeAsString());
    EXPECT_EQ(got.slot().value().encoded().size(), n);
    EXPECT_EQ(got.slot().value().epoch(), 3u);
    EXPECT_EQ(got.slot().index(), 41u);
  }
}

TEST(AcceptFrame, AnAcceptWithoutABatchIsJustItsHeader) {
  AcceptMsg m = SampleAccept(10);
  m.slot.value = nullptr;
  v1::AcceptRequest want;
  ToWire(m, &want);
  EXPECT_EQ(Parse(AcceptFrame(m)).SerializeAsString(), want.SerializeAsString());
}

TEST(AcceptFrame, ThePayloadIsNotCopiedAndOutlivesTheLeadersReference) {
  AcceptMsg m = SampleAccept(64 * 1024);
  const std::string expected = m.slot.value->payload;
  const char* payload_at = m.slot.value->payload.data();
  std::weak_ptr<const Batch> watch = m.slot.value;
  grpc::ByteBuffer frame = AcceptFrame(m);
  std::vector<grpc::Slice> slices;
  ASSERT_TRUE(frame.Dump(&slices).ok());
  ASSERT_EQ(slices.size(), 2u);
  EXPECT_EQ(reinterpret_cast<const char*>(slices[1].begin()), payload_at);
  slices.clear();

  m.slot.value = nullptr;  // the log compacted it while gRPC still sends
  EXPECT_FALSE(watch.expired());
  EXPECT_EQ(Parse(frame).slot().value().encoded(), expected);
  frame.Clear();
  EXPECT_TRUE(watch.expired());
}

}  // namespace
}  // namespace rolis::replication::wire
