// TxnTable: ids, the open-transaction limit, expiry.
#include "server/txn_table.h"

#include <gtest/gtest.h>

#include <set>

namespace rolis::server {
namespace {

TEST(TxnTableTest, IdsAreNonZeroAndUnique) {
  TxnTable table(42);
  std::set<uint64_t> seen;
  for (int i = 0; i < 100000; i++) {
    uint64_t id = table.NewId();
    ASSERT_NE(id, 0u);
    ASSERT_TRUE(seen.insert(id).second);
  }
  // Another process (seed) gives other ids.
  TxnTable other(43);
  EXPECT_EQ(seen.count(other.NewId()), 0u);
}

TEST(TxnTableTest, ReservationsStopAtTheLimit) {
  TxnTable table(1);
  EXPECT_TRUE(table.TryReserve(2));
  EXPECT_TRUE(table.TryReserve(2));
  EXPECT_FALSE(table.TryReserve(2));
  EXPECT_EQ(table.size(), 2);
  table.Unreserve();
  EXPECT_TRUE(table.TryReserve(2));
}

TEST(TxnTableTest, EraseReleasesTheReservationAndExpiryIsByDeadline) {
  TxnTable table(1);
  ASSERT_TRUE(table.TryReserve(10));
  auto t = std::make_shared<OpenTxn>();
  t->id = table.NewId();
  t->idle_timeout = std::chrono::seconds(1);
  Clock::time_point now = Clock::now();
  t->Touch(now);
  table.Insert(t);
  EXPECT_EQ(table.Find(t->id), t);
  EXPECT_TRUE(table.CollectExpired(now).empty());
  EXPECT_EQ(table.CollectExpired(now + std::chrono::seconds(2)).size(), 1u);
  EXPECT_TRUE(table.Erase(t->id));
  EXPECT_FALSE(table.Erase(t->id));
  EXPECT_EQ(table.Find(t->id), nullptr);
  EXPECT_EQ(table.size(), 0);
}

}  // namespace
}  // namespace rolis::server
