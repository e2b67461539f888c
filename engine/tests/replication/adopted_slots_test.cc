// The slots a state transfer adopts from a majority's votes
// (adopted_slots.h): the same whether a voter trimmed its answer to the
// slots after the snapshot (from_slot) or, as a member of an older version
// does, sent every slot it holds.
#include <gtest/gtest.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "acceptor.h"
#include "acceptor_messages.h"
#include "adopted_slots.h"

namespace rolis::replication::testing {
namespace {

SnapshotReply SnapshotAt(std::vector<uint64_t> next_slot) {
  SnapshotReply s;
  s.ok = true;
  s.stream_key.resize(next_slot.size());
  s.stream_barrier.resize(next_slot.size());
  s.skip.resize(next_slot.size());
  s.next_slot = std::move(next_slot);
  return s;
}

std::vector<std::pair<uint64_t, uint64_t>> IndexAndBallot(const StreamSlots& s) {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  for (const Slot& slot : s.slots) out.emplace_back(slot.index, slot.ballot);
  return out;
}

TEST(AdoptedSlots, AVoterThatSendsEverySlotIsAdoptedAsOneThatSentOnlyThoseAfterTheSnapshot) {
  // Voter a accepted epoch 2's slots 0..7 of stream 0 and 0..3 of stream 1;
  // voter b, of epoch 3, slots 0..5 of stream 0: below the snapshot's
  // next_slot too, and with the higher ballot there.
  Acceptor a(2), b(2);
  for (uint64_t i = 0; i < 8; i++) ASSERT_TRUE(a.Accept(Accept(2, 0, i)).ok);
  for (uint64_t i = 0; i < 4; i++) ASSERT_TRUE(a.Accept(Accept(2, 1, i)).ok);
  for (uint64_t i = 0; i < 6; i++) ASSERT_TRUE(b.Accept(Accept(3, 0, i)).ok);
  const SnapshotReply snap = SnapshotAt({4, 2});

  PromiseReply a_trimmed = a.Promise(Peek(snap.next_slot));
  PromiseReply b_trimmed = b.Promise(Peek(snap.next_slot));
  PromiseReply b_whole = b.Promise(Peek({}));  // what a member that ignores from_slot answers
  ASSERT_TRUE(a_trimmed.ok && b_trimmed.ok && b_whole.ok);
  ASSERT_EQ(b_whole.streams[0].slots.size(), 6u) << "every slot, those below next_slot included";

  const std::vector<StreamSlots> trimmed = AdoptedSlots(2, snap, {&a_trimmed, &b_trimmed});
  const std::vector<StreamSlots> mixed = AdoptedSlots(2, snap, {&a_trimmed, &b_whole});
  ASSERT_EQ(trimmed.size(), 2u);
  ASSERT_EQ(mixed.size(), 2u);
  // Stream 0 from slot 4: b's ballot 3 where it holds the slot, a's 2 after.
  EXPECT_EQ(IndexAndBallot(trimmed[0]),
            (std::vector<std::pair<uint64_t, uint64_t>>{{4, 3}, {5, 3}, {6, 2}, {7, 2}}));
  EXPECT_EQ(IndexAndBallot(trimmed[1]), (std::vector<std::pair<uint64_t, uint64_t>>{{2, 2}, {3, 2}}));
  for (uint32_t t = 0; t < 2; t++) {
    EXPECT_EQ(IndexAndBallot(mixed[t]), IndexAndBallot(trimmed[t])) << "stream " << t;
    EXPECT_EQ(mixed[t].first_slot, snap.next_slot[t]);
    EXPECT_EQ(trimmed[t].first_slot, snap.next_slot[t]);
  }
}

}  // namespace
}  // namespace rolis::replication::testing
