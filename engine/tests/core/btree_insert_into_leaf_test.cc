// BTree::InsertIntoLeaf, the insert into the leaf a LookupGroup probe ended
// at (follower replay's one-descent insert): it inserts only while the leaf
// is unchanged since the probe and has room, refuses otherwise without
// changing anything, hands back the version its insert left (so keys probed
// into the same leaf can follow it, as replay does), and inserts beside a
// concurrent writer leave every key present and the tree's invariants
// intact.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "btree.h"

namespace rolis::core {
namespace {

std::string Key(uint64_t x) {
  std::string k(8, '\0');
  const uint64_t be = __builtin_bswap64(x);
  std::memcpy(k.data(), &be, 8);
  return k;
}

// Looks `key` up alone and returns its probe.
BTree::GroupProbe Probe(const BTree& tree, const std::string& key) {
  BTree::GroupProbe p{};
  p.tree = &tree;
  p.key = KeyRef(key);
  BTree::LookupGroup(&p, 1);
  return p;
}

// Inserts key by InsertIntoLeaf at `p`, or else by a descent; returns
// whether InsertIntoLeaf took it.
bool InsertWithHint(BTree* tree, BTree::GroupProbe* p, Record* rec) {
  const KeyRef k(rec->key());
  if (p->resolved && p->rec == nullptr && tree->InsertIntoLeaf(p->leaf, &p->version, k, rec)) return true;
  EXPECT_EQ(tree->InsertIfAbsent(k, rec), nullptr);
  return false;
}

TEST(BTreeInsertIntoLeaf, GroupsOfInsertsAgreeWithStdMap) {
  BTree tree;
  std::map<std::string, Record*> model;
  std::mt19937_64 rng(7);
  int hinted = 0, refused = 0;
  for (int round = 0; round < 400; ++round) {
    // A group of distinct absent keys, some in runs of neighbours (as an
    // order's lines), some long keys that tie on their first 16 bytes.
    std::vector<std::string> keys;
    uint64_t next = rng() % 100000;
    while (keys.size() < BTree::kLookupGroup) {
      next = rng() % 3 == 0 ? rng() % 100000 : next + 1;
      std::string k = Key(next);
      if (rng() % 4 == 0) k += std::string(1 + rng() % 20, static_cast<char>('a' + rng() % 3));
      if (model.count(k) == 0 && std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
    }
    BTree::GroupProbe probes[BTree::kLookupGroup];
    for (size_t i = 0; i < keys.size(); ++i) {
      probes[i] = {};
      probes[i].tree = &tree;
      probes[i].key = KeyRef(keys[i]);
    }
    BTree::LookupGroup(probes, static_cast<int>(keys.size()));
    for (size_t i = 0; i < keys.size(); ++i) {
      ASSERT_TRUE(probes[i].resolved);
      ASSERT_EQ(probes[i].rec, nullptr);
      Record* r = NewRecord(keys[i], 0);
      const uint64_t seen = probes[i].version;
      if (InsertWithHint(&tree, &probes[i], r)) {
        hinted++;
        BTree::FollowInsert(probes[i], seen, probes + i + 1, static_cast<int>(keys.size() - i - 1));
      } else {
        refused++;
      }
      model[keys[i]] = r;
    }
  }
  // Both paths ran: groups share leaves (the later key finds its leaf
  // moved) and leaves fill up (a split needs a descent).
  EXPECT_GT(hinted, 1000);
  EXPECT_GT(refused, 100);
  std::string why;
  ASSERT_TRUE(tree.CheckInvariantsUnsafe(&why)) << why;
  std::vector<std::string> in_order;
  tree.ForEachRecordUnsafe([&](Record* r) { in_order.emplace_back(r->key()); });
  std::vector<std::string> expected;
  for (const auto& [k, r] : model) {
    expected.push_back(k);
    ASSERT_EQ(tree.Lookup(KeyRef(k)).rec, r) << "key of " << k.size() << " bytes";
  }
  EXPECT_EQ(in_order, expected);
  tree.ForEachRecordUnsafe([](Record* r) { FreeRecord(r); });
}

TEST(BTreeInsertIntoLeaf, RefusesALeafThatMovedOrIsFull) {
  BTree tree;
  std::vector<Record*> recs;
  auto insert = [&](uint64_t x) {
    recs.push_back(NewRecord(Key(x), 0));
    ASSERT_EQ(tree.InsertIfAbsent(KeyRef(recs.back()->key()), recs.back()), nullptr);
  };
  insert(10);
  const std::string k20 = Key(20);
  const BTree::GroupProbe before = Probe(tree, k20);
  ASSERT_TRUE(before.resolved);
  ASSERT_EQ(before.rec, nullptr);
  insert(30);  // the same leaf (the only one) moves
  Record* r20 = NewRecord(k20, 0);
  uint64_t version = before.version;
  EXPECT_FALSE(tree.InsertIntoLeaf(before.leaf, &version, KeyRef(k20), r20));
  EXPECT_EQ(version, before.version);
  EXPECT_EQ(tree.Lookup(KeyRef(k20)).rec, nullptr);

  // Probed now, it goes in; the version handed back is the leaf's, and a
  // neighbour probed before that insert follows it in.
  const BTree::GroupProbe now = Probe(tree, k20);
  const std::string k25 = Key(25);
  const BTree::GroupProbe neighbour = Probe(tree, k25);
  ASSERT_EQ(neighbour.version, now.version);
  version = now.version;
  EXPECT_TRUE(tree.InsertIntoLeaf(now.leaf, &version, KeyRef(k20), r20));
  recs.push_back(r20);
  EXPECT_EQ(tree.Lookup(KeyRef(k20)).rec, r20);
  EXPECT_EQ(version, tree.Lookup(KeyRef(k20)).version);
  Record* r25 = NewRecord(k25, 0);
  uint64_t stale = neighbour.version;
  EXPECT_FALSE(tree.InsertIntoLeaf(neighbour.leaf, &stale, KeyRef(k25), r25));
  EXPECT_TRUE(tree.InsertIntoLeaf(neighbour.leaf, &version, KeyRef(k25), r25));
  recs.push_back(r25);
  EXPECT_EQ(tree.Lookup(KeyRef(k25)).rec, r25);

  // Fill the one leaf, then a probe of an absent key finds it full.
  for (uint64_t x = 100; tree.Lookup(KeyRef(Key(10))).leaf->count < kLeafCap; ++x) insert(x);
  ASSERT_EQ(tree.Lookup(KeyRef(Key(10))).leaf, tree.Lookup(KeyRef(Key(100))).leaf);
  const std::string k5 = Key(5);
  const BTree::GroupProbe full = Probe(tree, k5);
  ASSERT_TRUE(full.resolved);
  Record* r5 = NewRecord(k5, 0);
  version = full.version;
  EXPECT_FALSE(tree.InsertIntoLeaf(full.leaf, &version, KeyRef(k5), r5));
  EXPECT_EQ(tree.Lookup(KeyRef(k5)).rec, nullptr);
  FreeRecord(r5);
  std::string why;
  EXPECT_TRUE(tree.CheckInvariantsUnsafe(&why)) << why;
  for (Record* r : recs) FreeRecord(r);
}

TEST(BTreeInsertIntoLeaf, BesideAConcurrentWriterEveryKeyLands) {
  BTree tree;
  constexpr uint64_t kPerThread = 60000;
  std::atomic<bool> go{false};
  // Even keys by plain inserts, odd keys by probe-then-InsertIntoLeaf:
  // they share leaves, which split under both.
  std::thread writer([&] {
    while (!go.load()) std::this_thread::yield();
    for (uint64_t i = 0; i < kPerThread; ++i) {
      Record* r = NewRecord(Key(2 * ((i * 7919) % kPerThread)), 0);
      ASSERT_EQ(tree.InsertIfAbsent(KeyRef(r->key()), r), nullptr);
    }
  });
  int hinted = 0;
  go.store(true);
  for (uint64_t i = 0; i < kPerThread; ++i) {
    const std::string k = Key(2 * ((i * 104729) % kPerThread) + 1);
    BTree::GroupProbe p = Probe(tree, k);
    if (!p.resolved) {
      Record* r = NewRecord(k, 0);
      ASSERT_EQ(tree.InsertIfAbsent(KeyRef(k), r), nullptr);
      continue;
    }
    ASSERT_EQ(p.rec, nullptr);
    hinted += InsertWithHint(&tree, &p, NewRecord(k, 0)) ? 1 : 0;
  }
  writer.join();
  EXPECT_GT(hinted, 0);
  std::string why;
  ASSERT_TRUE(tree.CheckInvariantsUnsafe(&why)) << why;
  for (uint64_t x = 0; x < 2 * kPerThread; ++x) {
    const Record* r = tree.Lookup(KeyRef(Key(x))).rec;
    ASSERT_NE(r, nullptr) << x;
    ASSERT_EQ(r->key(), Key(x));
  }
  tree.ForEachRecordUnsafe([](Record* r) { FreeRecord(r); });
}

}  // namespace
}  // namespace rolis::core
