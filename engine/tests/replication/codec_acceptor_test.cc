// The batch encoding and the acceptor's rules, one rule per test.
#include <gtest/gtest.h>

#include "acceptor.h"
#include "codec.h"
#include "rolis/value_patch.h"
#include "txn_batch.h"

namespace rolis::replication {
namespace {

using testing::TxnBatch;

AcceptMsg Accept(uint64_t epoch, uint32_t stream, uint64_t index, BatchPtr v, uint64_t log_start = 0) {
  AcceptMsg m;
  m.from = 2;
  m.epoch = epoch;
  m.stream = stream;
  m.slot = Slot{index, epoch, std::move(v)};
  m.log_start = log_start;
  return m;
}

TEST(Codec, RoundTripsTransactionsAndRejectsCorruptPayloads) {
  std::string p;
  WriteRecord a[] = {{1, "alpha", "one", false}, {2, "beta", "", true}};
  AppendTxn(&p, 10, a);
  AppendTxn(&p, 12, std::span<const WriteRecord>(a, 1));
  DecodedBatch out;
  ASSERT_TRUE(DecodeBatch(p, 2, 12, &out).ok());
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out.ts(0), 10u);
  EXPECT_EQ(out.ts(1), 12u);
  ASSERT_EQ(out.writes(0).size(), 2u);
  EXPECT_EQ(out.writes(0)[0].table, 1u);
  EXPECT_EQ(out.writes(0)[0].key, "alpha");
  EXPECT_FALSE(out.writes(0)[0].is_delete);
  EXPECT_EQ(out.writes(0)[1].key, "beta");
  EXPECT_TRUE(out.writes(0)[1].is_delete);
  ASSERT_EQ(out.writes(1).size(), 1u);
  EXPECT_EQ(out.writes(1)[0].value, "one");
  EXPECT_TRUE(CheckPayload(p, 2, 12, Crc32c(p)).ok());
  // Every truncation, a wrong count, a wrong last ts and a flipped byte fail.
  for (size_t n = 0; n < p.size(); n++) EXPECT_FALSE(DecodeBatch(p.substr(0, n), 2, 12, &out).ok()) << n;
  EXPECT_FALSE(DecodeBatch(p, 3, 12, &out).ok());
  EXPECT_FALSE(DecodeBatch(p, 1, 10, &out).ok());
  EXPECT_FALSE(DecodeBatch(p, 2, 13, &out).ok());
  std::string q = p;
  q[q.size() / 2] ^= 0x40;
  EXPECT_FALSE(CheckPayload(q, 2, 12, Crc32c(p)).ok());
}

// Values of every length from 0 to 100 bytes and keys from 1 to 101 (the
// encoder copies up to 64 bytes inline, five ways by length, longer ones
// with memcpy: rolis/copy_bytes.h) come back byte for byte.
TEST(Codec, RoundTripsKeysAndValuesOfEveryShortLength) {
  constexpr uint32_t kLongest = 100;
  std::string bytes;
  for (uint32_t i = 0; i <= kLongest; i++) bytes.push_back(static_cast<char>('!' + i % 90));
  std::string p;
  for (uint32_t len = 0; len <= kLongest; len++) {
    WriteRecord w{len, std::string_view(bytes).substr(0, len + 1), std::string_view(bytes).substr(kLongest + 1 - len),
                  false};
    AppendTxn(&p, 10 + len, std::span<const WriteRecord>(&w, 1));
  }
  DecodedBatch out;
  const Status s = DecodeBatch(p, kLongest + 1, 10 + kLongest, &out);
  ASSERT_TRUE(s.ok()) << s.ToString();
  ASSERT_EQ(out.size(), kLongest + 1);
  for (uint32_t len = 0; len <= kLongest; len++) {
    ASSERT_EQ(out.writes(len).size(), 1u) << len;
    EXPECT_EQ(out.ts(len), 10u + len);
    EXPECT_EQ(out.writes(len)[0].table, len);
    EXPECT_EQ(out.writes(len)[0].key, bytes.substr(0, len + 1)) << len;
    EXPECT_EQ(out.writes(len)[0].value, bytes.substr(kLongest + 1 - len)) << len;
  }
}

// A patch (rolis/value_patch.h) travels with its base version's ts; a
// payload whose patch runs are cut short or overlap is refused on receipt.
TEST(Codec, RoundTripsPatchesAndRejectsMalformedOnes) {
  const std::string base(64, 'a');
  std::string changed = base;
  changed[9] = 'b';
  std::string runs;
  ASSERT_TRUE(AppendPatch(base, changed, 32, &runs));
  WriteRecord w[] = {{3, "row", runs, false, true, 41}, {3, "other", "full", false}};
  std::string p;
  AppendTxn(&p, 5, w);
  DecodedBatch out;
  ASSERT_TRUE(DecodeBatch(p, 1, 5, &out).ok());
  ASSERT_EQ(out.writes(0).size(), 2u);
  const WriteRecord& got = out.writes(0)[0];
  EXPECT_TRUE(got.is_patch);
  EXPECT_FALSE(got.is_delete);
  EXPECT_EQ(got.base_ts, 41u);
  EXPECT_EQ(got.value, runs);
  EXPECT_FALSE(out.writes(0)[1].is_patch);
  for (size_t n = 0; n < p.size(); n++) EXPECT_FALSE(DecodeBatch(p.substr(0, n), 1, 5, &out).ok()) << n;

  // The same frame around malformed runs: a length past the runs' end.
  std::string bad = runs;
  bad[2] = static_cast<char>(bad[2] + 1);
  WriteRecord m[] = {{3, "row", bad, false, true, 1}};
  std::string q;
  AppendTxn(&q, 5, m);
  Status s = CheckPayload(q, 1, 5, Crc32c(q));
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("malformed patch"), std::string::npos) << s.ToString();
}

