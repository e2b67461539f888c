// The commit hook sees every committed read-write transaction exactly once,
// on the committing worker, with its write set and commit ts, in commit
// order (ts strictly increasing per worker); read-only transactions,
// transactions without writes and aborted ones are not reported. Replaying
// the hooked writes by ts, last writer wins, rebuilds the final state, and
// so does ApplyReplicated into a second database.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "test_util.h"

namespace rolis {
namespace {

struct HookedWrite {
  TableId table;
  std::string key, value;
  bool is_delete;
};
struct HookedTxn {
  WorkerId worker;
  uint64_t ts;
  std::vector<HookedWrite> writes;
};

class RecordingHook : public CommitHook {
 public:
  void OnCommit(WorkerId worker, uint64_t ts, const CommittedWrites& writes) override {
    HookedTxn h{worker, ts, {}};
    for (const WriteRecord& w : writes.records()) h.writes.push_back({w.table, std::string(w.key), std::string(w.value), w.is_delete});
    std::lock_guard<std::mutex> lk(mu_);
    txns_.push_back(std::move(h));
    if (thread_of_.count(worker) && thread_of_[worker] != std::this_thread::get_id()) wrong_thread_ = true;
    thread_of_[worker] = std::this_thread::get_id();
  }
  std::mutex mu_;
  std::vector<HookedTxn> txns_;
  std::map<WorkerId, std::thread::id> thread_of_;
  bool wrong_thread_ = false;
};

TEST(CommitHookTest, EveryCommittedWriteSetIsReportedOnceInStrictlyIncreasingTsPerWorker) {
  RecordingHook hook;
  auto db = testing::OpenDb(2, &hook);
  Table* t = testing::MakeTable(db.get(), "t");
  Table* u = testing::MakeTable(db.get(), "u");
  constexpr int kThreads = 3, kTxns = 4000;
  std::vector<std::vector<std::pair<uint64_t, size_t>>> committed(kThreads);  // (ts, #writes)
  std::atomic<int> unexpected{0};
  std::atomic<int> registered{0};
  std::vector<std::thread> threads;
  for (int id = 0; id < kThreads; ++id) {
    threads.emplace_back([&, id] {
      auto w = db->RegisterWorker();
      // Start together: a thread that finished first would free its worker
      // id for a later thread, which the wrong-thread check would flag.
      registered.fetch_add(1);
      while (registered.load() < kThreads) std::this_thread::yield();
      std::mt19937_64 rng(id * 31 + 1);
      for (int i = 0; i < kTxns; ++i) {
        int kind = static_cast<int>(rng() % 10);
        if (kind == 0) {  // read-only: never reported
          auto ro = w->BeginReadOnly();
          std::string v;
          (void)ro->Get(t, testing::KeyU64(rng() % 50), &v);
          if (!ro->Commit().ok()) unexpected.fetch_add(1);
          continue;
        }
        auto txn = w->Begin();
        size_t writes = 0;
        if (kind == 1) {  // reads only: no ts, not reported
          std::string v;
          (void)txn->Get(t, testing::KeyU64(rng() % 50), &v);
        } else {
          int n = 1 + static_cast<int>(rng() % 4);
          for (int j = 0; j < n; ++j) {
            Table* tab = rng() % 3 == 0 ? u : t;
            std::string k = testing::KeyU64(rng() % 50);
            std::string v;
            Status g = txn->Get(tab, k, &v);
            if (rng() % 5 == 0 && g.ok()) {
              if (txn->Delete(tab, k).ok()) ++writes;
            } else if (txn->Put(tab, k, "w" + std::to_string(id) + "-" + std::to_string(i)).ok()) {
              ++writes;
            }
          }
        }
        if (kind == 2) {  // explicit rollback: not reported
          txn->Abort();
          continue;
        }
        Status s = txn->Commit();
        if (s.ok()) {
          if (writes == 0 && txn->commit_ts() != 0) unexpected.fetch_add(1);
          if (writes > 0) committed[static_cast<size_t>(id)].push_back({txn->commit_ts(), writes});
        } else if (!s.IsAborted()) {
          unexpected.fetch_add(1);
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(unexpected.load(), 0);
  EXPECT_FALSE(hook.wrong_thread_);

  // Per worker: the hook saw exactly the committed transactions, in order.
  std::map<WorkerId, std::vector<const HookedTxn*>> by_worker;
  for (const HookedTxn& h : hook.txns_) by_worker[h.worker].push_back(&h);
  size_t total_committed = 0;
  for (auto& c : committed) total_committed += c.size();
  EXPECT_EQ(hook.txns_.size(), total_committed);
  for (auto& [worker, list] : by_worker) {
    for (size_t i = 1; i < list.size(); ++i) {
      ASSERT_LT(list[i - 1]->ts, list[i]->ts) << "worker " << worker;
    }
    EXPECT_EQ(list.front()->ts & 0xff, worker) << "the low byte of a ts is the worker id";
  }
  std::vector<uint64_t> hooked_ts, committed_ts;
  for (auto& h : hook.txns_) hooked_ts.push_back(h.ts);
  for (auto& c : committed) {
    for (auto& [ts, n] : c) committed_ts.push_back(ts);
  }
  std::sort(hooked_ts.begin(), hooked_ts.end());
  std::sort(committed_ts.begin(), committed_ts.end());
  EXPECT_EQ(hooked_ts, committed_ts);

  // Replay in ts order, last writer wins, equals the final state; and so
  // does ApplyReplicated in a follower database, in arbitrary order.
  std::vector<const HookedTxn*> all;
  for (auto& h : hook.txns_) all.push_back(&h);
  std::sort(all.begin(), all.end(), [](auto* a, auto* b) { return a->ts < b->ts; });
  std::map<std::pair<TableId, std::string>, std::string> model;
  for (auto* h : all) {
    for (auto& w : h->writes) {
      if (w.is_delete) {
        model.erase({w.table, w.key});
      } else {
        model[{w.table, w.key}] = w.value;
      }
    }
  }
  auto follower = testing::OpenDb();
  Table* ft = testing::MakeTable(follower.get(), "t");
  Table* fu = testing::MakeTable(follower.get(), "u");
  ASSERT_EQ(ft->id(), t->id());
  ASSERT_EQ(fu->id(), u->id());
  auto fw = follower->RegisterWorker();
  std::mt19937_64 rng(5);
  std::shuffle(all.begin(), all.end(), rng);
  for (auto* h : all) {
    for (auto& w : h->writes) {
      ASSERT_TRUE(follower->ApplyReplicated(fw.get(), {w.table, w.key, w.value, w.is_delete}, 0, h->ts).ok());
    }
  }
  auto dump = [](Database* d, Worker* w, Table* a, Table* b) {
    std::map<std::pair<TableId, std::string>, std::string> out;
    auto txn = w->Begin();
    for (Table* tab : {a, b}) {
      EXPECT_TRUE(txn->Scan(tab, "", "", 0, [&](std::string_view k, std::string_view v) {
                       out[{tab->id(), std::string(k)}] = std::string(v);
                       return true;
                     }).ok());
    }
    EXPECT_TRUE(txn->Commit().ok());
    return out;
  };
  auto lw = db->RegisterWorker();
  EXPECT_EQ(dump(db.get(), lw.get(), t, u), model);
  EXPECT_EQ(dump(follower.get(), fw.get(), ft, fu), model);
}

}  // namespace
}  // namespace rolis
