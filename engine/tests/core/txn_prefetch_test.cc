// Transaction::Prefetch is only a hint: every read after it returns what it
// would have returned without it (own writes, absent keys, other tables, long
// keys that share their first 16 bytes, keys written or deleted and
// re-inserted by others after the prefetch, snapshot reads), it adds nothing
// to what commit validates, bad keys are skipped, and transfers that prefetch
// their accounts keep the bank total for writers and snapshots.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "test_util.h"

namespace rolis {
namespace {

class TxnPrefetchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = testing::OpenDb();
    a_ = testing::MakeTable(db_.get(), "a");
    b_ = testing::MakeTable(db_.get(), "b");
    w_ = db_->RegisterWorker();
    ASSERT_NE(a_, nullptr);
    ASSERT_NE(b_, nullptr);
    ASSERT_NE(w_, nullptr);
  }
  void TearDown() override {
    w_.reset();
    db_.reset();
  }
  // What a read of (table, key) returns, as one string.
  static std::string Read(Transaction* txn, Table* t, const std::string& key) {
    std::string_view v;
    Status s = txn->GetView(t, key, &v);
    return s.ok() ? "=" + std::string(v) : "<" + std::string(StatusCodeName(s.code())) + ">";
  }
  std::unique_ptr<Database> db_;
  Table* a_ = nullptr;
  Table* b_ = nullptr;
  std::unique_ptr<Worker> w_;
};

// Keys that differ only past their first 16 bytes, short keys, and keys of
// the same bytes in both tables (with different values).
std::string KeyOf(int i) {
  if (i % 3 == 0) return "a-long-shared-prefix/" + std::to_string(i);
  return testing::KeyU64(static_cast<uint64_t>(i));
}

TEST_F(TxnPrefetchTest, ReadsAfterAPrefetchReturnWhatReadsWithoutOneReturn) {
  constexpr int kKeys = 120;
  ASSERT_TRUE(testing::RunRw(w_.get(), [&](Transaction* txn) {
                for (int i = 0; i < kKeys; i += 2) {  // odd keys stay absent
                  if (Status s = txn->Put(a_, KeyOf(i), "a" + std::to_string(i)); !s.ok()) return s;
                  if (Status s = txn->Put(b_, KeyOf(i), "b" + std::to_string(i)); !s.ok()) return s;
                }
                return Status::OK();
              }).ok());
  std::mt19937_64 rng(7);
  for (int round = 0; round < 300; ++round) {
    // The same transaction twice, with and without a prefetch of its keys
    // (and of some it never reads); both abort, so neither changes the data.
    std::vector<std::pair<Table*, std::string>> ops;
    const int n = 1 + static_cast<int>(rng() % 40);
    for (int i = 0; i < n; ++i) ops.emplace_back(rng() % 2 ? a_ : b_, KeyOf(static_cast<int>(rng() % kKeys)));
    const int own = static_cast<int>(rng() % 4);  // writes before the reads: read-your-writes through a prefetch
    std::string results[2];
    for (int with = 0; with < 2; ++with) {
      auto txn = w_->Begin();
      for (int i = 0; i < own; ++i) {
        const auto& [t, k] = ops[static_cast<size_t>(i) % ops.size()];
        ASSERT_TRUE(txn->Put(t, k, "own" + std::to_string(i)).ok());
      }
      if (own > 0 && ops.size() > 1) {  // and a delete of its own (of a key present or not)
        results[with] += StatusCodeName(txn->Delete(ops.back().first, ops.back().second).code());
      }
      if (with) {
        std::vector<TableKey> keys;
        for (auto& [t, k] : ops) keys.push_back({t, k});
        const std::string extra = KeyOf(static_cast<int>(rng() % kKeys));
        keys.push_back({a_, extra});
        txn->Prefetch(keys);
        txn->Prefetch(keys);  // twice: a repeat changes nothing either
      }
      for (auto& [t, k] : ops) results[with] += Read(txn.get(), t, k) + ";";
      txn->Abort();
    }
    ASSERT_EQ(results[0], results[1]) << "round " << round;
  }
}

