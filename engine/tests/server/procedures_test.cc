// Named procedures (server/procedures.h) through Node::Execute over the real
// engine: the registry, argument checks (bad input changes nothing), the
// workloads' setup, load, transactions and checks, and the authorization
// flag. Each test name states the behaviour.
#include "server/procedures.h"

#include <gtest/gtest.h>

#include <cstring>
#include <set>

#include "server/authz.h"
#include "server/node.h"

namespace rolis::server {
namespace {

using grpc::StatusCode;

class ProceduresTest : public ::testing::Test {
 protected:
  void SetUp() override {
    StandaloneReplicator::Options ro;
    ro.streams = 2;
    ro.client_address = "127.0.0.1:7070";
    replicator_ = std::make_unique<StandaloneReplicator>(ro);
    Options opts;
    opts.commit_hook = replicator_.get();
    db_ = Database::Open(opts);
    ASSERT_NE(db_, nullptr);
    node_ = std::make_unique<Node>(node_options_, db_.get(), replicator_.get(), &metrics_);
    ASSERT_TRUE(node_->Start(2).ok());
  }
  void TearDown() override {
    node_.reset();
    db_.reset();
  }

  grpc::Status Call(std::string_view proc, std::vector<uint64_t> args, std::vector<int64_t>* out = nullptr) {
    v1::ExecuteRequest req;
    req.set_procedure(std::string(proc));
    for (uint64_t a : args) req.add_args(a);
    v1::ExecuteResponse resp;
    CallContext cc;
    grpc::Status st = node_->Execute(req, &resp, &cc);
    if (out != nullptr) out->assign(resp.output().begin(), resp.output().end());
    return st;
  }
  void Ok(std::string_view proc, std::vector<uint64_t> args, std::vector<int64_t>* out = nullptr) {
    grpc::Status st = Call(proc, std::move(args), out);
    ASSERT_TRUE(st.ok()) << proc << ": " << st.error_message();
  }
  // Sets the workload up and loads every part.
  void Load(std::string_view w, std::vector<uint64_t> sizes) {
    std::vector<int64_t> out;
    Ok(std::string(w) + ".setup", std::move(sizes), &out);
    ASSERT_EQ(out.size(), 1u);
    for (int64_t p = 0; p < out[0]; ++p) Ok(std::string(w) + ".load", {static_cast<uint64_t>(p)});
  }
  static std::string AccountKey(uint64_t a) {
    char key[8];
    for (int i = 0; i < 8; ++i) key[i] = static_cast<char>(a >> (56 - 8 * i));
    return std::string(key, 8);
  }
  // One op on `table` as a one-shot transaction; the response.
  v1::ExecuteResponse Op(v1::Op::Kind kind, std::string_view table, std::string key, std::string value = "") {
    v1::ExecuteRequest req;
    auto* op = req.add_ops();
    op->set_kind(kind);
    op->set_table(std::string(table));
    op->set_key(std::move(key));
    if (kind == v1::Op::PUT) op->set_value(std::move(value));
    v1::ExecuteResponse resp;
    CallContext cc;
    grpc::Status st = node_->Execute(req, &resp, &cc);
    EXPECT_TRUE(st.ok()) << table << ": " << st.error_message();
    return resp;
  }
  int64_t Account(uint64_t a) {
    v1::ExecuteResponse resp = Op(v1::Op::GET, "bench.bank", AccountKey(a));
    int64_t v = 0;
    if (resp.results_size() == 1 && resp.results(0).value().size() == 8) {
      std::memcpy(&v, resp.results(0).value().data(), 8);
    }
    return v;
  }

