// Node over the fake engine: one-shot and interactive transactions, limits,
// status codes, idle expiry, role checks. Each test name states the behaviour.
#include "server/node.h"

#include <gtest/gtest.h>

#include <optional>
#include <thread>

#include "fake_db.h"

namespace rolis::server {
namespace {

using grpc::StatusCode;

// A replicator whose role the test sets (for the write entry points).
class RoleReplicator final : public Replicator {
 public:
  Role role_ = Role::kFollower;
  std::string leader_ = "10.0.0.9:7070";
  void OnCommit(WorkerId, uint64_t, const CommittedWrites&) override {}
  void RegisterStream(WorkerId, uint32_t) override {}
  Role role() const override { return role_; }
  uint64_t epoch() const override { return 7; }
  std::string leader_client_address() const override { return leader_; }
  bool WatermarkCovers(uint64_t) const override { return true; }
  bool AwaitWatermark(uint64_t, WatermarkWaiter*) override { return true; }
  void FillStatus(v1::StatusResponse*) const override {}
  grpc::Status PrepareFailover(const v1::PrepareFailoverRequest&, v1::PrepareFailoverResponse*) override { return {}; }
  grpc::Status DecideEpoch(const v1::DecideEpochRequest&, v1::DecideEpochResponse*) override { return {}; }
  grpc::Status OpenEpoch(const v1::OpenEpochRequest&, v1::OpenEpochResponse*) override { return {}; }
  grpc::Status AnnounceLeader(const v1::AnnounceLeaderRequest&, v1::AnnounceLeaderResponse*) override { return {}; }
  grpc::Status ChangeMembership(const v1::ChangeMembershipRequest&, v1::ChangeMembershipResponse*) override {
    return {};
  }
};

class NodeTest : public ::testing::Test {
 protected:
  void Open(NodeOptions o = {}, testing::FakeOptions fake = {}, uint32_t workers = 2,
            Replicator* replicator = nullptr) {
    StandaloneReplicator::Options ro;
    ro.streams = workers;
    ro.client_address = "127.0.0.1:7070";
    standalone_ = std::make_unique<StandaloneReplicator>(ro);
    Replicator* r = replicator != nullptr ? replicator : standalone_.get();
    Options opts;
    opts.commit_hook = r;
    db_ = testing::OpenFakeDatabase(opts, fake);
    if (o.tables.size() == 1) o.tables = {"kv", "other"};
    node_ = std::make_unique<Node>(o, db_.get(), r, &metrics_);
    ASSERT_TRUE(node_->Start(workers).ok());
  }
  void TearDown() override {
    node_.reset();
    db_.reset();
  }

  grpc::Status Exec(std::vector<v1::Op> ops, v1::ExecuteResponse* resp = nullptr, CallContext* ctx = nullptr) {
    v1::ExecuteRequest req;
    for (auto& op : ops) *req.add_ops() = op;
    v1::ExecuteResponse local;
    CallContext c;
    return node_->Execute(req, resp ? resp : &local, ctx ? ctx : &c);
  }
  static v1::Op Op(v1::Op::Kind kind, std::string key, std::string value = "") {
    v1::Op op;
    op.set_kind(kind);
    op.set_key(key);
    op.set_value(value);
    return op;
  }
  void PutOrDie(const std::string& k, const std::string& v) { ASSERT_TRUE(Exec({Op(v1::Op::PUT, k, v)}).ok()); }
  std::optional<std::string> Read(const std::string& k) {
    v1::ExecuteResponse resp;
    grpc::Status st = Exec({Op(v1::Op::GET, k)}, &resp);
    EXPECT_TRUE(st.ok()) << st.error_message();
    if (!resp.results(0).found()) return std::nullopt;
    return resp.results(0).value();
  }
  uint64_t BeginTxn(bool read_only = false, uint32_t idle_ms = 0) {
    v1::BeginRequest req;
    req.set_read_only(read_only);
    req.set_idle_timeout_ms(idle_ms);
    v1::BeginResponse resp;
    CallContext c;
    grpc::Status st = node_->Begin(req, &resp, &c);
    EXPECT_TRUE(st.ok()) << st.error_message();
    return resp.txn_id();
  }
  // On a leader (r), a read-write transaction that put "a" and a read-only
  // one, both left open; returns their ids.
  std::pair<uint64_t, uint64_t> LeaveTwoOpen(RoleReplicator* r) {
    r->role_ = Role::kLeader;
    Open({}, {}, 2, r);
    uint64_t rw = BeginTxn();
    EXPECT_TRUE(TxnPut(rw, "a", "1").ok());
    return {rw, BeginTxn(/*read_only=*/true)};
  }
  grpc::Status TxnPut(uint64_t id, const std::string& k, const std::string& v) {
    v1::PutRequest req;
    req.set_txn_id(id);
    req.set_key(k);
    req.set_value(v);
    v1::PutResponse resp;
    CallContext c;
    return node_->Put(req, &resp, &c);
  }
  grpc::Status TxnGet(uint64_t id, const std::string& k, v1::GetResponse* resp) {
    v1::GetRequest req;
    req.set_txn_id(id);
    req.set_key(k);
    CallContext c;
    return node_->Get(req, resp, &c);
  }
  grpc::Status TxnCommit(uint64_t id, v1::CommitResponse* resp = nullptr) {
    v1::CommitRequest req;
    req.set_txn_id(id);
    v1::CommitResponse local;
    CallContext c;
    return node_->Commit(req, resp ? resp : &local, &c);
  }

