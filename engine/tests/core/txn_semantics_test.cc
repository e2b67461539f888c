// Basic transaction semantics: reads see own writes, Put upserts, Insert and
// Delete check presence, Update overwrites a range of what it reads, aborts
// leave nothing behind, snapshots see committed data.
#include <gtest/gtest.h>

#include <map>

#include "test_util.h"

namespace rolis {
namespace {

using testing::OpenDb;

class TxnSemanticsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = OpenDb();
    t_ = testing::MakeTable(db_.get(), "t");
    w_ = db_->RegisterWorker();
    ASSERT_NE(t_, nullptr);
    ASSERT_NE(w_, nullptr);
  }
  void TearDown() override {
    w_.reset();
    db_.reset();
  }
  std::string Read(const std::string& k, StatusCode* code = nullptr) {
    auto txn = w_->Begin();
    std::string v;
    Status s = txn->Get(t_, k, &v);
    if (code) *code = s.code();
    EXPECT_TRUE(txn->Commit().ok());
    return s.ok() ? v : "<" + std::string(StatusCodeName(s.code())) + ">";
  }
  std::unique_ptr<Database> db_;
  Table* t_ = nullptr;
  std::unique_ptr<Worker> w_;
};

TEST_F(TxnSemanticsTest, ReadsSeeOwnWritesBeforeCommit) {
  auto txn = w_->Begin();
  ASSERT_TRUE(txn->Put(t_, "a", "1").ok());
  std::string v;
  ASSERT_TRUE(txn->Get(t_, "a", &v).ok());
  EXPECT_EQ(v, "1");
  ASSERT_TRUE(txn->Put(t_, "a", "2").ok());
  ASSERT_TRUE(txn->Get(t_, "a", &v).ok());
  EXPECT_EQ(v, "2");
  ASSERT_TRUE(txn->Delete(t_, "a").ok());
  EXPECT_TRUE(txn->Get(t_, "a", &v).IsNotFound());
  ASSERT_TRUE(txn->Insert(t_, "a", "3").ok());
  ASSERT_TRUE(txn->Get(t_, "a", &v).ok());
  EXPECT_EQ(v, "3");
  ASSERT_TRUE(txn->Commit().ok());
  EXPECT_NE(txn->commit_ts(), 0u);
  EXPECT_EQ(Read("a"), "3");
}

TEST_F(TxnSemanticsTest, PutUpsertsInsertRejectsPresentDeleteRejectsAbsent) {
  ASSERT_TRUE(testing::PutOne(w_.get(), t_, "k", "v1").ok());
  ASSERT_TRUE(testing::PutOne(w_.get(), t_, "k", "v2").ok());
  EXPECT_EQ(Read("k"), "v2");
  {
    auto txn = w_->Begin();
    EXPECT_EQ(txn->Insert(t_, "k", "x").code(), StatusCode::kAlreadyExists);
    EXPECT_EQ(txn->Delete(t_, "nope").code(), StatusCode::kNotFound);
    ASSERT_TRUE(txn->Delete(t_, "k").ok());
    EXPECT_EQ(txn->Delete(t_, "k").code(), StatusCode::kNotFound);
    ASSERT_TRUE(txn->Commit().ok());
  }
  EXPECT_EQ(Read("k"), "<NOT_FOUND>");
  {
    auto txn = w_->Begin();
    ASSERT_TRUE(txn->Insert(t_, "k", "v3").ok());
    ASSERT_TRUE(txn->Commit().ok());
  }
  EXPECT_EQ(Read("k"), "v3");
}

TEST_F(TxnSemanticsTest, UpdateOverwritesARangeOfTheValueItReads) {
  ASSERT_TRUE(testing::PutOne(w_.get(), t_, "k", "abcdefghij").ok());
  {
    auto txn = w_->Begin();
    ASSERT_TRUE(txn->Update(t_, "k", 2, "XY").ok());
    std::string v;
    ASSERT_TRUE(txn->Get(t_, "k", &v).ok());
    EXPECT_EQ(v, "abXYefghij") << "reads see the update";
    ASSERT_TRUE(txn->Update(t_, "k", 8, "Z").ok());
    ASSERT_TRUE(txn->Update(t_, "k", 0, "").ok());
    ASSERT_TRUE(txn->Commit().ok());
  }
  EXPECT_EQ(Read("k"), "abXYefghZj");
  {
    // A Put replaces the value whole; an Update after it changes that value.
    auto txn = w_->Begin();
    ASSERT_TRUE(txn->Update(t_, "k", 0, "1").ok());
    ASSERT_TRUE(txn->Put(t_, "k", "0123456789AB").ok());
    ASSERT_TRUE(txn->Update(t_, "k", 10, "ab").ok());
    ASSERT_TRUE(txn->Commit().ok());
  }
  EXPECT_EQ(Read("k"), "0123456789ab");
}

