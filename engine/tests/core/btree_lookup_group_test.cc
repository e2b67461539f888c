// BTree::LookupGroup (follower replay) and BTree::LookupGroupWhole (a
// transaction's Prefetch) find what a lookup of each key alone finds: the
// record or its absence, the leaf and its version, across trees of different
// depths in one group and long keys that tie on their first 16 bytes; and
// beside a concurrent inserter every probe they resolve is right (a present
// key is never reported absent, a record found is the key's).
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <ostream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "btree.h"

namespace rolis::core {
namespace {

using GroupFn = void (*)(BTree::GroupProbe*, int);

struct Variant {
  const char* name;
  GroupFn fn;
};
// Test names in ctest show the walk's name, not the parameter's bytes.
void PrintTo(const Variant& v, std::ostream* os) { *os << v.name; }

class BTreeLookupGroup : public ::testing::TestWithParam<Variant> {};

std::string Key(uint64_t x, int tail) {
  std::string k(8, '\0');
  const uint64_t be = __builtin_bswap64(x);
  std::memcpy(k.data(), &be, 8);
  if (tail > 0) k += std::string(8, 'p') + std::string(static_cast<size_t>(tail), 't');  // ties on 16 bytes
  return k;
}

TEST_P(BTreeLookupGroup, FindsWhatALookupOfEachKeyFinds) {
  // A tree of one leaf, one of two levels, one of several.
  BTree trees[3];
  const uint64_t sizes[3] = {5, 300, 60000};
  std::vector<Record*> records;
  for (int t = 0; t < 3; ++t) {
    for (uint64_t x = 0; x < sizes[t]; x += 2) {  // odd keys stay absent
      const std::string k = Key(x, static_cast<int>(x % 5));
      Record* r = NewRecord(k, 8);
      ASSERT_EQ(trees[t].InsertIfAbsent(KeyRef(k), r), nullptr);
      records.push_back(r);
    }
  }
  std::mt19937_64 rng(11);
  int found = 0, absent = 0;
  for (int round = 0; round < 2000; ++round) {
    const int n = 1 + static_cast<int>(rng() % BTree::kLookupGroup);
    std::vector<std::string> keys;
    BTree::GroupProbe probes[BTree::kLookupGroup];
    for (int i = 0; i < n; ++i) {
      const int t = static_cast<int>(rng() % 3);
      const uint64_t x = rng() % (sizes[t] + 2);
      keys.push_back(Key(x, static_cast<int>(x % 5) + (rng() % 8 == 0 ? 1 : 0)));  // sometimes a near miss
      probes[i] = {};
      probes[i].tree = &trees[t];
    }
    for (int i = 0; i < n; ++i) probes[i].key = KeyRef(keys[static_cast<size_t>(i)]);
    GetParam().fn(probes, n);
    for (int i = 0; i < n; ++i) {
      const BTree::LookupResult want = probes[i].tree->Lookup(probes[i].key);
      ASSERT_TRUE(probes[i].resolved) << "no writer: every probe resolves";
      ASSERT_EQ(probes[i].rec, want.rec) << "round " << round << " key " << i;
      ASSERT_EQ(probes[i].leaf, want.leaf);
      ASSERT_EQ(probes[i].version, want.version);
      (want.rec ? found : absent)++;
    }
  }
  EXPECT_GT(found, 1000);
  EXPECT_GT(absent, 1000);
  for (Record* r : records) FreeRecord(r);
}

TEST_P(BTreeLookupGroup, ResolvedProbesAreRightBesideAnInserter) {
  BTree tree;
  constexpr uint64_t kPreloaded = 20000;  // even keys below this are present from the start
  std::vector<Record*> records;
  for (uint64_t x = 0; x < kPreloaded; x += 2) {
    Record* r = NewRecord(Key(x, 0), 8);
    ASSERT_EQ(tree.InsertIfAbsent(KeyRef(r->key()), r), nullptr);
    records.push_back(r);
  }
  std::atomic<bool> stop{false};
  std::vector<Record*> inserted;
  std::thread writer([&] {
    std::mt19937_64 rng(3);
    while (!stop.load(std::memory_order_relaxed) && inserted.size() < 200000) {
      Record* r = NewRecord(Key(rng() % 400000 | 1, 0), 8);  // odd keys: splits all over the tree
      if (tree.InsertIfAbsent(KeyRef(r->key()), r) == nullptr) {
        inserted.push_back(r);
      } else {
        FreeRecord(r);
      }
    }
  });
  std::mt19937_64 rng(5);
  int wrong = 0;
  for (int round = 0; round < 20000; ++round) {
    std::string keys[BTree::kLookupGroup];
    BTree::GroupProbe probes[BTree::kLookupGroup];
    for (int i = 0; i < BTree::kLookupGroup; ++i) {
      keys[i] = Key(rng() % kPreloaded, 0);
      probes[i] = {};
      probes[i].tree = &tree;
      probes[i].key = KeyRef(keys[i]);
    }
    GetParam().fn(probes, BTree::kLookupGroup);
    for (int i = 0; i < BTree::kLookupGroup; ++i) {
      if (!probes[i].resolved) continue;  // the caller looks it up again
      // Even keys were present all along; odd ones may be being inserted.
      const bool preloaded = keys[i][7] % 2 == 0;  // the big-endian number's last byte
      if (preloaded && probes[i].rec == nullptr) wrong++;
      if (probes[i].rec != nullptr && probes[i].rec->key() != keys[i]) wrong++;
    }
  }
  stop.store(true);
  writer.join();
  EXPECT_EQ(wrong, 0);
  for (Record* r : records) FreeRecord(r);
  for (Record* r : inserted) FreeRecord(r);
}

INSTANTIATE_TEST_SUITE_P(Walks, BTreeLookupGroup,
                         ::testing::Values(Variant{"Replay", &BTree::LookupGroup},
                                           Variant{"Whole", &BTree::LookupGroupWhole}),
                         [](const ::testing::TestParamInfo<Variant>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace rolis::core
