// Concurrent inserts with concurrent scans: every scan sees keys in strictly
// increasing order, no duplicates, and every key whose insert finished
// before the scan began.
#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <thread>
#include <vector>

#include "btree.h"

namespace rolis::core {
namespace {

std::string Key(uint64_t x, bool long_key) {
  std::string k(8, '\0');
  uint64_t be = __builtin_bswap64(x);
  std::memcpy(k.data(), &be, 8);
  if (long_key) k = std::string(24, 'q') + k;  // forces suffix comparisons
  return k;
}

void RunConcurrentScans(bool long_keys) {
  BTree tree;
  constexpr int kWriters = 2, kPerWriter = 60000;
  // done[w] = number of keys writer w has finished inserting (a prefix of its sequence).
  std::atomic<int> done[kWriters];
  for (auto& d : done) d.store(0);
  std::vector<std::vector<Record*>> recs(kWriters);
  std::atomic<bool> stop{false};
  std::atomic<int> failures{0}, scans{0};

  std::vector<std::thread> threads;
  for (int w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      std::mt19937_64 rng(w + 7);
      for (int i = 0; i < kPerWriter; ++i) {
        // Writer w owns keys congruent to w mod kWriters, inserted in random-ish order.
        uint64_t x = (static_cast<uint64_t>(i) * 2654435761u % 1000003u) * kWriters + w;
        Record* r = NewRecord(Key(x, long_keys), 8);
        if (tree.InsertIfAbsent(KeyRef(r->key()), r) != nullptr) {
          failures.fetch_add(1);
          FreeRecord(r);
        } else {
          recs[w].push_back(r);
        }
        done[w].store(i + 1, std::memory_order_release);
      }
    });
  }
  threads.emplace_back([&] {
    while (!stop.load()) {
      int before[kWriters];
      for (int w = 0; w < kWriters; ++w) before[w] = done[w].load(std::memory_order_acquire);
      std::vector<std::string> seen;
      tree.Scan(KeyRef(std::string_view()), [&](Leaf*, uint64_t, Record* const* rs, int n) {
        for (int i = 0; i < n; ++i) seen.emplace_back(rs[i]->key());
        return true;
      });
      for (size_t i = 1; i < seen.size(); ++i) {
        if (CompareKeys(seen[i - 1], seen[i]) >= 0) failures.fetch_add(1);
      }
      // Every key inserted before the scan began is present.
      for (int w = 0; w < kWriters; ++w) {
        for (int i = 0; i < before[w]; i += 97) {
          uint64_t x = (static_cast<uint64_t>(i) * 2654435761u % 1000003u) * kWriters + w;
          if (!std::binary_search(seen.begin(), seen.end(), Key(x, long_keys),
                                  [](const std::string& a, const std::string& b) { return CompareKeys(a, b) < 0; })) {
            failures.fetch_add(1);
          }
        }
      }
      scans.fetch_add(1);
    }
  });
  for (int w = 0; w < kWriters; ++w) threads[static_cast<size_t>(w)].join();
  stop.store(true);
  threads.back().join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_GT(scans.load(), 0);
  std::string why;
  EXPECT_TRUE(tree.CheckInvariantsUnsafe(&why)) << why;
  for (auto& v : recs) {
    for (Record* r : v) FreeRecord(r);
  }
}

TEST(BTreeConcurrentScanTest, ScansSeeSortedUniqueKeysAndEveryEarlierInsertShortKeys) { RunConcurrentScans(false); }
TEST(BTreeConcurrentScanTest, ScansSeeSortedUniqueKeysAndEveryEarlierInsertLongKeys) { RunConcurrentScans(true); }

TEST(BTreeConcurrentScanTest, ConcurrentLookupsFindEveryFinishedInsert) {
  BTree tree;
  constexpr int kN = 100000;
  std::vector<Record*> recs(kN);
  std::atomic<int> done{0};
  std::atomic<int> failures{0};
  std::thread writer([&] {
    for (int i = 0; i < kN; ++i) {
      recs[static_cast<size_t>(i)] = NewRecord(Key(static_cast<uint64_t>(i) * 7919 % kN, false), 8);
      tree.InsertIfAbsent(KeyRef(recs[static_cast<size_t>(i)]->key()), recs[static_cast<size_t>(i)]);
      done.store(i + 1, std::memory_order_release);
    }
  });
  std::thread reader([&] {
    std::mt19937_64 rng(1);
    while (done.load() < kN) {
      int d = done.load(std::memory_order_acquire);
      if (d == 0) continue;
      int i = static_cast<int>(rng() % static_cast<uint64_t>(d));
      if (tree.Lookup(KeyRef(recs[static_cast<size_t>(i)]->key())).rec != recs[static_cast<size_t>(i)]) {
        failures.fetch_add(1);
      }
    }
  });
  writer.join();
  reader.join();
  EXPECT_EQ(failures.load(), 0);
  for (Record* r : recs) FreeRecord(r);
}

}  // namespace
}  // namespace rolis::core
