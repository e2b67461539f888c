// Peeks (a Promise that promises nothing) with from_slot: the answer carries
// only the slots the reader asked for, and every other field as a whole
// peek's (docs/replication.md, "Members that lose their memory").
#include <gtest/gtest.h>

#include <cstdint>

#include "acceptor.h"
#include "acceptor_messages.h"
#include "cluster_harness.h"
#include "codec.h"

namespace rolis::replication::testing {
namespace {

std::vector<uint64_t> Indexes(const StreamSlots& s) {
  std::vector<uint64_t> out;
  for (const Slot& slot : s.slots) out.push_back(slot.index);
  return out;
}

// Stream 0 holds slots 2..7 (0 and 1 compacted), stream 1 slots 0..3.
void Fill(Acceptor* a) {
  for (uint64_t i = 0; i < 8; i++) ASSERT_TRUE(a->Accept(Accept(2, 0, i)).ok);
  for (uint64_t i = 0; i < 4; i++) ASSERT_TRUE(a->Accept(Accept(2, 1, i)).ok);
  EpochRecord decided;
  decided.epoch = 2;
  a->Compact(0, 2, decided);
  ASSERT_EQ(a->first_slot(0), 2u);
}

TEST(Peek, FromSlotCarriesOnlyTheSlotsAtOrAboveItAndEverythingElseAsAWholePeek) {
  Acceptor a(2);
  Fill(&a);
  PromiseReply whole = a.Promise(Peek({}));
  ASSERT_TRUE(whole.ok);
  ASSERT_EQ(whole.streams.size(), 2u);
  EXPECT_EQ(Indexes(whole.streams[0]), (std::vector<uint64_t>{2, 3, 4, 5, 6, 7})) << "empty: every slot";
  EXPECT_EQ(Indexes(whole.streams[1]), (std::vector<uint64_t>{0, 1, 2, 3}));

  // Below the first slot, inside the log, past its end, and none.
  for (auto [from0, want0] : std::vector<std::pair<uint64_t, std::vector<uint64_t>>>{
           {0, {2, 3, 4, 5, 6, 7}}, {5, {5, 6, 7}}, {8, {}}, {UINT64_MAX, {}}}) {
    PromiseReply r = a.Promise(Peek({from0, 3}));
    ASSERT_TRUE(r.ok) << r.error;
    ASSERT_EQ(r.streams.size(), 2u);
    EXPECT_EQ(Indexes(r.streams[0]), want0) << "from slot " << from0;
    EXPECT_EQ(Indexes(r.streams[1]), (std::vector<uint64_t>{3}));
    for (uint32_t t = 0; t < 2; t++) {
      EXPECT_EQ(r.streams[t].first_slot, whole.streams[t].first_slot);
      EXPECT_EQ(r.streams[t].base_key, whole.streams[t].base_key);
      EXPECT_EQ(r.streams[t].base_barrier, whole.streams[t].base_barrier);
    }
    EXPECT_EQ(r.promised_epoch, whole.promised_epoch);
  }
  PromiseReply some = a.Promise(Peek({5, 0}));
  ASSERT_TRUE(some.ok);
  for (const Slot& s : some.streams[0].slots) {
    EXPECT_EQ(s.ballot, 2u);
    ASSERT_TRUE(s.value);
    EXPECT_EQ(s.value->last_ts, s.index + 1) << "the slot's own value";
  }
}

TEST(Peek, FromSlotOfAnotherLengthOrOnARealPromiseIsRefusedAndChangesNothing) {
  Acceptor a(2);
  Fill(&a);
  for (const std::vector<uint64_t>& bad : {std::vector<uint64_t>{5}, std::vector<uint64_t>{5, 5, 5}}) {
    PromiseReply r = a.Promise(Peek(bad));
    EXPECT_FALSE(r.ok);
    EXPECT_NE(r.error.find("from_slot lists " + std::to_string(bad.size()) + " streams"), std::string::npos)
        << r.error;
    EXPECT_TRUE(r.streams.empty());
  }
  // A Prepare's proposer needs every slot: from_slot there is refused, and
  // the epoch is not promised.
  PromiseMsg prepare;
  prepare.from = 3;
  prepare.epoch = 5;
  prepare.from_slot = {0, 0};
  PromiseReply r = a.Promise(prepare);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("peek only"), std::string::npos) << r.error;
  EXPECT_TRUE(r.streams.empty());
  EXPECT_EQ(a.promised(), 2u);
  prepare.from_slot.clear();
  r = a.Promise(prepare);
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(a.promised(), 5u);
  EXPECT_EQ(Indexes(r.streams[0]), (std::vector<uint64_t>{2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(a.slot_count(0), 6u);
  EXPECT_EQ(a.slot_count(1), 4u);
}

// `virgin` (the start-up probe's question) and the other fields of the
// member's answer do not depend on the slots it sends.
TEST(Peek, AMemberAskedForNoSlotsStillSaysItHoldsState) {
  Cluster c({});
  ASSERT_TRUE(c.Failover(1).ok());
  for (int i = 0; i < 20; i++) ASSERT_EQ(c.Put(1, i % 2, "k" + std::to_string(i), "v"), Cluster::Ack::kAcked);
  ASSERT_TRUE(c.WaitReplicated(1));
  PromiseReply whole = c.r(2).HandlePromise(Peek({}));
  PromiseReply none = c.r(2).HandlePromise(Peek(NoSlots(2)));
  ASSERT_TRUE(whole.ok && none.ok) << none.error;
  EXPECT_FALSE(whole.virgin);
  EXPECT_FALSE(none.virgin) << "it holds slots, though it sent none";
  EXPECT_FALSE(none.amnesic);
  EXPECT_EQ(none.from, 2u);
  ASSERT_EQ(none.streams.size(), 2u);
  for (uint32_t t = 0; t < 2; t++) {
    EXPECT_FALSE(whole.streams[t].slots.empty());
    EXPECT_TRUE(none.streams[t].slots.empty());
    EXPECT_EQ(none.streams[t].first_slot, whole.streams[t].first_slot);
  }
  ASSERT_TRUE(none.decided && whole.decided);
  EXPECT_EQ(none.decided->record.epoch, whole.decided->record.epoch);
  EXPECT_EQ(none.promised_epoch, whole.promised_epoch);
  EXPECT_EQ(none.ctl_instance, whole.ctl_instance);
  EXPECT_EQ(none.ctl_promised, whole.ctl_promised);
  EXPECT_EQ(none.ctl_accepted_ballot, whole.ctl_accepted_ballot);
  // A refused peek (another number of streams) says whether it holds state
  // too: the start-up probe reads `virgin` from every answer.
  PromiseReply bad = c.r(2).HandlePromise(Peek({0}));
  EXPECT_FALSE(bad.ok);
  EXPECT_FALSE(bad.virgin);
  EXPECT_FALSE(bad.error.empty());
}

}  // namespace
}  // namespace rolis::replication::testing
