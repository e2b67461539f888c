// The acceptors with a journal on disk (acceptor_journal.h, disk_journal.h):
// need_from counts only durable slots, a restarted member keeps its promise,
// votes and accepted slots, and a failing fdatasync stops acknowledging.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "acceptor.h"
#include "disk_journal.h"
#include "fault_env.h"
#include "test_dir.h"

namespace rolis::durability {
namespace {

using replication::Acceptor;
using replication::AcceptMsg;
using replication::AcceptReply;
using replication::ControlAcceptor;
using replication::ControlMsg;
using replication::Decided;
using replication::DecidedPtr;
using replication::PromiseMsg;
using replication::SteadyClock;

AcceptMsg Accept(uint64_t epoch, uint32_t stream, uint64_t index) {
  AcceptMsg m;
  m.from = 1;
  m.epoch = epoch;
  m.stream = stream;
  m.slot = TestSlot(index, epoch);
  return m;
}

// A member's acceptors over a data directory, as a restart builds them.
struct Member {
  Member(Env* env, const std::string& dir, uint32_t streams) : acceptor(streams) {
    RecoveryOptions o;
    o.streams = streams;
    Status s = Recover(env, dir, o, &recovered);
    EXPECT_TRUE(s.ok()) << s.ToString();
    RestoreAcceptors(recovered, &acceptor, &control);
    s = DiskAcceptorJournal::Open(env, dir, streams, recovered, DiskJournalOptions{}, &journal);
    EXPECT_TRUE(s.ok()) << s.ToString();
    journal->SetDurableListener([this](uint32_t) { moved++; });
    acceptor.SetJournal(journal.get());
    control.SetJournal(journal.get());
  }
  bool WaitFor(const std::function<bool()>& cond) {
    for (int i = 0; i < 5000; i++) {
      if (cond()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return cond();
  }
  RecoveredState recovered;
  std::atomic<int> moved{0};
  std::unique_ptr<DiskAcceptorJournal> journal;
  // Declared last: destroyed first (they point at the journal).
  Acceptor acceptor;
  ControlAcceptor control;
};

TEST(DurableAcceptor, AFollowerReportsASlotHeldOnlyOnceItIsDurable) {
  TestDir d;
  FaultEnv env;
  Member m(&env, d.path(), 1);
  env.HoldSyncs(true);
  AcceptReply r = m.acceptor.Accept(Accept(3, 0, 0));
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.held_from, 1u);   // in memory
  EXPECT_EQ(r.need_from, 0u);   // not on disk yet: not counted
  r = m.acceptor.Accept(Accept(3, 0, 1));
  EXPECT_EQ(r.held_from, 2u);
  EXPECT_EQ(r.need_from, 0u);
  EXPECT_EQ(m.acceptor.DurableNeedFrom(0, 3, 0), 0u);
  env.HoldSyncs(false);
  ASSERT_TRUE(m.WaitFor([&] { return m.acceptor.DurableNeedFrom(0, 3, 0) == 2; }));
  EXPECT_GE(m.moved.load(), 1);  // the listener told of it
  r = m.acceptor.Accept(Accept(3, 0, 1));  // a duplicate: already durable
  EXPECT_EQ(r.need_from, 2u);
}

// The leader's own vote (AcceptLocal) counts only what is durable; its loop
// is not blocked by the sync.
TEST(DurableAcceptor, TheLeadersOwnVoteCountsOnlyDurableSlots) {
  TestDir d;
  FaultEnv env;
  Member m(&env, d.path(), 2);
  env.HoldSyncs(true);
  uint64_t need = 99;
  const auto start = SteadyClock::now();
  for (uint64_t i = 0; i < 5; i++) ASSERT_TRUE(m.acceptor.AcceptLocal(1, TestSlot(i, 4), 4, 0, &need));
  EXPECT_LT(SteadyClock::now() - start, std::chrono::seconds(1));
  EXPECT_EQ(need, 0u);
  env.HoldSyncs(false);
  ASSERT_TRUE(m.WaitFor([&] { return m.acceptor.DurableNeedFrom(1, 4, 0) == 5; }));
}

TEST(DurableAcceptor, ARestartedMemberKeepsItsPromiseVotesAndSlots) {
  TestDir d;
  FaultEnv env;
  auto rec = std::make_shared<Decided>();
  rec->record.epoch = 5;
  rec->members = {{1, "a:1"}, {2, "b:1"}, {3, "c:1"}};
  auto next = std::make_shared<Decided>(*rec);
  next->record.epoch = 6;
  next->record.cut[5] = 40;
  const uint64_t inst = replication::InstanceAfter(rec.get());
  {
    Member m(&env, d.path(), 2);
    for (uint64_t i = 0; i < 4; i++) ASSERT_TRUE(m.acceptor.Accept(Accept(5, i % 2, i / 2)).ok);
    ASSERT_TRUE(m.acceptor.Accept(Accept(5, 0, 1)).ok);
    ASSERT_TRUE(m.control.Learn(rec));
    ControlMsg p;
    p.kind = ControlMsg::Kind::kPrepare;
    p.instance = inst;
    p.ballot = (1 << 8) | 2;
    ASSERT_TRUE(m.control.Handle(p, 1).ok);
    ControlMsg a = p;
    a.kind = ControlMsg::Kind::kAccept;
    a.value = next;
    ASSERT_TRUE(m.control.Handle(a, 1).ok);
    PromiseMsg pm;
    pm.epoch = 6;
    ASSERT_TRUE(m.acceptor.Promise(pm).ok);
    ASSERT_TRUE(m.WaitFor([&] { return m.acceptor.DurableNeedFrom(0, 5, 0) == 2 && m.acceptor.DurableNeedFrom(1, 5, 0) == 2; }));
  }
  ASSERT_TRUE(env.Crash().ok());  // whatever was not synced is gone
  Member m(&env, d.path(), 2);
  EXPECT_FALSE(m.recovered.empty);
  EXPECT_EQ(m.acceptor.promised(), 6u);
  AcceptReply r = m.acceptor.Accept(Accept(5, 0, 2));  // the deposed epoch
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.promised_epoch, 6u);
  PromiseMsg peek;
  peek.peek = true;
  replication::PromiseReply pr = m.acceptor.Promise(peek);
  ASSERT_EQ(pr.streams.size(), 2u);
  ASSERT_EQ(pr.streams[0].slots.size(), 2u);
  ASSERT_EQ(pr.streams[1].slots.size(), 2u);
  EXPECT_EQ(pr.streams[1].slots[1].value->payload, TestSlot(1, 5).value->payload);
  ASSERT_TRUE(m.control.latest());
  EXPECT_EQ(*m.control.latest(), *rec);
  ControlAcceptor::Vote v = m.control.Current();
  EXPECT_EQ(v.instance, inst);
  EXPECT_EQ(v.accepted_ballot, (1u << 8) | 2);
  ASSERT_TRUE(v.accepted);
  EXPECT_EQ(*v.accepted, *next);
  // A lower ballot in that instance is still refused after the restart.
  ControlMsg low;
  low.kind = ControlMsg::Kind::kPrepare;
  low.instance = inst;
  low.ballot = (1 << 8) | 1;
  EXPECT_FALSE(m.control.Handle(low, 1).ok);
}

// A failing fdatasync: the member stops acknowledging, never carries on.
TEST(DurableAcceptor, AFailingSyncStopsAcknowledging) {
  TestDir d;
  FaultEnv env;
  Member m(&env, d.path(), 1);
  ASSERT_TRUE(m.acceptor.Accept(Accept(2, 0, 0)).ok);
  ASSERT_TRUE(m.WaitFor([&] { return m.acceptor.DurableNeedFrom(0, 2, 0) == 1; }));
  env.set_fail_sync(true);
  AcceptReply r = m.acceptor.Accept(Accept(2, 0, 1));
  EXPECT_EQ(r.need_from, 1u);
  ASSERT_TRUE(m.WaitFor([&] { return !m.acceptor.JournalHealth().ok(); }));
  env.set_fail_sync(false);
  EXPECT_EQ(m.acceptor.DurableNeedFrom(0, 2, 0), 1u) << "slot 1 was never synced";
  r = m.acceptor.Accept(Accept(2, 0, 2));
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("durability"), std::string::npos) << r.error;
  uint64_t need = 0;
  EXPECT_FALSE(m.acceptor.AcceptLocal(0, TestSlot(2, 2), 2, 0, &need));
  PromiseMsg pm;
  pm.epoch = 3;
  replication::PromiseReply pr = m.acceptor.Promise(pm);
  EXPECT_FALSE(pr.ok);
  EXPECT_EQ(m.acceptor.promised(), 2u);
}

// A full disk refuses the accept and changes nothing; accepts go on once
// there is space again.
TEST(DurableAcceptor, AFullDiskRefusesTheAcceptAndChangesNothing) {
  TestDir d;
  FaultEnv env;
  Member m(&env, d.path(), 1);
  ASSERT_TRUE(m.acceptor.Accept(Accept(2, 0, 0)).ok);
  env.set_space(10);
  AcceptReply r = m.acceptor.Accept(Accept(3, 0, 1));
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("No space"), std::string::npos) << r.error;
  EXPECT_EQ(m.acceptor.promised(), 2u) << "a refused accept raises no promise";
  EXPECT_EQ(m.acceptor.next_slot(0), 1u);
  env.set_space(-1);
  ASSERT_TRUE(m.acceptor.Accept(Accept(3, 0, 1)).ok);
}

// A control vote that cannot be made durable is refused and not kept.
TEST(DurableAcceptor, AControlVoteThatCannotBeWrittenIsRefused) {
  TestDir d;
  FaultEnv env;
  Member m(&env, d.path(), 1);
  env.set_fail_sync(true);
  ControlMsg p;
  p.kind = ControlMsg::Kind::kPrepare;
  p.instance = 0;
  p.ballot = (1 << 8) | 1;
  replication::ControlReply r = m.control.Handle(p, 1);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("durability"), std::string::npos) << r.error;
  EXPECT_EQ(m.control.Current().promised, 0u);
}

// Without a journal nothing changes: need_from counts what is in memory.
TEST(DurableAcceptor, WithoutAJournalNeedFromIsWhatIsHeld) {
  Acceptor a(1);
  AcceptReply r = a.Accept(Accept(1, 0, 0));
  EXPECT_EQ(r.need_from, 1u);
  EXPECT_EQ(r.held_from, 0u);
  EXPECT_EQ(a.DurableNeedFrom(0, 1, 0), 1u);
}

}  // namespace
}  // namespace rolis::durability
