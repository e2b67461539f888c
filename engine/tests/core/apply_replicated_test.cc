// ApplyReplicated installs replicated writes last-writer-wins on
// (epoch, ts), epoch first: older and duplicate writes are ignored whatever
// the order they arrive in, deletes leave tombstones that make older writes
// lose until the replay horizon passes them, and concurrent readers never
// see a torn value.
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <random>
#include <thread>
#include <tuple>
#include <vector>

#include "test_util.h"

namespace rolis {
namespace {

class ApplyReplicatedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = testing::OpenDb();
    t_ = testing::MakeTable(db_.get(), "t");
    w_ = db_->RegisterWorker();
  }
  Status Apply(const std::string& k, const std::string& v, uint64_t e, uint64_t ts, bool del = false) {
    return db_->ApplyReplicated(w_.get(), {t_->id(), k, v, del}, e, ts);
  }
  std::string Read(const std::string& k) {
    auto txn = w_->Begin();
    std::string v;
    Status s = txn->Get(t_, k, &v);
    EXPECT_TRUE(txn->Commit().ok());
    return s.ok() ? v : "<absent>";
  }
  std::unique_ptr<Database> db_;
  Table* t_ = nullptr;
  std::unique_ptr<Worker> w_;
};

TEST_F(ApplyReplicatedTest, LargerEpochThenLargerTsWins) {
  ASSERT_TRUE(Apply("k", "e1t10", 1, 10).ok());
  EXPECT_EQ(Read("k"), "e1t10");
  ASSERT_TRUE(Apply("k", "e1t5", 1, 5).ok());  // older: ignored
  EXPECT_EQ(Read("k"), "e1t10");
  ASSERT_TRUE(Apply("k", "dup", 1, 10).ok());  // duplicate: ignored
  EXPECT_EQ(Read("k"), "e1t10");
  ASSERT_TRUE(Apply("k", "e2t1", 2, 1).ok());  // newer epoch wins despite the smaller ts
  EXPECT_EQ(Read("k"), "e2t1");
  ASSERT_TRUE(Apply("k", "e1t99", 1, 99).ok());  // older epoch loses despite the larger ts
  EXPECT_EQ(Read("k"), "e2t1");
}

TEST_F(ApplyReplicatedTest, DeleteTombstoneMakesOlderLateWritesLose) {
  ASSERT_TRUE(Apply("k", "v", 1, 10).ok());
  ASSERT_TRUE(Apply("k", "", 1, 20, /*del=*/true).ok());
  EXPECT_EQ(Read("k"), "<absent>");
  // Let epochs pass: the tombstone must survive reclamation without a horizon.
  for (int i = 0; i < 20; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(3));
    w_->Quiesce();
  }
  ASSERT_TRUE(Apply("k", "late", 1, 15).ok());
  EXPECT_EQ(Read("k"), "<absent>");
  // A delete of a key never seen also leaves a tombstone.
  ASSERT_TRUE(Apply("n", "", 1, 30, true).ok());
  ASSERT_TRUE(Apply("n", "late", 1, 25).ok());
  EXPECT_EQ(Read("n"), "<absent>");
  ASSERT_TRUE(Apply("n", "newer", 1, 31).ok());
  EXPECT_EQ(Read("n"), "newer");
}

TEST_F(ApplyReplicatedTest, TombstonesBelowTheReplayHorizonAreReclaimed) {
  for (int i = 0; i < 100; ++i) {
    ASSERT_TRUE(Apply(testing::KeyU64(i), "v", 1, 10 + i).ok());
    ASSERT_TRUE(Apply(testing::KeyU64(i), "", 1, 1000 + i, true).ok());
  }
  EXPECT_EQ(db_->Stats().live_records, 100u);
  db_->SetReplayHorizon(1, 1049);  // covers the first 50 tombstones
  for (int i = 0; i < 100 && db_->Stats().live_records > 50; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(3));
    w_->Quiesce();
  }
  EXPECT_EQ(db_->Stats().live_records, 50u);
}

TEST_F(ApplyReplicatedTest, ShuffledAndDuplicatedStreamsConvergeToTheMaximumPerKey) {
  struct W {
    std::string key;
    uint64_t epoch, ts;
    bool del;
    std::string value;
  };
  std::mt19937_64 rng(9);
  std::vector<W> log;
  uint64_t ts = 1;
  for (uint64_t epoch = 1; epoch <= 3; ++epoch) {
    for (int i = 0; i < 3000; ++i) {
      W w{testing::KeyU64(rng() % 40), epoch, ts++, rng() % 6 == 0, ""};
      if (!w.del) w.value = "v" + std::to_string(w.ts) + std::string(rng() % 40, 'x');
      log.push_back(w);
    }
    ts = 1 + rng() % 100;  // a new epoch restarts ts low: epoch order must dominate
  }
  std::map<std::string, const W*> winner;
  for (const W& w : log) {
    auto& cur = winner[w.key];
    if (!cur || std::tie(w.epoch, w.ts) > std::tie(cur->epoch, cur->ts)) cur = &w;
  }
  std::vector<const W*> order;
  for (const W& w : log) {
    order.push_back(&w);
    if (rng() % 4 == 0) order.push_back(&w);  // duplicates
  }
  std::shuffle(order.begin(), order.end(), rng);
  // Two appliers in parallel, each with its own worker.
  std::atomic<int> errors{0};
  std::vector<std::thread> threads;
  for (int part = 0; part < 2; ++part) {
    threads.emplace_back([&, part] {
      auto w = db_->RegisterWorker();
      for (size_t i = static_cast<size_t>(part); i < order.size(); i += 2) {
        const W* x = order[i];
        if (!db_->ApplyReplicated(w.get(), {t_->id(), x->key, x->value, x->del}, x->epoch, x->ts).ok()) {
          errors.fetch_add(1);
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(errors.load(), 0);
  for (auto& [key, w] : winner) EXPECT_EQ(Read(key), w->del ? "<absent>" : w->value) << "key " << key.back();
}

TEST_F(ApplyReplicatedTest, ConcurrentReadersNeverSeeATornValue) {
  std::atomic<bool> stop{false};
  std::atomic<int> torn{0};
  std::thread reader([&] {
    auto w = db_->RegisterWorker();
    while (!stop.load()) {
      auto txn = w->Begin();
      std::string v;
      if (txn->Get(t_, "k", &v).ok()) {
        // Every value is one repeated character.
        if (v.find_first_not_of(v[0]) != std::string::npos) torn.fetch_add(1);
      }
      (void)txn->Commit();
      auto ro = w->BeginReadOnly();
      if (ro->Get(t_, "k", &v).ok() && v.find_first_not_of(v[0]) != std::string::npos) torn.fetch_add(1);
      (void)ro->Commit();
    }
  });
  for (uint64_t ts = 1; ts < 200000; ++ts) {
    ASSERT_TRUE(Apply("k", std::string(1 + ts % 300, static_cast<char>('a' + ts % 26)), 1, ts).ok());
  }
  stop.store(true);
  reader.join();
  EXPECT_EQ(torn.load(), 0);
}

}  // namespace
}  // namespace rolis