  Metrics metrics_{"test"};
  std::unique_ptr<StandaloneReplicator> standalone_;
  std::unique_ptr<Database> db_;
  std::unique_ptr<Node> node_;
};

TEST_F(NodeTest, ExecutePutThenGetReturnsTheValueAndACommitTimestamp) {
  Open();
  v1::ExecuteResponse resp;
  CallContext ctx;
  ASSERT_TRUE(Exec({Op(v1::Op::PUT, "a", "1"), Op(v1::Op::PUT, "b", "2")}, &resp, &ctx).ok());
  EXPECT_EQ(resp.epoch(), 1u);
  EXPECT_GT(resp.commit_ts(), 0u);
  EXPECT_EQ(ctx.commit_ts, resp.commit_ts());
  EXPECT_EQ(Read("a"), "1");
  EXPECT_EQ(Read("missing"), std::nullopt);
  EXPECT_EQ(metrics_.commits(), 3u);  // the reads count as committed transactions too
  EXPECT_EQ(standalone_->watermark_ts(), resp.commit_ts());
}

TEST_F(NodeTest, ExecuteReadsSeeTheTransactionsOwnWritesAndDeleteReportsFound) {
  Open();
  PutOrDie("k", "old");
  v1::ExecuteResponse resp;
  ASSERT_TRUE(Exec({Op(v1::Op::PUT, "k", "new"), Op(v1::Op::GET, "k"), Op(v1::Op::DELETE, "k"),
                    Op(v1::Op::DELETE, "k"), Op(v1::Op::GET, "k")},
                   &resp)
                  .ok());
  EXPECT_EQ(resp.results(1).value(), "new");
  EXPECT_TRUE(resp.results(2).found());
  EXPECT_FALSE(resp.results(3).found());
  EXPECT_FALSE(resp.results(4).found());
  EXPECT_EQ(Read("k"), std::nullopt);
}

TEST_F(NodeTest, FailedPutIfWritesNothingAndReturnsNoUnvalidatedReads) {
  Open();
  PutOrDie("x", "1");
  v1::Op cas = Op(v1::Op::PUT_IF, "x", "3");
  cas.set_expected("2");
  v1::ExecuteResponse resp;
  ASSERT_TRUE(Exec({Op(v1::Op::GET, "x"), Op(v1::Op::PUT, "y", "written?"), cas}, &resp).ok());
  EXPECT_TRUE(resp.condition_failed());
  EXPECT_EQ(resp.commit_ts(), 0u);
  EXPECT_EQ(resp.results_size(), 0);
  EXPECT_EQ(Read("x"), "1");
  EXPECT_EQ(Read("y"), std::nullopt);
  EXPECT_EQ(metrics_.aborts(AbortReason::kCondition), 1u);

  cas.set_expected("1");
  ASSERT_TRUE(Exec({cas}, &resp).ok());
  EXPECT_FALSE(resp.condition_failed());
  EXPECT_EQ(Read("x"), "3");

  v1::Op create = Op(v1::Op::PUT_IF, "fresh", "v");
  create.set_expect_absent(true);
  ASSERT_TRUE(Exec({create}, &resp).ok());
  EXPECT_FALSE(resp.condition_failed());
  ASSERT_TRUE(Exec({create}, &resp).ok());
  EXPECT_TRUE(resp.condition_failed());
}

TEST_F(NodeTest, BadInputIsInvalidArgumentAndChangesNothing) {
  NodeOptions o;
  o.max_key_bytes = 8;
  o.max_value_bytes = 16;
  o.max_ops_per_txn = 3;
  Open(o);
  PutOrDie("k", "v");
  v1::Op unknown_table = Op(v1::Op::PUT, "k", "x");
  unknown_table.set_table("nope");
  std::vector<std::vector<v1::Op>> bad = {
      {Op(v1::Op::PUT, "k", "changed"), Op(v1::Op::PUT, "123456789", "v")},        // key too long
      {Op(v1::Op::PUT, "k", "changed"), Op(v1::Op::PUT, "", "v")},                 // empty key
      {Op(v1::Op::PUT, "k", std::string(17, 'v'))},                                // value too long
      {Op(v1::Op::PUT, "k", "changed"), unknown_table},                            // unknown table
      {Op(v1::Op::KIND_UNSPECIFIED, "k")},                                          // no kind
      {Op(v1::Op::GET, "a"), Op(v1::Op::GET, "b"), Op(v1::Op::GET, "c"), Op(v1::Op::PUT, "k", "changed")},  // 4 ops
  };
  for (size_t i = 0; i < bad.size(); i++) {
    grpc::Status st = Exec(bad[i]);
    EXPECT_EQ(st.error_code(), StatusCode::INVALID_ARGUMENT) << i << " " << st.error_message();
  }
  EXPECT_EQ(Read("k"), "v");
  v1::Op other = Op(v1::Op::PUT, "k", "in other");
  other.set_table("other");
  EXPECT_TRUE(Exec({other}).ok());
  EXPECT_EQ(Read("k"), "v");
}

TEST_F(NodeTest, ScanHonoursRangeLimitAndServerCap) {
  NodeOptions o;
  o.max_scan_limit = 3;
  Open(o);
  for (char c = 'a'; c <= 'f'; c++) PutOrDie(std::string(1, c), std::string(1, c));
  v1::Op scan = Op(v1::Op::SCAN, "b");
  scan.set_end_key("e");
  v1::ExecuteResponse resp;
  ASSERT_TRUE(Exec({scan}, &resp).ok());
  ASSERT_EQ(resp.results(0).items_size(), 3);
  EXPECT_EQ(resp.results(0).items(0).key(), "b");
  EXPECT_EQ(resp.results(0).items(2).key(), "d");
  scan.set_end_key("");
  scan.set_limit(100);  // capped at 3
  ASSERT_TRUE(Exec({scan}, &resp).ok());
  EXPECT_EQ(resp.results(0).items_size(), 3);

  uint64_t id = BeginTxn(true);
  v1::ScanRequest req;
  req.set_txn_id(id);
  req.set_start_key("a");
  req.set_limit(2);
  v1::ScanResponse sresp;
  CallContext c;
  ASSERT_TRUE(node_->Scan(req, &sresp, &c).ok());
  EXPECT_EQ(sresp.items_size(), 2);
  EXPECT_TRUE(sresp.more());
  sresp.Clear();
  req.set_start_key("e");
  req.set_limit(0);  // default, capped at 3
  ASSERT_TRUE(node_->Scan(req, &sresp, &c).ok());
  EXPECT_EQ(sresp.items_size(), 2);
  EXPECT_FALSE(sresp.more());
}

TEST_F(NodeTest, InteractiveTransactionCommitsAtomically) {
  Open();
  uint64_t id = BeginTxn();
  ASSERT_NE(id, 0u);
  ASSERT_TRUE(TxnPut(id, "a", "1").ok());
  ASSERT_TRUE(TxnPut(id, "b", "2").ok());
  v1::GetResponse g;
  ASSERT_TRUE(TxnGet(id, "a", &g).ok());
  EXPECT_TRUE(g.found());
  EXPECT_EQ(Read("a"), std::nullopt);  // not visible before commit
  v1::CommitResponse c;
  ASSERT_TRUE(TxnCommit(id, &c).ok());
  EXPECT_GT(c.commit_ts(), 0u);
  EXPECT_EQ(Read("a"), "1");
  EXPECT_EQ(Read("b"), "2");
  EXPECT_EQ(node_->open_txns(), 0);
  EXPECT_EQ(TxnCommit(id).error_code(), StatusCode::NOT_FOUND);
}

TEST_F(NodeTest, ConflictingInteractivePairAbortsTheSecondCommitter) {
  Open();
  PutOrDie("x", "0");
  uint64_t t1 = BeginTxn();
  uint64_t t2 = BeginTxn();
  v1::GetResponse g;
  ASSERT_TRUE(TxnGet(t1, "x", &g).ok());
  ASSERT_TRUE(TxnGet(t2, "x", &g).ok());
  ASSERT_TRUE(TxnPut(t1, "x", "1").ok());
  ASSERT_TRUE(TxnPut(t2, "x", "2").ok());
  ASSERT_TRUE(TxnCommit(t1).ok());
  grpc::Status st = TxnCommit(t2);
  EXPECT_EQ(st.error_code(), StatusCode::ABORTED) << st.error_message();
  EXPECT_EQ(Read("x"), "1");
  EXPECT_EQ(node_->open_txns(), 0);
  EXPECT_EQ(metrics_.aborts(AbortReason::kConflict), 1u);
}

TEST_F(NodeTest, UnknownAndExpiredTransactionsAreNotFound) {
  Open();
  EXPECT_EQ(TxnPut(12345, "a", "1").error_code(), StatusCode::NOT_FOUND);

  // Timeouts are long against the sleeps: a shared VM can wake a sleeper
  // hundreds of milliseconds late.
  // Expired, seen lazily by the next call.
  uint64_t lazy = BeginTxn(false, 200);
  ASSERT_TRUE(TxnPut(lazy, "a", "1").ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  EXPECT_EQ(TxnCommit(lazy).error_code(), StatusCode::NOT_FOUND);
  EXPECT_EQ(Read("a"), std::nullopt);

  // Expired, aborted and freed by the reaper.
  uint64_t reaped = BeginTxn(false, 2000);
  ASSERT_TRUE(TxnPut(reaped, "b", "1").ok());
  EXPECT_EQ(node_->ReapExpired(Clock::now()), 0u);
  EXPECT_EQ(node_->ReapExpired(Clock::now() + std::chrono::milliseconds(5000)), 1u);
  EXPECT_EQ(node_->open_txns(), 0);
  EXPECT_EQ(TxnCommit(reaped).error_code(), StatusCode::NOT_FOUND);
  EXPECT_EQ(metrics_.aborts(AbortReason::kExpired), 2u);

  // Activity pushes the deadline.
  uint64_t busy = BeginTxn(false, 1000);
  for (int i = 0; i < 3; i++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
    ASSERT_TRUE(TxnPut(busy, "c", "1").ok());
  }
  EXPECT_TRUE(TxnCommit(busy).ok());
}

TEST_F(NodeTest, TheReaperThreadExpiresIdleTransactions) {
  NodeOptions o;
  o.reaper_period = std::chrono::milliseconds(10);
  Open(o);
  BeginTxn(false, 10);
  for (int i = 0; i < 200 && node_->open_txns() != 0; i++) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(node_->open_txns(), 0);
}

TEST_F(NodeTest, TooManyOpenTransactionsIsResourceExhausted) {
  NodeOptions o;
  o.max_open_txns = 2;
  Open(o);
  uint64_t a = BeginTxn();
  BeginTxn();
  v1::BeginRequest req;
  v1::BeginResponse resp;
  CallContext c;
  EXPECT_EQ(node_->Begin(req, &resp, &c).error_code(), StatusCode::RESOURCE_EXHAUSTED);
  ASSERT_TRUE(TxnCommit(a).ok());
  EXPECT_TRUE(node_->Begin(req, &resp, &c).ok());
}

TEST_F(NodeTest, InteractiveOpsBeyondTheLimitAreRefusedButTheTransactionLives) {
  NodeOptions o;
  o.max_ops_per_txn = 2;
  Open(o);
  uint64_t id = BeginTxn();
  ASSERT_TRUE(TxnPut(id, "a", "1").ok());
  ASSERT_TRUE(TxnPut(id, "b", "2").ok());
  EXPECT_EQ(TxnPut(id, "c", "3").error_code(), StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(TxnPut(id, std::string(2000, 'k'), "3").error_code(), StatusCode::INVALID_ARGUMENT);
  ASSERT_TRUE(TxnCommit(id).ok());
  EXPECT_EQ(Read("b"), "2");
  EXPECT_EQ(Read("c"), std::nullopt);
}

TEST_F(NodeTest, ReadOnlyTransactionRefusesWrites) {
  Open();
  uint64_t id = BeginTxn(true);
  grpc::Status st = TxnPut(id, "a", "1");
  EXPECT_EQ(st.error_code(), StatusCode::FAILED_PRECONDITION);
  v1::CommitResponse c;
  ASSERT_TRUE(TxnCommit(id, &c).ok());
  EXPECT_EQ(Read("a"), std::nullopt);
}

TEST_F(NodeTest, WritesOnAFollowerRedirectToTheLeader) {
  RoleReplicator follower;
  Open({}, {}, 2, &follower);
  CallContext ctx;
  grpc::Status st = Exec({Op(v1::Op::PUT, "a", "1")}, nullptr, &ctx);
  EXPECT_EQ(st.error_code(), StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(ctx.leader, "10.0.0.9:7070");
  EXPECT_NE(st.error_message().find("10.0.0.9:7070"), std::string::npos);
  v1::BeginRequest req;
  v1::BeginResponse resp;
  CallContext bctx;
  EXPECT_EQ(node_->Begin(req, &resp, &bctx).error_code(), StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(bctx.leader, "10.0.0.9:7070");
  // Read-only transactions may be served.
  req.set_read_only(true);
  EXPECT_TRUE(node_->Begin(req, &resp, &bctx).ok());

  follower.leader_.clear();  // leader unknown: failover in progress
  CallContext uctx;
  EXPECT_EQ(Exec({Op(v1::Op::PUT, "a", "1")}, nullptr, &uctx).error_code(), StatusCode::UNAVAILABLE);
  EXPECT_TRUE(uctx.leader.empty());
}

TEST_F(NodeTest, LeadershipLostBeforeCommitAbortsTheTransaction) {
  RoleReplicator r;
  r.role_ = Role::kLeader;
  Open({}, {}, 2, &r);
  uint64_t id = BeginTxn();
  ASSERT_TRUE(TxnPut(id, "a", "1").ok());
  r.role_ = Role::kFollower;
  EXPECT_EQ(TxnCommit(id).error_code(), StatusCode::FAILED_PRECONDITION);
  r.role_ = Role::kLeader;
  EXPECT_EQ(Read("a"), std::nullopt);
  EXPECT_EQ(node_->open_txns(), 0);
}

TEST_F(NodeTest, ReadWriteTransactionsLeftOpenOnADeposedLeaderAreAbortedReadOnlyOnesStay) {
  RoleReplicator r;
  auto [rw, ro] = LeaveTwoOpen(&r);
  EXPECT_EQ(node_->AbortUncommittable(), 0u);  // still leading: nothing to do
  EXPECT_EQ(node_->open_txns(), 2);
  r.role_ = Role::kFollower;
  EXPECT_EQ(node_->AbortUncommittable(), 1u);
  EXPECT_EQ(metrics_.aborts(AbortReason::kNotLeader), 1u);
  EXPECT_EQ(node_->open_txns(), 1);
  EXPECT_EQ(TxnCommit(rw).error_code(), StatusCode::NOT_FOUND);
  EXPECT_TRUE(TxnCommit(ro).ok());
  r.role_ = Role::kLeader;
  EXPECT_EQ(Read("a"), std::nullopt);
}

// The replicator, fixing a leader's snapshot, holds every worker, aborts
// the open read-write transactions (they could not end while it holds them,
// and they hold the engine's snapshot epoch back) and quiesces the workers.
TEST_F(NodeTest, ReadWriteTransactionsAreAbortedWithTheWorkersHeldReadOnlyOnesStay) {
  RoleReplicator r;
  auto [rw, ro] = LeaveTwoOpen(&r);
  std::vector<std::mutex*> held = node_->worker_mutexes();
  for (std::mutex* mu : held) mu->lock();
  EXPECT_EQ(node_->UnpinSnapshotEpochWithWorkersHeld(), 1u);
  for (std::mutex* mu : held) mu->unlock();
  EXPECT_EQ(metrics_.aborts(AbortReason::kLeaderSnapshot), 1u);
  EXPECT_EQ(node_->open_txns(), 1);
  EXPECT_EQ(TxnCommit(rw).error_code(), StatusCode::NOT_FOUND);
  EXPECT_TRUE(TxnCommit(ro).ok());
  EXPECT_EQ(Read("a"), std::nullopt);
  uint64_t next = BeginTxn();  // the worker is free again
  ASSERT_TRUE(TxnPut(next, "a", "2").ok());
  EXPECT_TRUE(TxnCommit(next).ok());
  EXPECT_EQ(Read("a"), "2");
}

TEST_F(NodeTest, OneShotsInterleaveWithOpenInteractiveTransactionsOnEveryWorker) {
  Open({}, {}, 1);
  EXPECT_TRUE(node_->multi_txn_workers());
  uint64_t a = BeginTxn();
  uint64_t b = BeginTxn();
  ASSERT_TRUE(TxnPut(a, "a", "1").ok());
  PutOrDie("c", "3");
  ASSERT_TRUE(TxnPut(b, "b", "2").ok());
  ASSERT_TRUE(TxnCommit(b).ok());
  ASSERT_TRUE(TxnCommit(a).ok());
  EXPECT_EQ(Read("a"), "1");
  EXPECT_EQ(Read("b"), "2");
}

TEST_F(NodeTest, SingleTransactionEngineReservesAWorkerPerInteractiveTransaction) {
  testing::FakeOptions fake;
  fake.one_txn_per_worker = true;
  Open({}, fake, 3);
  EXPECT_FALSE(node_->multi_txn_workers());
  uint64_t a = BeginTxn();
  uint64_t b = BeginTxn();
  v1::BeginRequest req;
  v1::BeginResponse resp;
  CallContext c;
  // One worker stays free for one-shots.
  EXPECT_EQ(node_->Begin(req, &resp, &c).error_code(), StatusCode::RESOURCE_EXHAUSTED);
  ASSERT_TRUE(TxnPut(a, "a", "1").ok());
  for (int i = 0; i < 20; i++) PutOrDie("k" + std::to_string(i), "v");
  ASSERT_TRUE(TxnPut(b, "b", "2").ok());
  ASSERT_TRUE(TxnCommit(a).ok());
  ASSERT_TRUE(TxnCommit(b).ok());
  EXPECT_EQ(Read("a"), "1");
  EXPECT_TRUE(node_->Begin(req, &resp, &c).ok());
}

TEST_F(NodeTest, ConcurrentOneShotIncrementsLoseNoUpdate) {
  NodeOptions o;
  o.execute_retries = 1000;
  o.max_execute_retries = 1000;
  Open(o, {}, 2);
  PutOrDie("counter", "0");
  constexpr int kThreads = 4, kEach = 200;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; t++) {
    threads.emplace_back([&] {
      for (int i = 0; i < kEach; i++) {
        for (;;) {
          v1::ExecuteResponse resp;
          if (!Exec({Op(v1::Op::GET, "counter")}, &resp).ok()) {
            failures++;
            break;
          }
          v1::Op cas = Op(v1::Op::PUT_IF, "counter", std::to_string(std::stoi(resp.results(0).value()) + 1));
          cas.set_expected(resp.results(0).value());
          v1::ExecuteResponse r2;
          grpc::Status st = Exec({cas}, &r2);
          if (!st.ok()) {
            failures++;
            break;
          }
          if (!r2.condition_failed()) break;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(Read("counter"), std::to_string(kThreads * kEach));
}

TEST_F(NodeTest, DrainingRefusesNewWorkAndStopAbortsOpenTransactions) {
  Open();
  uint64_t id = BeginTxn();
  ASSERT_TRUE(TxnPut(id, "a", "1").ok());
  node_->BeginDrain();
  EXPECT_EQ(Exec({Op(v1::Op::GET, "a")}).error_code(), StatusCode::UNAVAILABLE);
  node_->Stop();
  EXPECT_EQ(node_->open_txns(), 0);
  EXPECT_EQ(TxnCommit(id).error_code(), StatusCode::UNAVAILABLE);
  EXPECT_EQ(metrics_.aborts(AbortReason::kShutdown), 1u);
}

TEST_F(NodeTest, RepliesThatShowReadsWaitForTheNewestVersionRead) {
  Open();
  v1::ExecuteResponse put;
  ASSERT_TRUE(Exec({Op(v1::Op::PUT, "a", "1")}, &put).ok());
  uint64_t written = put.commit_ts();
  ASSERT_GT(written, 0u);
  uint64_t id = BeginTxn(true);
  v1::GetRequest get;
  get.set_txn_id(id);
  get.set_key("a");
  v1::GetResponse gresp;
  CallContext gctx;
  ASSERT_TRUE(node_->Get(get, &gresp, &gctx).ok());
  EXPECT_EQ(gctx.commit_ts, written);
  v1::CommitRequest creq;
  creq.set_txn_id(id);
  v1::CommitResponse cresp;
  CallContext cctx;
  ASSERT_TRUE(node_->Commit(creq, &cresp, &cctx).ok());
  EXPECT_EQ(cresp.commit_ts(), 0u);
  EXPECT_EQ(cctx.commit_ts, written);  // read-only: waits for what it read
}

TEST_F(NodeTest, UnderMemoryPressureWritesThatAddDataAreRefusedReadsAndDeletesRun) {
  Open();
  uint64_t resident = 0;
  MemoryGuard guard(1000, 90, [&] { return resident; });
  node_->SetMemoryGuard(&guard);
  PutOrDie("a", "1");
  uint64_t open_rw = BeginTxn();
  ASSERT_TRUE(TxnPut(open_rw, "b", "2").ok());
  uint64_t deleter = BeginTxn();

  resident = 950;
  ASSERT_EQ(guard.Sample(), 1);
  for (auto op : {Op(v1::Op::PUT, "c", "3"), Op(v1::Op::PUT_IF, "c", "3")}) {
    grpc::Status st = Exec({op});
    EXPECT_EQ(st.error_code(), StatusCode::RESOURCE_EXHAUSTED);
    EXPECT_NE(st.error_message().find("memory nearly full"), std::string::npos) << st.error_message();
  }
  EXPECT_EQ(TxnPut(deleter, "d", "4").error_code(), StatusCode::RESOURCE_EXHAUSTED);
  // A transaction that put before the pressure ends at its commit.
  EXPECT_EQ(TxnCommit(open_rw).error_code(), StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(TxnCommit(open_rw).error_code(), StatusCode::NOT_FOUND);
  EXPECT_EQ(metrics_.aborts(AbortReason::kMemory), 4u);
  EXPECT_EQ(Read("a"), "1");
  EXPECT_EQ(Read("b"), std::nullopt);
  EXPECT_EQ(Read("c"), std::nullopt);
  // Deletes free memory: they run, one-shot and interactive.
  ASSERT_TRUE(Exec({Op(v1::Op::DELETE, "a")}).ok());
  EXPECT_EQ(Read("a"), std::nullopt);
  EXPECT_TRUE(TxnCommit(deleter).ok());

  resident = 800;
  ASSERT_EQ(guard.Sample(), -1);
  PutOrDie("c", "3");
  EXPECT_EQ(Read("c"), "3");
  EXPECT_EQ(metrics_.aborts(AbortReason::kMemory), 4u);
}

}  // namespace
}  // namespace rolis::server