// DecodeBatch reuses its arrays from one payload to the next (the second
// decode reads the same as the first, with nothing left of it), and a
// failure leaves it empty.
TEST(Codec, DecodeBatchIsReusedAndLeftEmptyByAFailure) {
  std::string p;
  WriteRecord a[] = {{1, "alpha", "one", false}, {2, "beta", "", true}, {0, "gamma", "three", false}};
  AppendTxn(&p, 10, std::span<const WriteRecord>(a, 2));
  AppendTxn(&p, 12, std::span<const WriteRecord>(a + 2, 1));
  AppendTxn(&p, 15, std::span<const WriteRecord>());
  const uint64_t want_ts[] = {10, 12, 15};
  const std::span<const WriteRecord> want_writes[] = {{a, 2}, {a + 2, 1}, {}};
  DecodedBatch got;
  for (int round = 0; round < 2; round++) {  // the second decode reuses the arrays
    ASSERT_TRUE(DecodeBatch(p, 3, 15, &got).ok());
    ASSERT_EQ(got.size(), 3u);
    for (size_t i = 0; i < 3; i++) {
      EXPECT_EQ(got.ts(i), want_ts[i]);
      ASSERT_EQ(got.writes(i).size(), want_writes[i].size());
      for (size_t j = 0; j < want_writes[i].size(); j++) {
        const WriteRecord& g = got.writes(i)[j];
        const WriteRecord& w = want_writes[i][j];
        EXPECT_EQ(g.table, w.table);
        EXPECT_EQ(g.key, w.key);
        EXPECT_EQ(g.value, w.value);
        EXPECT_EQ(g.is_delete, w.is_delete);
      }
    }
  }
  for (size_t n = 0; n < p.size(); n++) {
    EXPECT_FALSE(DecodeBatch(p.substr(0, n), 3, 15, &got).ok()) << n;
    EXPECT_EQ(got.size(), 0u);
  }
  EXPECT_FALSE(DecodeBatch(p, 3, 14, &got).ok());
}

