// BTree::PrefetchGroup and Database::PrefetchReplicated only warm caches:
// run against concurrent inserts (splits at every level) they neither crash
// nor change the tree, and invalid writes passed to PrefetchReplicated are
// skipped without changing anything.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "btree.h"
#include "test_util.h"

namespace rolis::core {
namespace {

std::string Key(uint64_t x) {
  std::string k(8, '\0');
  uint64_t be = __builtin_bswap64(x);
  std::memcpy(k.data(), &be, 8);
  return k;
}

TEST(BTreePrefetch, ConcurrentSplitsLeaveTreeIntact) {
  BTree tree;
  constexpr int kN = 200000;
  std::vector<Record*> recs;
  std::atomic<bool> stop{false};
  std::atomic<long> groups{0};
  std::thread prefetcher([&] {
    std::mt19937_64 rng(3);
    std::vector<std::string> ks(BTree::kPrefetchGroup);
    KeyRef refs[BTree::kPrefetchGroup];
    while (!stop.load(std::memory_order_relaxed)) {
      for (int i = 0; i < BTree::kPrefetchGroup; i++) {
        ks[i] = Key(rng() % (2 * kN));
        refs[i] = KeyRef(ks[i]);
      }
      tree.PrefetchGroup(refs, 1 + static_cast<int>(rng() % BTree::kPrefetchGroup));
      groups.fetch_add(1, std::memory_order_relaxed);
    }
  });
  for (int i = 0; i < kN; i++) {
    uint64_t x = static_cast<uint64_t>(i) * 2654435761u % 1000003u;
    Record* r = NewRecord(Key(x), 8);
    if (tree.InsertIfAbsent(KeyRef(r->key()), r) != nullptr) {
      FreeRecord(r);
    } else {
      recs.push_back(r);
    }
  }
  while (groups.load() < 1000) std::this_thread::yield();
  stop.store(true);
  prefetcher.join();
  std::string why;
  EXPECT_TRUE(tree.CheckInvariantsUnsafe(&why)) << why;
  for (Record* r : recs) ASSERT_EQ(tree.Lookup(KeyRef(r->key())).rec, r);
}

TEST(PrefetchReplicated, InvalidWritesAreSkipped) {
  auto db = testing::OpenDb();
  Table* t = testing::MakeTable(db.get(), "t");
  ASSERT_NE(t, nullptr);
  auto w = db->RegisterWorker();
  std::string big(1 << 20, 'k');
  WriteRecord writes[] = {
      {t->id(), "a", "1", false},
      {t->id(), "", "x", false},         // empty key
      {t->id(), big, "x", false},        // over max_key_bytes
      {TableId(9999), "b", "x", false},  // no such table
  };
  db->PrefetchReplicated(nullptr, writes, 4);
  db->PrefetchReplicated(w.get(), writes, 4);
  ASSERT_TRUE(db->ApplyReplicated(w.get(), writes[0], 1, 5).ok());
  db->PrefetchReplicated(w.get(), writes, 4);
  testing::WaitForSnapshot(db.get(), w.get());
  auto txn = w->BeginReadOnly();
  std::string v;
  ASSERT_TRUE(txn->Get(t, "a", &v).ok());
  EXPECT_EQ(v, "1");
  EXPECT_TRUE(txn->Get(t, "b", &v).IsNotFound());
}

}  // namespace
}  // namespace rolis::core
