// Bad input and misuse return the documented status code, never crash, and
// change no data.
#include <gtest/gtest.h>

#include "test_util.h"

namespace rolis {
namespace {

class MisuseTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Options o;
    o.epoch_period_ms = 2;
    o.max_workers = 4;
    o.limits.max_key_bytes = 16;
    o.limits.max_value_bytes = 32;
    o.limits.max_write_set = 3;
    o.limits.max_read_set = 5;
    db_ = Database::Open(o);
    t_ = testing::MakeTable(db_.get(), "t");
    w_ = db_->RegisterWorker();
    ASSERT_TRUE(testing::PutOne(w_.get(), t_, "k", "v").ok());
  }
  // The table holds exactly {"k": "v"}.
  void ExpectUnchanged() {
    auto txn = w_->Begin();
    std::vector<std::pair<std::string, std::string>> all;
    ASSERT_TRUE(txn->Scan(t_, "", "", 0, [&](std::string_view k, std::string_view v) {
                     all.emplace_back(k, v);
                     return true;
                   }).ok());
    ASSERT_TRUE(txn->Commit().ok());
    EXPECT_EQ(all, (std::vector<std::pair<std::string, std::string>>{{"k", "v"}}));
  }
  std::unique_ptr<Database> db_;
  Table* t_ = nullptr;
  std::unique_ptr<Worker> w_;
};