// CRC-32C (Castagnoli): the standard
// check value, and a bitwise reference at every length around the 8-byte
// steps of the SSE4.2 loop and its three-block steps, continued from a
// previous crc.
TEST(Codec, Crc32cIsCastagnoliAtEveryLength) {
  EXPECT_EQ(Crc32c("123456789"), 0xE3069283u);
  auto reference = [](std::string_view d, uint32_t crc) {
    crc = ~crc;
    for (unsigned char c : d) {
      crc ^= c;
      for (int k = 0; k < 8; k++) crc = (crc & 1) ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
    }
    return ~crc;
  };
  std::string s;
  for (int i = 0; i < 80; i++) s.push_back(static_cast<char>(i * 37 + 11));
  for (size_t n = 0; n <= s.size(); n++) {
    std::string_view d(s.data(), n);
    EXPECT_EQ(Crc32c(d), reference(d, 0)) << n;
    EXPECT_EQ(Crc32c(d, 0x12345678u), reference(d, 0x12345678u)) << n;
  }
  // Around the three-block steps (3 x 256 and 3 x 4096 bytes), from an
  // unaligned start, whole and split at an odd point.
  std::string big;
  uint32_t x = 7;
  for (int i = 0; i < 40000; i++) {
    x = x * 1103515245u + 12345u;
    big.push_back(static_cast<char>(x >> 24));
  }
  for (size_t n : {767u, 768u, 769u, 775u, 1536u, 12287u, 12288u, 12289u, 12288u + 768u + 7u, 24576u, 39990u}) {
    std::string_view d(big.data() + 3, n);
    const uint32_t want = reference(d, 0);
    EXPECT_EQ(Crc32c(d), want) << n;
    EXPECT_EQ(Crc32c(d, 0xFFFFFFFFu), reference(d, 0xFFFFFFFFu)) << n;
    EXPECT_EQ(Crc32c(d.substr(n / 3), Crc32c(d.substr(0, n / 3))), want) << n;
  }
}

TEST(Acceptor, RejectsAcceptsOfAnEpochBelowItsPromise) {
  Acceptor a(1);
  PromiseMsg pm{3, 5, false, {}};
  ASSERT_TRUE(a.Promise(pm).ok);
  AcceptReply r = a.Accept(Accept(4, 0, 0, TxnBatch(4, 1)));
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.promised_epoch, 5u);
  Slot s;
  EXPECT_FALSE(a.Get(0, 0, &s));  // nothing changed
  EXPECT_TRUE(a.Accept(Accept(5, 0, 0, TxnBatch(5, 1))).ok);
}

TEST(Acceptor, PromiseOfALowerEpochIsRefusedAndReturnsEveryHeldSlot) {
  Acceptor a(2);
  ASSERT_TRUE(a.Accept(Accept(2, 0, 0, TxnBatch(2, 1))).ok);
  ASSERT_TRUE(a.Accept(Accept(2, 1, 3, TxnBatch(2, 4))).ok);
  EXPECT_FALSE(a.Promise(PromiseMsg{3, 1, false, {}}).ok);
  PromiseReply r = a.Promise(PromiseMsg{3, 3, false, {}});
  ASSERT_TRUE(r.ok);
  ASSERT_EQ(r.streams.size(), 2u);
  EXPECT_EQ(r.streams[0].slots.size(), 1u);
  EXPECT_EQ(r.streams[1].slots[0].index, 3u);
  EXPECT_EQ(r.streams[1].slots[0].ballot, 2u);
  EXPECT_EQ(a.promised(), 3u);
  // A peek promises nothing.
  EXPECT_TRUE(a.Promise(PromiseMsg{3, 9, true, {}}).ok);
  EXPECT_EQ(a.promised(), 3u);
}

// Ballots are unique per proposer: an equal epoch is promised again only to
// the proposer it was promised to (a retry), never to a second candidate,
// so two candidates can never both gather a majority for one epoch.
TEST(Acceptor, AnEqualEpochIsPromisedAgainOnlyToTheSameProposer) {
  Acceptor a(1);
  ASSERT_TRUE(a.Accept(Accept(1, 0, 0, TxnBatch(1, 1))).ok);
  ASSERT_TRUE(a.Promise(PromiseMsg{2, 4, false, {}}).ok);
  EXPECT_TRUE(a.Promise(PromiseMsg{2, 4, false, {}}).ok) << "a retry of the same candidate";
  PromiseReply other = a.Promise(PromiseMsg{3, 4, false, {}});
  EXPECT_FALSE(other.ok) << "a second proposer of the same epoch";
  EXPECT_EQ(other.promised_epoch, 4u);
  EXPECT_NE(other.error.find("member 2"), std::string::npos) << other.error;
  EXPECT_TRUE(other.streams.empty()) << "a refused promise returns no slots";
  // A newer epoch goes to anyone, and then belongs to that proposer.
  ASSERT_TRUE(a.Promise(PromiseMsg{3, 5, false, {}}).ok);
  EXPECT_FALSE(a.Promise(PromiseMsg{2, 5, false, {}}).ok);
  EXPECT_TRUE(a.Promise(PromiseMsg{3, 5, false, {}}).ok);
  // A peek promises nothing and is answered whoever asks.
  EXPECT_TRUE(a.Promise(PromiseMsg{2, 5, true, {}}).ok);
  EXPECT_EQ(a.promised(), 5u);
}

