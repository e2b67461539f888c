// Phantoms abort: a transaction that scanned a range and then writes cannot
// commit after another transaction inserted (or deleted) a key inside that
// range; inserts outside it, and its own inserts inside it, do not abort it.
#include <gtest/gtest.h>

#include "test_util.h"

namespace rolis {
namespace {

class PhantomTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = testing::OpenDb();
    t_ = testing::MakeTable(db_.get(), "t");
    w1_ = db_->RegisterWorker();
    w2_ = db_->RegisterWorker();
    for (int i = 0; i < 200; i += 10) ASSERT_TRUE(testing::PutOne(w1_.get(), t_, testing::KeyU64(i), "v").ok());
  }
  int ScanRange(Transaction* txn, int lo, int hi) {
    int n = 0;
    EXPECT_TRUE(txn->Scan(t_, testing::KeyU64(lo), testing::KeyU64(hi), 0, [&](std::string_view, std::string_view) {
                     ++n;
                     return true;
                   }).ok());
    return n;
  }
  std::unique_ptr<Database> db_;
  Table* t_ = nullptr;
  std::unique_ptr<Worker> w1_, w2_;
};

TEST_F(PhantomTest, InsertIntoScannedRangeAbortsTheScanner) {
  auto t1 = w1_->Begin();
  EXPECT_EQ(ScanRange(t1.get(), 50, 100), 5);
  ASSERT_TRUE(testing::PutOne(w2_.get(), t_, testing::KeyU64(75), "phantom").ok());
  ASSERT_TRUE(t1->Put(t_, testing::KeyU64(1000), "x").ok());
  EXPECT_EQ(t1->Commit().code(), StatusCode::kAborted);
}

TEST_F(PhantomTest, DeleteInScannedRangeAbortsTheScanner) {
  auto t1 = w1_->Begin();
  EXPECT_EQ(ScanRange(t1.get(), 50, 100), 5);
  ASSERT_TRUE(testing::RunRw(w2_.get(), [&](Transaction* txn) { return txn->Delete(t_, testing::KeyU64(60)); }).ok());
  ASSERT_TRUE(t1->Put(t_, testing::KeyU64(1000), "x").ok());
  EXPECT_EQ(t1->Commit().code(), StatusCode::kAborted);
}

TEST_F(PhantomTest, InsertIntoLimitedScanRangeAbortsTheScanner) {
  auto t1 = w1_->Begin();
  int n = 0;
  ASSERT_TRUE(t1->Scan(t_, testing::KeyU64(0), "", 3, [&](std::string_view, std::string_view) {
                   ++n;
                   return true;
                 }).ok());
  EXPECT_EQ(n, 3);
  ASSERT_TRUE(testing::PutOne(w2_.get(), t_, testing::KeyU64(15), "phantom").ok());
  ASSERT_TRUE(t1->Put(t_, testing::KeyU64(1000), "x").ok());
  EXPECT_EQ(t1->Commit().code(), StatusCode::kAborted);
}

TEST_F(PhantomTest, ReinsertOfDeletedKeyInScannedRangeAbortsTheScanner) {
  ASSERT_TRUE(testing::RunRw(w2_.get(), [&](Transaction* txn) { return txn->Delete(t_, testing::KeyU64(70)); }).ok());
  auto t1 = w1_->Begin();
  EXPECT_EQ(ScanRange(t1.get(), 50, 100), 4);
  // The absent record is still in the index: re-inserting it changes no leaf.
  ASSERT_TRUE(testing::PutOne(w2_.get(), t_, testing::KeyU64(70), "back").ok());
  ASSERT_TRUE(t1->Put(t_, testing::KeyU64(1000), "x").ok());
  EXPECT_EQ(t1->Commit().code(), StatusCode::kAborted);
}

TEST_F(PhantomTest, OwnInsertIntoScannedRangeCommits) {
  auto t1 = w1_->Begin();
  EXPECT_EQ(ScanRange(t1.get(), 50, 100), 5);
  ASSERT_TRUE(t1->Insert(t_, testing::KeyU64(55), "mine").ok());
  EXPECT_EQ(ScanRange(t1.get(), 50, 100), 6);
  EXPECT_TRUE(t1->Commit().ok());
}

TEST_F(PhantomTest, OwnInsertsThatSplitTheScannedLeafCommit) {
  auto t1 = w1_->Begin();
  EXPECT_EQ(ScanRange(t1.get(), 0, 200), 20);
  for (int i = 1; i < 200; i += 2) ASSERT_TRUE(t1->Insert(t_, testing::KeyU64(i), "mine").ok());
  EXPECT_TRUE(t1->Commit().ok());
}

TEST_F(PhantomTest, InsertOutsideScannedRangeDoesNotAbort) {
  for (int i = 1000; i < 3000; ++i) ASSERT_TRUE(testing::PutOne(w1_.get(), t_, testing::KeyU64(i), "v").ok());
  auto t1 = w1_->Begin();
  EXPECT_EQ(ScanRange(t1.get(), 50, 100), 5);
  ASSERT_TRUE(testing::PutOne(w2_.get(), t_, testing::KeyU64(2500), "far").ok());
  ASSERT_TRUE(t1->Put(t_, testing::KeyU64(60), "x").ok());
  EXPECT_TRUE(t1->Commit().ok());
}

}  // namespace
}  // namespace rolis