TEST_F(TxnSemanticsTest, UpdateOfAnAbsentKeyOrPastTheValuesEndChangesNothing) {
  ASSERT_TRUE(testing::PutOne(w_.get(), t_, "k", "abcd").ok());
  auto txn = w_->Begin();
  EXPECT_EQ(txn->Update(t_, "nope", 0, "x").code(), StatusCode::kNotFound);
  Status s = txn->Update(t_, "k", 3, "xy");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.ToString().find("passes the end of the 4-byte value"), std::string::npos) << s.ToString();
  EXPECT_EQ(txn->Update(t_, "k", 5, "").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(txn->Update(t_, "k", SIZE_MAX, "x").code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(txn->Delete(t_, "k").ok());
  EXPECT_EQ(txn->Update(t_, "k", 0, "x").code(), StatusCode::kNotFound) << "deleted by this transaction";
  txn->Abort();
  EXPECT_EQ(Read("k"), "abcd");
  auto ro = w_->BeginReadOnly();
  EXPECT_FALSE(ro->Update(t_, "k", 0, "x").ok()) << "a read-only transaction";
}

// Update reads the key: a concurrent commit to it aborts the transaction,
// as it would a Get followed by a Put.
TEST_F(TxnSemanticsTest, UpdateIsValidatedAsARead) {
  ASSERT_TRUE(testing::PutOne(w_.get(), t_, "k", "aaaa").ok());
  auto other = db_->RegisterWorker();
  auto txn = w_->Begin();
  ASSERT_TRUE(txn->Update(t_, "k", 0, "b").ok());
  ASSERT_TRUE(testing::PutOne(other.get(), t_, "k", "cccc").ok());
  EXPECT_EQ(txn->Commit().code(), StatusCode::kAborted);
  EXPECT_EQ(Read("k"), "cccc");

  // Read first: the update changes the value read, and that read validates.
  txn = w_->Begin();
  std::string_view seen;
  ASSERT_TRUE(txn->GetView(t_, "k", &seen).ok());
  ASSERT_TRUE(testing::PutOne(other.get(), t_, "k", "dddd").ok());
  ASSERT_TRUE(txn->Update(t_, "k", 1, "e").ok());
  EXPECT_EQ(txn->Commit().code(), StatusCode::kAborted);
  EXPECT_EQ(Read("k"), "dddd");
  txn = w_->Begin();
  ASSERT_TRUE(txn->GetView(t_, "k", &seen).ok());
  ASSERT_TRUE(txn->Update(t_, "k", 1, "e").ok());
  ASSERT_TRUE(txn->Commit().ok());
  EXPECT_EQ(Read("k"), "dedd");
}

TEST_F(TxnSemanticsTest, AbortedTransactionLeavesNoTrace) {
  ASSERT_TRUE(testing::PutOne(w_.get(), t_, "keep", "1").ok());
  {
    auto txn = w_->Begin();
    ASSERT_TRUE(txn->Put(t_, "new", "x").ok());
    ASSERT_TRUE(txn->Put(t_, "keep", "2").ok());
    ASSERT_TRUE(txn->Delete(t_, "keep").ok());
    txn->Abort();
    EXPECT_EQ(txn->commit_ts(), 0u);
  }
  EXPECT_EQ(Read("keep"), "1");
  EXPECT_EQ(Read("new"), "<NOT_FOUND>");
  // Destroying an open transaction aborts it.
  { auto txn = w_->Begin(); ASSERT_TRUE(txn->Put(t_, "new2", "x").ok()); }
  EXPECT_EQ(Read("new2"), "<NOT_FOUND>");
  // A scan does not show the aborted placeholders.
  auto txn = w_->Begin();
  std::vector<std::string> keys;
  ASSERT_TRUE(txn->Scan(t_, "", "", 0, [&](std::string_view k, std::string_view) {
                   keys.emplace_back(k);
                   return true;
                 }).ok());
  EXPECT_EQ(keys, std::vector<std::string>{"keep"});
}

TEST_F(TxnSemanticsTest, ScanMergesOwnWritesInKeyOrder) {
  for (const char* k : {"b", "d", "f"}) ASSERT_TRUE(testing::PutOne(w_.get(), t_, k, k).ok());
  auto txn = w_->Begin();
  ASSERT_TRUE(txn->Put(t_, "c", "C").ok());
  ASSERT_TRUE(txn->Delete(t_, "d").ok());
  ASSERT_TRUE(txn->Put(t_, "f", "F").ok());
  std::vector<std::pair<std::string, std::string>> got;
  ASSERT_TRUE(txn->Scan(t_, "a", "g", 0, [&](std::string_view k, std::string_view v) {
                   got.emplace_back(k, v);
                   return true;
                 }).ok());
  std::vector<std::pair<std::string, std::string>> want{{"b", "b"}, {"c", "C"}, {"f", "F"}};
  EXPECT_EQ(got, want);
  got.clear();
  ASSERT_TRUE(txn->Scan(t_, "b", "", 2, [&](std::string_view k, std::string_view v) {
                   got.emplace_back(k, v);
                   return true;
                 }).ok());
  want = {{"b", "b"}, {"c", "C"}};
  EXPECT_EQ(got, want);
  ASSERT_TRUE(txn->Commit().ok());
}

TEST_F(TxnSemanticsTest, ReadOnlySnapshotSeesCommittedDataAfterEpochCloses) {
  ASSERT_TRUE(testing::PutOne(w_.get(), t_, "x", "1").ok());
  testing::WaitForSnapshot(db_.get(), w_.get());
  auto ro = w_->BeginReadOnly();
  EXPECT_TRUE(ro->read_only());
  std::string v;
  ASSERT_TRUE(ro->Get(t_, "x", &v).ok());
  EXPECT_EQ(v, "1");
  EXPECT_NE(ro->max_read_ts(), 0u);
  EXPECT_EQ(ro->Put(t_, "x", "2").code(), StatusCode::kFailedPrecondition);
  ASSERT_TRUE(ro->Commit().ok());
}

TEST_F(TxnSemanticsTest, ReadOnlySnapshotIgnoresLaterCommits) {
  auto other = db_->RegisterWorker();
  ASSERT_TRUE(testing::PutOne(w_.get(), t_, "x", "old").ok());
  testing::WaitForSnapshot(db_.get(), w_.get());
  auto ro = w_->BeginReadOnly();
  std::string v;
  ASSERT_TRUE(ro->Get(t_, "x", &v).ok());
  EXPECT_EQ(v, "old");
  ASSERT_TRUE(testing::PutOne(other.get(), t_, "x", "new").ok());
  ASSERT_TRUE(testing::PutOne(other.get(), t_, "y", "new").ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_TRUE(ro->Get(t_, "x", &v).ok());
  EXPECT_EQ(v, "old");
  EXPECT_TRUE(ro->Get(t_, "y", &v).IsNotFound());
  ASSERT_TRUE(ro->Commit().ok());
}

TEST_F(TxnSemanticsTest, LargeValuesGrowOutOfLine) {
  std::string small(8, 's'), big(5000, 'b');
  ASSERT_TRUE(testing::PutOne(w_.get(), t_, "k", small).ok());
  ASSERT_TRUE(testing::PutOne(w_.get(), t_, "k", big).ok());
  EXPECT_EQ(Read("k"), big);
  ASSERT_TRUE(testing::PutOne(w_.get(), t_, "k", small).ok());
  EXPECT_EQ(Read("k"), small);
}

TEST_F(TxnSemanticsTest, EmptyWriteSetCommitHasNoTimestamp) {
  auto txn = w_->Begin();
  std::string v;
  EXPECT_TRUE(txn->Get(t_, "zzz", &v).IsNotFound());
  ASSERT_TRUE(txn->Commit().ok());
  EXPECT_EQ(txn->commit_ts(), 0u);
}

TEST_F(TxnSemanticsTest, ManyKeysInOneTransactionUseTheWriteIndex) {
  auto txn = w_->Begin();
  for (int i = 0; i < 500; ++i) ASSERT_TRUE(txn->Put(t_, testing::KeyU64(i), std::to_string(i)).ok());
  for (int i = 0; i < 500; i += 7) ASSERT_TRUE(txn->Put(t_, testing::KeyU64(i), "again").ok());
  std::string v;
  ASSERT_TRUE(txn->Get(t_, testing::KeyU64(14), &v).ok());
  EXPECT_EQ(v, "again");
  ASSERT_TRUE(txn->Get(t_, testing::KeyU64(15), &v).ok());
  EXPECT_EQ(v, "15");
  ASSERT_TRUE(txn->Commit().ok());
  EXPECT_EQ(db_->Stats().live_records, 500u);
}

}  // namespace
}  // namespace rolis