// A promise raised without Promise (an accept of a newer epoch, a catch-up,
// a restart from the journal) does not say whom it was for: an equal epoch
// is then refused to every proposer; a newer one is granted.
TEST(Acceptor, AnEqualEpochWhoseProposerIsUnknownIsRefusedToEveryone) {
  Acceptor a(1);
  ASSERT_TRUE(a.Accept(Accept(3, 0, 0, TxnBatch(3, 1))).ok);
  EXPECT_FALSE(a.Promise(PromiseMsg{2, 3, false, {}}).ok);
  EXPECT_FALSE(a.Promise(PromiseMsg{3, 3, false, {}}).ok);
  a.RaisePromise(6);
  EXPECT_FALSE(a.Promise(PromiseMsg{2, 6, false, {}}).ok);
  ASSERT_TRUE(a.Promise(PromiseMsg{2, 7, false, {}}).ok);
  EXPECT_TRUE(a.Promise(PromiseMsg{2, 7, false, {}}).ok);
}

TEST(Acceptor, NeedFromIsTheFirstSlotNotHeldAtTheEpochsBallot) {
  Acceptor a(1);
  EXPECT_EQ(a.Accept(Accept(1, 0, 0, TxnBatch(1, 1))).need_from, 1u);
  EXPECT_EQ(a.Accept(Accept(1, 0, 2, TxnBatch(1, 3))).need_from, 1u);  // hole at 1
  EXPECT_EQ(a.Accept(Accept(1, 0, 1, TxnBatch(1, 2))).need_from, 3u);
  // A new epoch re-proposes from slot 0: the old ballots no longer count.
  EXPECT_EQ(a.Accept(Accept(2, 0, 1, TxnBatch(1, 2))).need_from, 0u);
  EXPECT_EQ(a.Accept(Accept(2, 0, 0, TxnBatch(1, 1))).need_from, 2u);
}

TEST(Acceptor, DuplicateAcceptsChangeNothing) {
  Acceptor a(1);
  auto v = TxnBatch(1, 1);
  ASSERT_TRUE(a.Accept(Accept(1, 0, 0, v)).ok);
  ASSERT_TRUE(a.Accept(Accept(1, 0, 0, v)).ok);
  EXPECT_EQ(a.slot_count(0), 1u);
}

TEST(Acceptor, CompactionKeepsTheReachOfWhatItDrops) {
  Acceptor a(1);
  EpochRecord rec{1, {}};
  for (uint64_t i = 0; i < 4; i++) ASSERT_TRUE(a.Accept(Accept(1, 0, i, TxnBatch(1, 10 + i))).ok);
  a.Compact(0, 3, rec);
  PromiseReply r = a.Promise(PromiseMsg{3, 2, false, {}});
  EXPECT_EQ(r.streams[0].first_slot, 3u);
  EXPECT_EQ(r.streams[0].base_key, (LogKey{1, 12}));
  ASSERT_EQ(r.streams[0].slots.size(), 1u);
  // An accept below the compaction point is acknowledged (chosen already).
  EXPECT_TRUE(a.Accept(Accept(2, 0, 1, TxnBatch(1, 11))).ok);
  EXPECT_EQ(a.slot_count(0), 1u);
}