TEST_F(MisuseTest, NullTableIsInvalidArgument) {
  auto txn = w_->Begin();
  std::string v;
  EXPECT_EQ(txn->Get(nullptr, "k", &v).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(txn->Put(nullptr, "k", "x").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(txn->Insert(nullptr, "n", "x").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(txn->Delete(nullptr, "k").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(txn->Update(nullptr, "k", 0, "x").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(txn->Scan(nullptr, "", "", 0, [](auto, auto) { return true; }).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(txn->Commit().ok());
  ExpectUnchanged();
}

TEST_F(MisuseTest, EmptyOrOversizedKeyOrValueIsInvalidArgumentNamingTheLimit) {
  auto txn = w_->Begin();
  std::string v, long_key(17, 'x'), long_value(33, 'y');
  EXPECT_EQ(txn->Get(t_, "", &v).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(txn->Put(t_, "", "x").code(), StatusCode::kInvalidArgument);
  Status s = txn->Put(t_, long_key, "x");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("max_key_bytes=16"), std::string::npos) << s.ToString();
  s = txn->Put(t_, "k", long_value);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("max_value_bytes=32"), std::string::npos) << s.ToString();
  EXPECT_EQ(txn->Insert(t_, "n", long_value).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(txn->Delete(t_, long_key).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(txn->Get(t_, long_key, &v).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(txn->Scan(t_, long_key, "", 0, [](auto, auto) { return true; }).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(txn->Scan(t_, "", "", 0, ScanVisitor()).code(), StatusCode::kInvalidArgument);
  // The transaction is still usable and commits nothing.
  ASSERT_TRUE(txn->Get(t_, "k", &v).ok());
  EXPECT_TRUE(txn->Commit().ok());
  ExpectUnchanged();
}

TEST_F(MisuseTest, UnknownTableIsNotFoundAndDuplicateTableAlreadyExists) {
  Table* t = nullptr;
  EXPECT_EQ(db_->GetTable("nope", &t).code(), StatusCode::kNotFound);
  EXPECT_EQ(db_->GetTable(TableId{12345}, &t).code(), StatusCode::kNotFound);
  EXPECT_EQ(db_->CreateTable("t", &t).code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(db_->CreateTable("", &t).code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(db_->GetTable("t", &t).ok());
  EXPECT_EQ(t, t_);
  ASSERT_TRUE(db_->GetTable(t_->id(), &t).ok());
  EXPECT_EQ(t, t_);
  ExpectUnchanged();
}

TEST_F(MisuseTest, TableOfAnotherDatabaseIsInvalidArgument) {
  auto other = testing::OpenDb();
  Table* foreign = testing::MakeTable(other.get(), "t2");
  auto txn = w_->Begin();
  std::string v;
  EXPECT_EQ(txn->Get(foreign, "k", &v).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(txn->Put(foreign, "k", "x").code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(txn->Commit().ok());
  ExpectUnchanged();
}

TEST_F(MisuseTest, EveryCallAfterCommitOrAbortIsFailedPrecondition) {
  for (bool commit : {true, false}) {
    auto txn = w_->Begin();
    ASSERT_TRUE(txn->Put(t_, "k", "v").ok());
    if (commit) {
      ASSERT_TRUE(txn->Commit().ok());
    } else {
      txn->Abort();
    }
    std::string v;
    EXPECT_EQ(txn->Get(t_, "k", &v).code(), StatusCode::kFailedPrecondition);
    EXPECT_EQ(txn->Put(t_, "k", "x").code(), StatusCode::kFailedPrecondition);
    EXPECT_EQ(txn->Insert(t_, "n", "x").code(), StatusCode::kFailedPrecondition);
    EXPECT_EQ(txn->Delete(t_, "k").code(), StatusCode::kFailedPrecondition);
    EXPECT_EQ(txn->Update(t_, "k", 0, "x").code(), StatusCode::kFailedPrecondition);
    EXPECT_EQ(txn->Scan(t_, "", "", 0, [](auto, auto) { return true; }).code(), StatusCode::kFailedPrecondition);
    EXPECT_EQ(txn->Commit().code(), StatusCode::kFailedPrecondition);
    txn->Abort();  // harmless
  }
  ExpectUnchanged();
}

TEST_F(MisuseTest, WriteInReadOnlyTransactionIsFailedPrecondition) {
  testing::WaitForSnapshot(db_.get(), w_.get());
  auto ro = w_->BeginReadOnly();
  EXPECT_EQ(ro->Put(t_, "k", "x").code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(ro->Insert(t_, "n", "x").code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(ro->Delete(t_, "k").code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(ro->Update(t_, "k", 0, "x").code(), StatusCode::kFailedPrecondition);
  std::string v;
  EXPECT_TRUE(ro->Get(t_, "k", &v).ok());
  EXPECT_TRUE(ro->Commit().ok());
  EXPECT_EQ(ro->commit_ts(), 0u);
  ExpectUnchanged();
}

TEST_F(MisuseTest, WriteSetAndReadSetBeyondLimitAreResourceExhausted) {
  {
    auto txn = w_->Begin();
    ASSERT_TRUE(txn->Put(t_, "a", "1").ok());
    ASSERT_TRUE(txn->Put(t_, "b", "1").ok());
    ASSERT_TRUE(txn->Put(t_, "c", "1").ok());
    EXPECT_EQ(txn->Put(t_, "d", "1").code(), StatusCode::kResourceExhausted);
    EXPECT_TRUE(txn->Put(t_, "a", "2").ok()) << "rewriting a key already in the write set needs no room";
    txn->Abort();
  }
  {
    auto txn = w_->Begin();
    std::string v;
    for (int i = 0; i < 5; ++i) ASSERT_TRUE(txn->Get(t_, "k", &v).ok());
    Status s = txn->Get(t_, "k", &v);
    EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
    EXPECT_NE(s.message().find("max_read_set=5"), std::string::npos) << s.ToString();
    txn->Abort();
  }
  ExpectUnchanged();
}

TEST_F(MisuseTest, OpenTransactionsPastMaxOpenTxnsAreResourceExhaustedWithoutHarmingTheOthers) {
  Options o;
  o.epoch_period_ms = 2;
  o.limits.max_open_txns = 2;
  auto db = Database::Open(o);
  Table* t = testing::MakeTable(db.get(), "t");
  auto w = db->RegisterWorker();
  ASSERT_TRUE(testing::PutOne(w.get(), t, "k", "v").ok());
  testing::WaitForSnapshot(db.get(), w.get());
  auto first = w->Begin();
  ASSERT_TRUE(first->Put(t, "k", "first").ok());
  auto second = w->BeginReadOnly();
  auto third = w->Begin();
  std::string v;
  Status s = third->Get(t, "k", &v);
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(s.message().find("max_open_txns=2"), std::string::npos) << s.ToString();
  EXPECT_EQ(third->Put(t, "k", "x").code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(third->Commit().code(), StatusCode::kResourceExhausted);
  auto fourth = w->BeginReadOnly();
  std::string_view view;
  EXPECT_EQ(fourth->GetView(t, "k", &view).code(), StatusCode::kResourceExhausted);
  third.reset();
  fourth.reset();
  ASSERT_TRUE(second->Get(t, "k", &v).ok());
  EXPECT_EQ(v, "v") << "the snapshot does not see an uncommitted write";
  ASSERT_TRUE(second->Commit().ok());
  ASSERT_TRUE(first->Get(t, "k", &v).ok());
  EXPECT_EQ(v, "first");
  first->Abort();
  auto after = w->Begin();  // a closed transaction frees its place
  ASSERT_TRUE(after->Get(t, "k", &v).ok());
  EXPECT_EQ(v, "v");
  EXPECT_TRUE(after->Commit().ok());
}

TEST_F(MisuseTest, GetViewOnAFinishedTransactionOrWithoutOutputFails) {
  auto txn = w_->Begin();
  EXPECT_EQ(txn->GetView(t_, "k", nullptr).code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(txn->Commit().ok());
  std::string_view view = "stale";
  EXPECT_EQ(txn->GetView(t_, "k", &view).code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(view.empty());
  ExpectUnchanged();
}

TEST_F(MisuseTest, BadReplicatedWritesAreRejected) {
  WriteRecord wr{t_->id(), "k", "replaced", false};
  EXPECT_EQ(db_->ApplyReplicated(nullptr, wr, 1, 1).code(), StatusCode::kInvalidArgument);
  WriteRecord unknown{TableId{999}, "k", "x", false};
  EXPECT_EQ(db_->ApplyReplicated(w_.get(), unknown, 1, 1).code(), StatusCode::kNotFound);
  WriteRecord empty{t_->id(), "", "x", false};
  EXPECT_EQ(db_->ApplyReplicated(w_.get(), empty, 1, 1).code(), StatusCode::kInvalidArgument);
  WriteRecord big{t_->id(), "k", std::string(33, 'z'), false};
  EXPECT_EQ(db_->ApplyReplicated(w_.get(), big, 1, 1).code(), StatusCode::kInvalidArgument);
  auto open = w_->Begin();
  EXPECT_EQ(db_->ApplyReplicated(w_.get(), wr, 1, 1).code(), StatusCode::kFailedPrecondition);
  open->Abort();
  ExpectUnchanged();
}

TEST_F(MisuseTest, RegisteringMoreThanMaxWorkersReturnsNull) {
  std::vector<std::unique_ptr<Worker>> ws;
  for (int i = 0; i < 3; ++i) {
    ws.push_back(db_->RegisterWorker());
    ASSERT_NE(ws.back(), nullptr);
  }
  EXPECT_EQ(db_->RegisterWorker(), nullptr);
  ws.pop_back();
  EXPECT_NE(db_->RegisterWorker(), nullptr) << "a released id is reusable";
}

}  // namespace
}  // namespace rolis
