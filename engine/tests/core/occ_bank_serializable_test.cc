// Serializability under contention: threads move money between random
// accounts in read-write transactions while other threads sum all accounts
// in read-only snapshot transactions (by point reads and by scans). The
// total never changes, as seen by the writers' own committed reads and by
// every snapshot: no partial transaction is ever visible.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "test_util.h"

namespace rolis {
namespace {

constexpr int kAccounts = 64;
constexpr int64_t kInitial = 1000;

std::string Enc(int64_t v) { return std::string(reinterpret_cast<const char*>(&v), sizeof v); }
int64_t Dec(std::string_view s) {
  int64_t v = 0;
  std::memcpy(&v, s.data(), std::min(s.size(), sizeof v));
  return v;
}

TEST(OccBankTest, TransfersKeepTheTotalForWritersAndSnapshots) {
  auto db = testing::OpenDb(/*epoch_ms=*/1);
  Table* t = testing::MakeTable(db.get(), "accounts");
  {
    auto w = db->RegisterWorker();
    ASSERT_TRUE(testing::RunRw(w.get(), [&](Transaction* txn) {
                  for (int i = 0; i < kAccounts; ++i) {
                    Status s = txn->Put(t, testing::KeyU64(i), Enc(kInitial));
                    if (!s.ok()) return s;
                  }
                  return Status::OK();
                }).ok());
  }
  testing::WaitForSnapshot(db.get());  // snapshots must include the initial balances
  const int64_t total = kAccounts * kInitial;
  std::atomic<bool> stop{false};
  std::atomic<int> bad_rw{0}, bad_snapshot{0};
  std::atomic<uint64_t> transfers{0}, snapshots{0}, audits{0};
  std::vector<std::thread> threads;
  for (int id = 0; id < 3; ++id) {
    threads.emplace_back([&, id] {
      auto w = db->RegisterWorker();
      std::mt19937_64 rng(id);
      while (!stop.load(std::memory_order_relaxed)) {
        int a = static_cast<int>(rng() % kAccounts), b = static_cast<int>(rng() % kAccounts);
        if (a == b) continue;
        int64_t amount = static_cast<int64_t>(rng() % 50);
        auto txn = w->Begin();
        std::string va, vb;
        if (!txn->Get(t, testing::KeyU64(a), &va).ok() || !txn->Get(t, testing::KeyU64(b), &vb).ok()) {
          bad_rw.fetch_add(1);
          continue;
        }
        (void)txn->Put(t, testing::KeyU64(a), Enc(Dec(va) - amount));
        (void)txn->Put(t, testing::KeyU64(b), Enc(Dec(vb) + amount));
        if (txn->Commit().ok()) transfers.fetch_add(1);
        // Every few transfers, audit the total inside a read-write transaction.
        if (rng() % 50 == 0) {
          auto audit = w->Begin();
          int64_t sum = 0;
          Status s = audit->Scan(t, "", "", 0, [&](std::string_view, std::string_view v) {
            sum += Dec(v);
            return true;
          });
          if (s.ok() && audit->Commit().ok()) {
            audits.fetch_add(1);
            if (sum != total) bad_rw.fetch_add(1);
          }
        }
      }
    });
  }
  threads.emplace_back([&] {
    auto w = db->RegisterWorker();
    int round = 0;
    while (!stop.load(std::memory_order_relaxed)) {
      auto ro = w->BeginReadOnly();
      int64_t sum = 0;
      if (++round % 2 == 0) {
        for (int i = 0; i < kAccounts; ++i) {
          std::string v;
          if (!ro->Get(t, testing::KeyU64(i), &v).ok()) bad_snapshot.fetch_add(1);
          sum += Dec(v);
        }
      } else {
        int n = 0;
        (void)ro->Scan(t, "", "", 0, [&](std::string_view, std::string_view v) {
          sum += Dec(v);
          ++n;
          return true;
        });
        if (n != kAccounts) bad_snapshot.fetch_add(1);
      }
      if (!ro->Commit().ok() || sum != total) bad_snapshot.fetch_add(1);
      snapshots.fetch_add(1);
    }
  });
  std::this_thread::sleep_for(std::chrono::seconds(3));
  stop.store(true);
  for (auto& th : threads) th.join();

  EXPECT_EQ(bad_rw.load(), 0);
  EXPECT_EQ(bad_snapshot.load(), 0);
  EXPECT_GT(transfers.load(), 1000u);
  EXPECT_GT(snapshots.load(), 100u);
  EXPECT_GT(db->Stats().aborts, 0u) << "the test should produce conflicts";
  // Final state, read-write.
  auto w = db->RegisterWorker();
  auto txn = w->Begin();
  int64_t sum = 0;
  ASSERT_TRUE(txn->Scan(t, "", "", 0, [&](std::string_view, std::string_view v) {
                   sum += Dec(v);
                   return true;
                 }).ok());
  ASSERT_TRUE(txn->Commit().ok());
  EXPECT_EQ(sum, total);
}

}  // namespace
}  // namespace rolis
