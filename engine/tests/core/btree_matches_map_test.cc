// The index behaves exactly like std::map under random single-threaded
// inserts, removals, lookups and limited scans, for short keys, long keys
// keys sharing long prefixes and TPC-C-like keys that tie on their first
// 8 bytes, and keeps its structural invariants.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "btree.h"

namespace rolis::core {
namespace {

enum class KeyShape { kShort, kMixed, kLongSharedPrefix, kTiedFirstSlice };

std::string RandomKey(std::mt19937_64& rng, KeyShape shape) {
  static const std::string prefix(300, 'p');
  switch (shape) {
    case KeyShape::kShort: {
      // 1..12 bytes over a small alphabet: many prefixes of one another and zero bytes.
      std::string k(1 + rng() % 12, '\0');
      for (char& c : k) c = static_cast<char>(rng() % 4);
      return k;
    }
    case KeyShape::kMixed: {
      size_t len = rng() % 10 == 0 ? 17 + rng() % 1000 : 1 + rng() % 40;
      std::string k(len, '\0');
      for (char& c : k) c = static_cast<char>('a' + rng() % 3);
      return k;
    }
    case KeyShape::kLongSharedPrefix: {
      std::string k = prefix.substr(0, 8 + rng() % 292);
      size_t tail = rng() % 6;
      for (size_t i = 0; i < tail; ++i) k.push_back(static_cast<char>(rng() % 3));
      return k;
    }
    case KeyShape::kTiedFirstSlice: {
      // One of 3 eight-byte prefixes, then 0..12 bytes: keys of 8..20 bytes
      // that tie on the first slice, some on both slices.
      std::string k(8, static_cast<char>(rng() % 3));
      size_t tail = rng() % 13;
      for (size_t i = 0; i < tail; ++i) k.push_back(static_cast<char>(rng() % 5 == 0 ? 0 : rng() % 256));
      return k;
    }
  }
  return "x";
}

class BTreeMatchesMapTest : public ::testing::TestWithParam<std::tuple<uint64_t, KeyShape>> {};

TEST_P(BTreeMatchesMapTest, RandomOperationsAgreeWithStdMap) {
  auto [seed, shape] = GetParam();
  std::mt19937_64 rng(seed);
  BTree tree;
  std::map<std::string, Record*> model;
  const int kOps = 40000;
  for (int op = 0; op < kOps; ++op) {
    std::string key = RandomKey(rng, shape);
    KeyRef k(key);
    int what = static_cast<int>(rng() % 100);
    if (what < 45) {  // insert
      Record* r = NewRecord(key, 8);
      Record* existing = tree.InsertIfAbsent(k, r);
      auto it = model.find(key);
      if (it != model.end()) {
        ASSERT_EQ(existing, it->second) << "insert of a present key must return its record";
        FreeRecord(r);
      } else {
        ASSERT_EQ(existing, nullptr) << "insert of an absent key must insert";
        model.emplace(key, r);
      }
    } else if (what < 65) {  // remove
      auto it = model.find(key);
      Record* expected = it == model.end() ? nullptr : it->second;
      bool removed = tree.Remove(k, expected ? expected : reinterpret_cast<Record*>(8));
      ASSERT_EQ(removed, expected != nullptr);
      if (expected) {
        FreeRecord(expected);
        model.erase(it);
      }
    } else if (what < 85) {  // lookup
      auto it = model.find(key);
      ASSERT_EQ(tree.Lookup(k).rec, it == model.end() ? nullptr : it->second);
    } else {  // scan from key with a limit
      size_t limit = 1 + rng() % 50;
      std::vector<Record*> got;
      tree.Scan(k, [&](Leaf*, uint64_t, Record* const* recs, int n) {
        for (int i = 0; i < n && got.size() < limit; ++i) got.push_back(recs[i]);
        return got.size() < limit;
      });
      std::vector<Record*> want;
      for (auto it = model.lower_bound(key); it != model.end() && want.size() < limit; ++it) {
        want.push_back(it->second);
      }
      ASSERT_EQ(got, want) << "scan from a key of length " << key.size();
    }
    if (op % 5000 == 0) {
      std::string why;
      ASSERT_TRUE(tree.CheckInvariantsUnsafe(&why)) << why;
    }
  }
  std::string why;
  ASSERT_TRUE(tree.CheckInvariantsUnsafe(&why)) << why;
  // A full scan returns exactly the model, in order.
  std::vector<Record*> all;
  tree.Scan(KeyRef(std::string_view()), [&](Leaf*, uint64_t, Record* const* recs, int n) {
    all.insert(all.end(), recs, recs + n);
    return true;
  });
  std::vector<Record*> want;
  for (auto& [k, r] : model) want.push_back(r);
  ASSERT_EQ(all, want);
  for (auto& [k, r] : model) FreeRecord(r);
}

INSTANTIATE_TEST_SUITE_P(Seeds, BTreeMatchesMapTest,
                         ::testing::Combine(::testing::Values(1, 2, 3, 42),
                                            ::testing::Values(KeyShape::kShort, KeyShape::kMixed,
                                                              KeyShape::kLongSharedPrefix,
                                                              KeyShape::kTiedFirstSlice)));

TEST(BTreeTest, SequentialAndReverseInsertsStaySorted) {
  BTree tree;
  std::vector<Record*> recs;
  for (int i = 0; i < 20000; ++i) {
    int x = i % 2 ? i : 40000 - i;
    char buf[8];
    uint64_t be = __builtin_bswap64(static_cast<uint64_t>(x));
    std::memcpy(buf, &be, 8);
    Record* r = NewRecord(std::string_view(buf, 8), 8);
    ASSERT_EQ(tree.InsertIfAbsent(KeyRef(std::string_view(buf, 8)), r), nullptr);
    recs.push_back(r);
  }
  std::string why;
  ASSERT_TRUE(tree.CheckInvariantsUnsafe(&why)) << why;
  for (Record* r : recs) FreeRecord(r);
}

TEST(BTreeTest, FixedStepSearchMatchesLowerBound) {
  // Sorted slices, kPadSlice from `n` on (as in a node), real slices that
  // equal kPadSlice included: the search stops at the first slice >= x.
  std::mt19937_64 rng(7);
  for (int round = 0; round < 2000; ++round) {
    uint64_t a[kLeafCap];
    const int n = static_cast<int>(rng() % (kLeafCap + 1));
    for (int i = 0; i < n; ++i) a[i] = rng() % 4 == 0 ? kPadSlice : rng() % 64;
    std::sort(a, a + n);
    for (int i = n; i < kLeafCap; ++i) a[i] = kPadSlice;
    for (uint64_t x : {uint64_t{0}, rng() % 64, rng() % 64, kPadSlice - 1, kPadSlice}) {
      const int want = static_cast<int>(std::lower_bound(a, a + n, x) - a);
      ASSERT_EQ(NodeLowerBound<kLeafCap>(a, n, x), want) << "n=" << n << " x=" << x;
    }
  }
}

TEST(BTreeTest, KeysOfAllOnesAreFoundDespitePadding) {
  // A key whose first slice is all ones equals the padding value of unused
  // slots; it must still be found, kept in order and split correctly.
  BTree tree;
  std::map<std::string, Record*> want;
  for (int i = 0; i < 3000; ++i) {
    std::string k(8, '\xff');
    if (i > 0) k += std::to_string(i);  // ties on the all-ones first slice
    if (i % 3 == 0) k = std::string(1 + i % 7, '\xff');
    if (want.count(k)) continue;
    Record* r = NewRecord(k, 8);
    ASSERT_EQ(tree.InsertIfAbsent(KeyRef(k), r), nullptr);
    want[k] = r;
  }
  std::string why;
  ASSERT_TRUE(tree.CheckInvariantsUnsafe(&why)) << why;
  for (auto& [k, r] : want) ASSERT_EQ(tree.Lookup(KeyRef(k)).rec, r) << k.size();
  ASSERT_EQ(tree.Lookup(KeyRef(std::string(8, '\xfe'))).rec, nullptr);
  for (auto& [k, r] : want) {
    ASSERT_TRUE(tree.Remove(KeyRef(k), r));
    FreeRecord(r);
  }
  ASSERT_TRUE(tree.CheckInvariantsUnsafe(&why)) << why;
}

}  // namespace
}  // namespace rolis::core