TEST_F(TxnPrefetchTest, APrefetchedKeyIsNotARead) {
  ASSERT_TRUE(testing::PutOne(w_.get(), a_, "present", "1").ok());
  auto other = db_->RegisterWorker();
  auto txn = w_->Begin();
  const TableKey keys[] = {{a_, "present"}, {a_, "absent"}};
  txn->Prefetch(keys);
  // Another transaction changes the prefetched key and inserts the absent
  // one; this transaction read neither, so it still commits.
  ASSERT_TRUE(testing::PutOne(other.get(), a_, "present", "2").ok());
  ASSERT_TRUE(testing::PutOne(other.get(), a_, "absent", "3").ok());
  ASSERT_TRUE(txn->Put(a_, "mine", "x").ok());
  EXPECT_TRUE(txn->Commit().ok());
}

TEST_F(TxnPrefetchTest, AReadAfterOthersDeleteAndReinsertThePrefetchedKeySeesTheNewValue) {
  ASSERT_TRUE(testing::PutOne(w_.get(), a_, "k", "old").ok());
  auto other = db_->RegisterWorker();
  auto txn = w_->Begin();
  const TableKey keys[] = {{a_, "k"}};
  txn->Prefetch(keys);
  ASSERT_TRUE(testing::RunRw(other.get(), [&](Transaction* t) { return t->Delete(a_, "k"); }).ok());
  // Give the reclaimer epochs to unlink the deleted record (it may wait for
  // this open transaction; the read below must be right either way).
  for (int i = 0; i < 20; ++i) {
    other->Quiesce();
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ASSERT_TRUE(testing::RunRw(other.get(), [&](Transaction* t) { return t->Insert(a_, "k", "new"); }).ok());
  EXPECT_EQ(Read(txn.get(), a_, "k"), "=new");
  EXPECT_TRUE(txn->Commit().ok());  // it read the newest version
}

TEST_F(TxnPrefetchTest, ASnapshotReadAfterAPrefetchStillSeesTheSnapshot) {
  ASSERT_TRUE(testing::PutOne(w_.get(), a_, "k", "before").ok());
  testing::WaitForSnapshot(db_.get(), w_.get());
  auto other = db_->RegisterWorker();
  auto ro = w_->BeginReadOnly();
  ASSERT_TRUE(ro->read_only());
  const TableKey keys[] = {{a_, "k"}, {a_, "later"}};
  ro->Prefetch(keys);
  ASSERT_TRUE(testing::PutOne(other.get(), a_, "k", "after").ok());
  ASSERT_TRUE(testing::PutOne(other.get(), a_, "later", "x").ok());
  EXPECT_EQ(Read(ro.get(), a_, "k"), "=before");
  EXPECT_EQ(Read(ro.get(), a_, "later"), "<NOT_FOUND>");
  EXPECT_TRUE(ro->Commit().ok());
}

TEST_F(TxnPrefetchTest, BadKeysAreSkippedAndFinishedTransactionsIgnoreIt) {
  ASSERT_TRUE(testing::PutOne(w_.get(), a_, "k", "v").ok());
  auto other_db = testing::OpenDb();
  Table* foreign = testing::MakeTable(other_db.get(), "a");
  const std::string huge(2000, 'x');  // past the default max_key_bytes (1024)
  auto txn = w_->Begin();
  const TableKey keys[] = {{nullptr, "k"}, {a_, ""}, {a_, huge}, {foreign, "k"}, {a_, "k"}};
  txn->Prefetch(keys);
  txn->Prefetch({});
  EXPECT_EQ(Read(txn.get(), a_, "k"), "=v");
  EXPECT_EQ(Read(txn.get(), a_, huge), "<INVALID_ARGUMENT>");
  ASSERT_TRUE(txn->Commit().ok());
  txn->Prefetch(keys);  // after commit: nothing happens
  EXPECT_EQ(Read(txn.get(), a_, "k"), "<FAILED_PRECONDITION>");
}

TEST(TxnPrefetchConcurrencyTest, TransfersThatPrefetchKeepTheTotalForWritersAndSnapshots) {
  constexpr int kAccounts = 48;
  constexpr int64_t kInitial = 1000;
  auto db = testing::OpenDb(/*epoch_ms=*/1);
  Table* t = testing::MakeTable(db.get(), "accounts");
  auto enc = [](int64_t v) { return std::string(reinterpret_cast<const char*>(&v), sizeof v); };
  auto dec = [](std::string_view s) {
    int64_t v = 0;
    std::memcpy(&v, s.data(), std::min(s.size(), sizeof v));
    return v;
  };
  {
    auto w = db->RegisterWorker();
    ASSERT_TRUE(testing::RunRw(w.get(), [&](Transaction* txn) {
                  for (int i = 0; i < kAccounts; ++i) {
                    if (Status s = txn->Put(t, testing::KeyU64(i), enc(kInitial)); !s.ok()) return s;
                  }
                  return Status::OK();
                }).ok());
  }
  testing::WaitForSnapshot(db.get());
  std::vector<std::string> names;
  for (int i = 0; i < kAccounts; ++i) names.push_back(testing::KeyU64(i));
  std::atomic<bool> stop{false};
  std::atomic<int> bad{0};
  std::atomic<uint64_t> transfers{0}, audits{0};
  std::vector<std::thread> threads;
  for (int id = 0; id < 2; ++id) {
    threads.emplace_back([&, id] {
      auto w = db->RegisterWorker();
      std::mt19937_64 rng(id);
      while (!stop.load(std::memory_order_relaxed)) {
        const int a = static_cast<int>(rng() % kAccounts), b = static_cast<int>(rng() % kAccounts);
        if (a == b) continue;
        Status s = testing::RunRw(w.get(), [&](Transaction* txn) {
          const TableKey keys[] = {{t, names[static_cast<size_t>(a)]}, {t, names[static_cast<size_t>(b)]}};
          txn->Prefetch(keys);
          std::string_view va, vb;
          if (Status g = txn->GetView(t, names[static_cast<size_t>(a)], &va); !g.ok()) return g;
          const int64_t from = dec(va);
          if (Status g = txn->GetView(t, names[static_cast<size_t>(b)], &vb); !g.ok()) return g;
          const int64_t to = dec(vb);
          if (Status p = txn->Put(t, names[static_cast<size_t>(a)], enc(from - 7)); !p.ok()) return p;
          return txn->Put(t, names[static_cast<size_t>(b)], enc(to + 7));
        });
        if (!s.ok()) bad.fetch_add(1);
        transfers.fetch_add(1);
      }
    });
  }
  threads.emplace_back([&] {
    auto w = db->RegisterWorker();
    std::vector<TableKey> keys;
    for (const std::string& n : names) keys.push_back({t, n});
    while (!stop.load(std::memory_order_relaxed)) {
      for (int read_only = 0; read_only < 2; ++read_only) {
        auto txn = read_only ? w->BeginReadOnly() : w->Begin();
        txn->Prefetch(keys);
        int64_t sum = 0;
        bool ok = true;
        for (const std::string& n : names) {
          std::string_view v;
          if (!txn->GetView(t, n, &v).ok()) ok = false;
          sum += dec(v);
        }
        // A read-write audit counts only if it commits (validation).
        if (txn->Commit().ok() && ok && sum != kAccounts * kInitial) bad.fetch_add(1);
        audits.fetch_add(1);
      }
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  stop.store(true);
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_GT(transfers.load(), 100u);
  EXPECT_GT(audits.load(), 10u);
}

}  // namespace
}  // namespace rolis