  NodeOptions node_options_;
  Metrics metrics_{"test"};
  std::unique_ptr<StandaloneReplicator> replicator_;
  std::unique_ptr<Database> db_;
  std::unique_ptr<Node> node_;
};

TEST(ProcedureRegistry, NamesAreUniqueAndPrefixedByTheirWorkload) {
  std::set<std::string_view> names;
  for (const Procedure& p : AllProcedures()) {
    EXPECT_TRUE(names.insert(p.name).second) << p.name;
    EXPECT_LE(p.min_args, p.max_args) << p.name;
    EXPECT_EQ(FindProcedure(p.name), &p);
  }
  EXPECT_EQ(FindProcedure("bank.nothing"), nullptr);
  EXPECT_EQ(FindProcedure(""), nullptr);
}

TEST(ProcedureRegistry, OnlyReadOnlyProceduresAreReadsForAuthorization) {
  EXPECT_FALSE(ProcedureWrites("bank.audit"));
  EXPECT_FALSE(ProcedureWrites("tpcc.stock_level"));
  EXPECT_FALSE(ProcedureWrites("ycsbpp.read"));
  EXPECT_TRUE(ProcedureWrites("bank.transfer"));
  EXPECT_TRUE(ProcedureWrites("tpcc.load"));
  EXPECT_TRUE(ProcedureWrites("no.such"));  // needs write access, then INVALID_ARGUMENT
  v1::ExecuteRequest req;
  req.set_procedure("hash.get");
  EXPECT_FALSE(ExecuteWrites(req));
  req.set_procedure("hash.update");
  EXPECT_TRUE(ExecuteWrites(req));
}

TEST_F(ProceduresTest, UnknownProcedureOrOpsWithAProcedureAreInvalidArgument) {
  EXPECT_EQ(Call("bank.steal", {1}).error_code(), StatusCode::INVALID_ARGUMENT);
  v1::ExecuteRequest req;
  req.set_procedure("bank.audit");
  req.add_ops()->set_kind(v1::Op::GET);
  v1::ExecuteResponse resp;
  CallContext cc;
  EXPECT_EQ(node_->Execute(req, &resp, &cc).error_code(), StatusCode::INVALID_ARGUMENT);
}

TEST_F(ProceduresTest, AWorkloadNotSetUpIsAFailedPrecondition) {
  grpc::Status st = Call("bank.audit", {});
  EXPECT_EQ(st.error_code(), StatusCode::FAILED_PRECONDITION);
  EXPECT_NE(st.error_message().find("bank.setup"), std::string::npos) << st.error_message();
}

TEST_F(ProceduresTest, BadSizesAtSetupAreInvalidArgument) {
  EXPECT_EQ(Call("bank.setup", {1, 100}).error_code(), StatusCode::INVALID_ARGUMENT);   // one account
  EXPECT_EQ(Call("bank.setup", {100}).error_code(), StatusCode::INVALID_ARGUMENT);      // an arg missing
  EXPECT_EQ(Call("tpcc.setup", {1, 100, 2, 10, 11}).error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(Call("ycsbpp.setup", {uint64_t{1} << 40}).error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(Call("bank.audit", {}).error_code(), StatusCode::FAILED_PRECONDITION);  // nothing was set up
}

// A second setup with the same sizes changes nothing (a re-run's --load);
// with other sizes it is refused, and what is loaded stays as it was.
TEST_F(ProceduresTest, SetupAgainTakesTheSameSizesOnly) {
  Load("bank", {100, 1000});
  std::vector<int64_t> out;
  Ok("bank.setup", {100, 1000}, &out);
  grpc::Status st = Call("bank.setup", {200, 1000});
  EXPECT_EQ(st.error_code(), StatusCode::FAILED_PRECONDITION);
  EXPECT_NE(st.error_message().find("other sizes"), std::string::npos) << st.error_message();
  Ok("bank.audit", {}, &out);
  EXPECT_EQ(out, std::vector<int64_t>{100000});
}

TEST_F(ProceduresTest, BankTransfersKeepTheTotalAndBadArgsChangeNothing) {
  Load("bank", {100, 1000});
  std::vector<int64_t> out;
  Ok("bank.audit", {}, &out);
  ASSERT_EQ(out, std::vector<int64_t>{100000});
  Ok("bank.transfer", {3, 4, 10}, &out);
  EXPECT_EQ(out[0], 1);  // committed
  EXPECT_EQ(Account(3), 990);
  EXPECT_EQ(Account(4), 1010);
  for (const std::vector<uint64_t>& bad : std::vector<std::vector<uint64_t>>{
           {3, 3, 1}, {3, 100, 1}, {100, 3, 1}, {3, 4}, {3, 4, 1, 1}, {3, 4, uint64_t{1} << 40}}) {
    EXPECT_EQ(Call("bank.transfer", bad).error_code(), StatusCode::INVALID_ARGUMENT) << bad.size();
  }
  EXPECT_EQ(Account(3), 990);
  EXPECT_EQ(Account(4), 1010);
  EXPECT_EQ(Call("bank.load", {1}).error_code(), StatusCode::INVALID_ARGUMENT);  // one part only
  Ok("bank.audit", {}, &out);
}

TEST_F(ProceduresTest, YcsbArgsMustBeDistinctRecordsBelowTheKeys) {
  Load("ycsbpp", {2000});
  Ok("ycsbpp.rmw", {1, 2, 3, 1999});
  Ok("ycsbpp.read", {1, 2, 3, 1999});
  EXPECT_EQ(Call("ycsbpp.rmw", {1, 1}).error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(Call("ycsbpp.rmw", {2000}).error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(Call("ycsbpp.read", {}).error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(Call("ycsbpp.read", std::vector<uint64_t>(17, 0)).error_code(), StatusCode::INVALID_ARGUMENT);
}

TEST_F(ProceduresTest, TpccRunsEveryTransactionAndStaysConsistent) {
  Load("tpcc", {2, 1000, 2, 30, 9});
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    for (std::string_view p : {"tpcc.new_order", "tpcc.payment", "tpcc.order_status", "tpcc.delivery",
                               "tpcc.stock_level"}) {
      Ok(p, {1 + seed % 2, seed});
    }
  }
  Ok("tpcc.check", {});
  EXPECT_EQ(Call("tpcc.new_order", {0, 1}).error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(Call("tpcc.new_order", {3, 1}).error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(Call("tpcc.payment", {1}).error_code(), StatusCode::INVALID_ARGUMENT);
  // Loading a part again: the rows exist.
  EXPECT_EQ(Call("tpcc.load", {0}).error_code(), StatusCode::FAILED_PRECONDITION);
  Ok("tpcc.check", {});
}

TEST_F(ProceduresTest, TpcaRetwisAndHashRunAndTpcaSumsHold) {
  Load("tpca", {3, 2, 5});
  Ok("tpca.txn", {1, 3, 7, 42, static_cast<uint64_t>(int64_t{-5})});
  Ok("tpca.txn", {2, 4, 10, 43, 7});
  Ok("tpca.check", {});
  EXPECT_EQ(Call("tpca.txn", {3, 0, 0, 44, 1}).error_code(), StatusCode::INVALID_ARGUMENT);  // branch 3 of 3
  EXPECT_EQ(Call("tpca.txn", {0, 0, 0, 44, uint64_t{1} << 62}).error_code(), StatusCode::INVALID_ARGUMENT);
  Ok("tpca.check", {});

  Load("retwis", {100});
  Ok("retwis.add_user", {1, 2, 3});
  Ok("retwis.follow", {4, 5});
  Ok("retwis.post_tweet", {6, 7, 8, 9, 10});
  Ok("retwis.get_timeline", {1, 2, 3, 4, 5, 6, 7, 8, 9, 10});
  EXPECT_EQ(Call("retwis.follow", {4, 5, 6}).error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(Call("retwis.post_tweet", {1, 2, 3, 4, 100}).error_code(), StatusCode::INVALID_ARGUMENT);

  Load("hash", {1000});
  Ok("hash.get", {999});
  Ok("hash.update", {1, 2, 3, 4, 5, 6, 7, 8});
  EXPECT_EQ(Call("hash.get", {1000}).error_code(), StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(Call("hash.update", {1}).error_code(), StatusCode::INVALID_ARGUMENT);
}


// docs/client.md, "Procedures": the workloads' tables are bench.<name>, so a
// user table of a workload's name (--tables) is the user's alone: loading and
// running the workload neither writes nor reads it, and what the user wrote
// there does not count in the workload's invariants.
class UserTablesTest : public ProceduresTest {
 protected:
  void SetUp() override {
    node_options_.tables = {"kv", "bank", "tpca_branch", "procedures"};
    ProceduresTest::SetUp();
  }
};

TEST_F(UserTablesTest, AUserTableNamedLikeAWorkloadTableIsNotTheWorkloads) {
  // The user's rows, in the user's "bank" under the keys of accounts 3 and 4.
  Op(v1::Op::PUT, "bank", AccountKey(3), "user row 3");
  Op(v1::Op::PUT, "bank", AccountKey(4), "user row 4");
  Op(v1::Op::PUT, "tpca_branch", AccountKey(0), "user branch");
  Op(v1::Op::PUT, "procedures", "bank", "user setup");

  Load("bank", {100, 1000});
  Load("tpca", {2, 2, 2});
  std::vector<int64_t> out;
  Ok("bank.transfer", {3, 4, 10}, &out);
  EXPECT_EQ(out[0], 1);
  Ok("tpca.txn", {0, 1, 1, 7, 5});
  Ok("bank.audit", {}, &out);
  EXPECT_EQ(out, std::vector<int64_t>{100000});
  Ok("tpca.check", {});
  EXPECT_EQ(Account(3), 990);
  EXPECT_EQ(Account(4), 1010);

  // The user's tables hold what the user wrote, and nothing else.
  v1::ExecuteRequest scan;
  for (std::string_view t : {"bank", "tpca_branch", "procedures"}) {
    auto* op = scan.add_ops();
    op->set_kind(v1::Op::SCAN);
    op->set_table(std::string(t));
  }
  v1::ExecuteResponse resp;
  CallContext cc;
  ASSERT_TRUE(node_->Execute(scan, &resp, &cc).ok());
  ASSERT_EQ(resp.results_size(), 3);
  ASSERT_EQ(resp.results(0).items_size(), 2);
  EXPECT_EQ(resp.results(0).items(0).value(), "user row 3");
  EXPECT_EQ(resp.results(0).items(1).value(), "user row 4");
  ASSERT_EQ(resp.results(1).items_size(), 1);
  EXPECT_EQ(resp.results(1).items(0).value(), "user branch");
  ASSERT_EQ(resp.results(2).items_size(), 1);
  EXPECT_EQ(resp.results(2).items(0).value(), "user setup");
}

TEST(UserTables, ANodeRefusesATableOfTheBenchmarkPrefix) {
  StandaloneReplicator::Options ro;
  ro.streams = 1;
  StandaloneReplicator replicator(ro);
  Options opts;
  opts.commit_hook = &replicator;
  std::unique_ptr<Database> db = Database::Open(opts);
  ASSERT_NE(db, nullptr);
  Metrics metrics{"test"};
  NodeOptions no;
  no.tables = {"kv", "bench.bank"};
  Node node(no, db.get(), &replicator, &metrics);
  Status s = node.Start(1);
  EXPECT_EQ(s.code(), rolis::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("reserved"), std::string::npos) << s.message();
  Table* t = nullptr;
  EXPECT_FALSE(db->GetTable("bench.bank", &t).ok());  // nothing created
}

}  // namespace
}  // namespace rolis::server