// A member that votes while it transfers its state adopts what it read from
// the others, and keeps its own votes from the snapshot on where their
// ballot is higher (one cast after it read them may be part of a chosen
// majority); below the snapshot nothing is kept.
TEST(Acceptor, AStateTransferKeepsItsOwnVotesAfterTheSnapshotWhereTheirBallotIsHigher) {
  Acceptor a(1);
  ASSERT_TRUE(a.Accept(Accept(2, 0, 1, TxnBatch(2, 11))).ok);  // below the snapshot
  ASSERT_TRUE(a.Accept(Accept(3, 0, 5, TxnBatch(3, 15))).ok);  // after it, newer than what was read
  ASSERT_TRUE(a.Accept(Accept(3, 0, 6, TxnBatch(3, 16))).ok);  // cast after the read: nobody else has it
  StreamSlots adopted;
  adopted.first_slot = 4;
  adopted.base_key = LogKey{2, 13};
  adopted.slots = {Slot{4, 2, TxnBatch(2, 14)}, Slot{5, 2, TxnBatch(2, 99)}};
  a.Reset({adopted}, 3);
  Slot got;
  EXPECT_FALSE(a.Get(0, 1, &got));
  ASSERT_TRUE(a.Get(0, 4, &got));
  EXPECT_EQ(got.ballot, 2u);
  ASSERT_TRUE(a.Get(0, 5, &got));
  EXPECT_EQ(got.ballot, 3u) << "its own vote at a higher ballot was replaced";
  EXPECT_EQ(got.value->key(), (LogKey{3, 15}));
  EXPECT_TRUE(a.Get(0, 6, &got)) << "a vote cast after the read was forgotten";
  EXPECT_EQ(a.first_slot(0), 4u);
  EXPECT_EQ(a.slot_count(0), 3u);
  EXPECT_EQ(a.promised(), 3u);
}

TEST(ControlAcceptor, DecidesOnePerInstanceAndFailsTheCompareAndSetOnceANewerRecordIsKnown) {
  ControlAcceptor c;
  auto rec = [](uint64_t e) { return std::make_shared<const Decided>(Decided{EpochRecord{e, {}}, 1, {}, 0, {}}); };
  ControlMsg p{ControlMsg::Kind::kPrepare, 1, 0, (1 << 8) | 1, nullptr, nullptr};
  ASSERT_TRUE(c.Handle(p, 1).ok);
  ControlMsg lower = p;
  lower.ballot = (1 << 8) | 0;
  EXPECT_FALSE(c.Handle(lower, 1).ok);  // below the promise
  ControlMsg acc{ControlMsg::Kind::kAccept, 1, 0, (1 << 8) | 1, rec(1), nullptr};
  ASSERT_TRUE(c.Handle(acc, 1).ok);
  ControlMsg p2{ControlMsg::Kind::kPrepare, 2, 0, (2 << 8) | 2, nullptr, nullptr};
  ControlReply r = c.Handle(p2, 1);
  ASSERT_TRUE(r.ok);
  ASSERT_TRUE(r.accepted);  // a later proposer learns the accepted value
  EXPECT_EQ(r.accepted->record.epoch, 1u);
  ASSERT_TRUE(c.Learn(rec(1)));
  EXPECT_FALSE(c.Handle(p2, 1).ok);  // instance 0 is settled: a newer record is known
  // A member that restarted empty adopts a majority's votes: it cannot
  // promise a lower ballot, nor lose a value accepted there.
  ControlAcceptor fresh;
  fresh.Learn(rec(3));
  ControlAcceptor::Vote v;
  v.instance = InstanceAfter(rec(3).get());  // the instance after the record of epoch 3
  v.promised = (5 << 8) | 2;
  v.accepted_ballot = (4 << 8) | 1;
  v.accepted = rec(4);
  fresh.Adopt(v);
  ControlMsg p3{ControlMsg::Kind::kPrepare, 2, InstanceAfter(rec(3).get()), (4 << 8) | 3, nullptr, rec(3)};
  EXPECT_FALSE(fresh.Handle(p3, 1).ok);  // below the adopted promise
  p3.ballot = (6 << 8) | 3;
  ControlReply r3 = fresh.Handle(p3, 1);
  ASSERT_TRUE(r3.ok);
  ASSERT_TRUE(r3.accepted);
  EXPECT_EQ(r3.accepted->record.epoch, 4u);
}

}  // namespace
}  // namespace rolis::replication
