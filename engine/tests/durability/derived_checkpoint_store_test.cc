// A derived checkpoint (derived_checkpoint.h) against the store of the
// leader that wrote the log: TPC-C on the engine, its commits captured as a
// leader's stream (updates as patches, as rolisd logs them; deletes of
// delivered orders), written to the log, and the checkpoint derived from it
// in two steps (the second merges the first with the rest of the log,
// patches whose bases are in the first) holds exactly the engine's store.
#include <gtest/gtest.h>

#include <map>
#include <mutex>
#include <thread>

#include "checkpoint.h"
#include "codec.h"
#include "derived_checkpoint.h"
#include "rolis/db.h"
#include "stream_log.h"
#include "test_dir.h"
#include "workloads/tpcc.h"

namespace rolis::durability {
namespace {

using replication::Batch;
using replication::LogKey;

// The commit hook as a leader's one stream: batches of 50 transactions.
class Capture final : public CommitHook {
 public:
  void OnCommit(WorkerId, uint64_t ts, const CommittedWrites& writes) override {
    std::lock_guard<std::mutex> g(mu_);
    if (batches.empty() || batches.back()->txn_count == 50) {
      batches.push_back(std::make_shared<Batch>());
      batches.back()->epoch = 1;
    }
    Batch& b = *batches.back();
    replication::AppendTxn(&b.payload, ts, writes.records());
    b.txn_count++;
    b.last_ts = ts;
    for (const WriteRecord& w : writes.records()) patches += w.is_patch;
    txns++;
  }
  std::mutex mu_;
  std::vector<std::shared_ptr<Batch>> batches;
  uint64_t txns = 0, patches = 0;
};

using Store = std::map<std::pair<uint32_t, std::string>, std::string>;

Store ScanStore(Database* db) {
  const uint64_t e0 = db->Stats().current_epoch;
  while (db->Stats().snapshot_epoch < e0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  auto w = db->RegisterWorker();
  auto txn = w->BeginReadOnly();
  Store out;
  for (TableId id = 0;; id++) {
    Table* t = nullptr;
    if (!db->GetTable(id, &t).ok()) break;
    EXPECT_TRUE(txn->Scan(t, "", "", 0, [&](std::string_view k, std::string_view v) {
                      out.emplace(std::make_pair(id, std::string(k)), std::string(v));
                      return true;
                    }).ok());
  }
  (void)txn->Commit();
  txn.reset();
  w->Quiesce();
  return out;
}

Store ReadNewest(Env* env, const std::string& dir) {
  std::string path;
  EXPECT_TRUE(FindNewestCheckpoint(env, dir, &path).ok());
  replication::SnapshotReply snap;
  Status s = ReadCheckpoint(env, path, &snap);
  EXPECT_TRUE(s.ok()) << s.ToString();
  Store out;
  for (auto& w : snap.writes) EXPECT_TRUE(out.emplace(std::make_pair(w.table, w.key), w.value).second);
  return out;
}

TEST(DerivedCheckpoint, HoldsTheStoreOfTheLeaderThatWroteTheLog) {
  Capture capture;
  Options o;
  o.commit_hook = &capture;
  o.epoch_period_ms = 10;
  o.patch_updates = true;
  std::unique_ptr<Database> db = Database::Open(o);
  workloads::TpccConfig c;
  c.warehouses = 1;
  c.items = 2000;
  c.customers_per_district = 300;
  c.new_orders_per_district = 90;
  c.mix[0] = 41;  // more deliveries (deletes of new orders), fewer new orders
  c.mix[3] = 8;
  workloads::Tpcc tpcc(c);
  Status loaded_ok = tpcc.Load(db.get(), 1);
  ASSERT_TRUE(loaded_ok.ok()) << loaded_ok.ToString();
  // Read-only transactions read a snapshot: let it include the load.
  const uint64_t e0 = db->Stats().current_epoch;
  while (db->Stats().snapshot_epoch < e0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  db->SetReplicationEpoch(1);  // patches are made against this epoch's writes
  const uint64_t loaded = capture.txns;
  {
    auto worker = db->RegisterWorker();
    workloads::WorkerContext ctx(worker.get(), 0, 1, 7);
    tpcc.InitThread(ctx);
    while (capture.txns < loaded + 4000) {
      workloads::TxnOutcome r = tpcc.RunOne(ctx);
      ASSERT_TRUE(r.error.ok()) << r.error.ToString();
    }
    worker->Quiesce();
  }
  ASSERT_GT(capture.patches, 1000u) << "the run logs updates as patches";
  const Store want = ScanStore(db.get());

  TestDir d;
  Env* env = Env::Posix();
  {
    std::unique_ptr<StreamLogSet> log;
    ASSERT_TRUE(StreamLogSet::Open(env, d.path(), 1, StreamLogOptions{}, nullptr, &log).ok());
    uint64_t last = 0;
    for (size_t i = 0; i < capture.batches.size(); i++) {
      auto& b = capture.batches[i];
      b->crc = replication::Crc32c(b->payload);
      ASSERT_TRUE(log->Append(0, replication::Slot{i, 1, b}, &last).ok());
    }
    ASSERT_TRUE(log->WaitDurable(0, last, replication::SteadyClock::now() + std::chrono::seconds(10)).ok());
  }
  auto record = std::make_shared<replication::Decided>();
  record->record.epoch = 1;
  const uint64_t slots = capture.batches.size();
  // First up to a transaction in the middle of a batch, then to the end.
  const Batch& mid = *capture.batches[slots / 2];
  replication::DecodedBatch txns;
  ASSERT_TRUE(replication::DecodeBatch(mid.payload, mid.txn_count, mid.last_ts, &txns).ok());
  replication::LogCheckpointPosition pos{1, record, {1, txns.ts(txns.size() / 2)}, {slots}};
  replication::SnapshotReply h;
  DerivedCheckpointStats st;
  Status s = DeriveCheckpoint(env, d.path(), 1, pos, &h, &st);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(h.next_slot[0], slots / 2);
  EXPECT_EQ(h.skip[0], txns.size() / 2 + 1);
  pos.watermark = {1, capture.batches.back()->last_ts};
  s = DeriveCheckpoint(env, d.path(), 1, pos, &h, &st);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(h.next_slot[0], slots);
  const Store got = ReadNewest(env, d.path());
  EXPECT_EQ(got.size(), want.size());
  size_t differ = 0;
  for (const auto& [k, v] : want) {
    auto it = got.find(k);
    if (it == got.end() || it->second != v) differ++;
  }
  EXPECT_EQ(differ, 0u) << "records of the store missing or different in the checkpoint";
  EXPECT_TRUE(got == want);
}

}  // namespace
}  // namespace rolis::durability
