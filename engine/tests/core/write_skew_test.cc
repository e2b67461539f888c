// Write skew is prevented: T1 and T2 both read x and y; T1 writes y, T2
// writes x. Interleaved by hand, exactly one of them commits.
#include <gtest/gtest.h>

#include "test_util.h"

namespace rolis {
namespace {

TEST(WriteSkewTest, InterleavedReadersThatWriteEachOthersKeyCommitExactlyOne) {
  auto db = testing::OpenDb();
  Table* t = testing::MakeTable(db.get(), "t");
  auto w1 = db->RegisterWorker(), w2 = db->RegisterWorker();
  ASSERT_TRUE(testing::PutOne(w1.get(), t, "x", "1").ok());
  ASSERT_TRUE(testing::PutOne(w1.get(), t, "y", "1").ok());

  auto t1 = w1->Begin(), t2 = w2->Begin();
  std::string v;
  ASSERT_TRUE(t1->Get(t, "x", &v).ok());
  ASSERT_TRUE(t1->Get(t, "y", &v).ok());
  ASSERT_TRUE(t2->Get(t, "x", &v).ok());
  ASSERT_TRUE(t2->Get(t, "y", &v).ok());
  ASSERT_TRUE(t1->Put(t, "y", "0").ok());
  ASSERT_TRUE(t2->Put(t, "x", "0").ok());
  Status s1 = t1->Commit();
  Status s2 = t2->Commit();
  EXPECT_TRUE(s1.ok()) << s1.ToString();
  EXPECT_EQ(s2.code(), StatusCode::kAborted) << s2.ToString();

  // The committed state is T1's alone.
  auto check = w1->Begin();
  ASSERT_TRUE(check->Get(t, "x", &v).ok());
  EXPECT_EQ(v, "1");
  ASSERT_TRUE(check->Get(t, "y", &v).ok());
  EXPECT_EQ(v, "0");
  ASSERT_TRUE(check->Commit().ok());
}

TEST(WriteSkewTest, ReadOfAbsentKeyThenConcurrentInsertAborts) {
  auto db = testing::OpenDb();
  Table* t = testing::MakeTable(db.get(), "t");
  auto w1 = db->RegisterWorker(), w2 = db->RegisterWorker();
  auto t1 = w1->Begin();
  std::string v;
  ASSERT_TRUE(t1->Get(t, "k", &v).IsNotFound());
  ASSERT_TRUE(testing::PutOne(w2.get(), t, "k", "v").ok());
  ASSERT_TRUE(t1->Put(t, "other", "1").ok());
  EXPECT_EQ(t1->Commit().code(), StatusCode::kAborted);
}

TEST(WriteSkewTest, InsertRacesInsertOfTheSameKeyOneWins) {
  auto db = testing::OpenDb();
  Table* t = testing::MakeTable(db.get(), "t");
  auto w1 = db->RegisterWorker(), w2 = db->RegisterWorker();
  auto t1 = w1->Begin(), t2 = w2->Begin();
  ASSERT_TRUE(t1->Insert(t, "k", "1").ok());
  ASSERT_TRUE(t2->Insert(t, "k", "2").ok());
  EXPECT_TRUE(t1->Commit().ok());
  EXPECT_EQ(t2->Commit().code(), StatusCode::kAborted);
  auto check = w2->Begin();
  std::string v;
  ASSERT_TRUE(check->Get(t, "k", &v).ok());
  EXPECT_EQ(v, "1");
}

}  // namespace
}  // namespace rolis
