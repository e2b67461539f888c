// TPC-C: the consistency conditions 1-4 of clause 3.3.2 hold after the
// population is loaded and after concurrent runs of the full mix, and the
// committed transactions are exactly accounted for in the database.
#include "workloads/tpcc.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <string>

#include "driver.h"
#include "rolis/db.h"

namespace rolis::workloads {
namespace {

using namespace tpcc;  // NOLINT

// A reduced population (the spec's is 100,000 items and 3,000 customers per
// district) so a test loads in well under a second; the shape is the same:
// 10 districts, as many initial orders as customers, the newest 30% undelivered.
TpccConfig SmallConfig(uint32_t warehouses) {
  TpccConfig c;
  c.warehouses = warehouses;
  c.items = 5000;
  c.customers_per_district = 300;
  c.new_orders_per_district = 90;
  c.seed = 42;
  return c;
}

std::unique_ptr<Database> OpenDb() {
  Options options;
  options.epoch_period_ms = 10;
  return Database::Open(options);
}

// Visits every row of [begin, end) of `table` in one read-write transaction
// (read-write: it sees the latest state, not a snapshot).
struct Reader {
  std::unique_ptr<Worker> worker;
  std::unique_ptr<Transaction> txn;

  explicit Reader(Database* db) : worker(db->RegisterWorker()), txn(worker->Begin()) {}
  ~Reader() {
    if (txn) txn->Abort();
  }
  void Scan(Table* table, std::string_view begin, std::string_view end,
            const std::function<void(std::string_view, std::string_view)>& fn) {
    Status s = txn->Scan(table, begin, end, 0, [&](std::string_view k, std::string_view v) {
      fn(k, v);
      return true;
    });
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  template <class Row>
  Row Get(Table* table, std::string_view key) {
    std::string buf;
    Status s = txn->Get(table, key, &buf);
    EXPECT_TRUE(s.ok()) << s.ToString();
    Row row{};
    EXPECT_TRUE(DecodeRow(buf, &row));
    return row;
  }
  uint64_t Count(Table* table) {
    uint64_t n = 0;
    Scan(table, std::string_view(), std::string_view(), [&](std::string_view, std::string_view) { ++n; });
    return n;
  }
};

struct DistrictFacts {
  int64_t next_o_id = 0;
  int64_t max_o_id = 0;
  int64_t max_no_o_id = 0;
  int64_t min_no_o_id = 0;
  uint64_t new_orders = 0;
  uint64_t sum_ol_cnt = 0;
  uint64_t order_lines = 0;
  uint64_t orders = 0;
};

// Checks conditions 1-4 of TPC-C clause 3.3.2 on every warehouse and district
// and returns the facts per district, keyed by (w, d).
std::map<std::pair<uint32_t, uint32_t>, DistrictFacts> CheckConsistency(Database* db, const Tpcc& tpcc) {
  const TpccTables& t = tpcc.tables();
  const uint32_t D = tpcc.config().districts_per_warehouse;
  std::map<std::pair<uint32_t, uint32_t>, DistrictFacts> facts;
  for (uint32_t w = 1; w <= tpcc.warehouses(); ++w) {
    Reader r(db);
    auto wk = WarehouseKey(w);
    const Warehouse wh = r.Get<Warehouse>(t.warehouse, wk.view());
    int64_t sum_d_ytd = 0;
    for (uint32_t d = 1; d <= D; ++d) {
      DistrictFacts& f = facts[{w, d}];
      auto dk = DistrictKey(w, d);
      const District di = r.Get<District>(t.district, dk.view());
      sum_d_ytd += di.ytd;
      f.next_o_id = di.next_o_id;

      auto ob = OrderKey(w, d, 0), oe = OrderKey(w, d + 1, 0);
      r.Scan(t.order, ob.view(), oe.view(), [&](std::string_view k, std::string_view v) {
        Order o{};
        ASSERT_TRUE(DecodeRow(v, &o));
        f.max_o_id = std::max<int64_t>(f.max_o_id, OrderKeyO(k));
        f.sum_ol_cnt += o.ol_cnt;
        ++f.orders;
      });
      f.min_no_o_id = std::numeric_limits<int64_t>::max();
      auto nb = NewOrderKey(w, d, 0), ne = NewOrderKey(w, d + 1, 0);
      r.Scan(t.new_order, nb.view(), ne.view(), [&](std::string_view k, std::string_view) {
        const int64_t o = NewOrderKeyO(k);
        f.max_no_o_id = std::max(f.max_no_o_id, o);
        f.min_no_o_id = std::min(f.min_no_o_id, o);
        ++f.new_orders;
      });
      auto lb = OrderLineKey(w, d, 0, 0), le = OrderLineKey(w, d + 1, 0, 0);
      r.Scan(t.order_line, lb.view(), le.view(), [&](std::string_view, std::string_view) { ++f.order_lines; });

      SCOPED_TRACE("warehouse " + std::to_string(w) + " district " + std::to_string(d));
      // Condition 2: D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID).
      EXPECT_EQ(f.next_o_id - 1, f.max_o_id);
      if (f.new_orders > 0) {
        EXPECT_EQ(f.next_o_id - 1, f.max_no_o_id);
        // Condition 3: max(NO_O_ID) - min(NO_O_ID) + 1 = rows in NEW-ORDER.
        EXPECT_EQ(static_cast<uint64_t>(f.max_no_o_id - f.min_no_o_id + 1), f.new_orders);
      }
      // Condition 4: sum(O_OL_CNT) = rows in ORDER-LINE.
      EXPECT_EQ(f.sum_ol_cnt, f.order_lines);
    }
    // Condition 1: W_YTD = sum(D_YTD).
    EXPECT_EQ(wh.ytd, sum_d_ytd) << "warehouse " << w;
  }
  return facts;
}

struct LoadedRun {
  std::unique_ptr<Database> db;
  std::unique_ptr<Tpcc> tpcc;
  bench::RunResult result;
};

// Loads `config` with `threads` threads, then runs `txns` transactions of the
// standard mix on each of `threads` workers.
void LoadAndRun(const TpccConfig& config, uint32_t threads, uint64_t txns, LoadedRun* run) {
  run->db = OpenDb();
  ASSERT_TRUE(run->db);
  run->tpcc = std::make_unique<Tpcc>(config);
  Status s = run->tpcc->Load(run->db.get(), threads);
  ASSERT_TRUE(s.ok()) << s.ToString();
  bench::WaitForSnapshot(run->db.get(), 2000);
  if (txns == 0) return;
  bench::DriverOptions options;
  options.threads = threads;
  options.txns_per_thread = txns;
  options.seed = 7;
  s = bench::RunWorkload(run->db.get(), run->tpcc.get(), options, &run->result);
  ASSERT_TRUE(s.ok()) << s.ToString();
}

TEST(TpccLoad, PopulationHasSpecShapeAndIsConsistent) {
  LoadedRun run;
  TpccConfig config = SmallConfig(2);
  ASSERT_NO_FATAL_FAILURE(LoadAndRun(config, 2, 0, &run));
  auto facts = CheckConsistency(run.db.get(), *run.tpcc);
  ASSERT_EQ(facts.size(), 2u * 10);
  for (const auto& [wd, f] : facts) {
    EXPECT_EQ(f.next_o_id, 301);
    EXPECT_EQ(f.orders, 300u);
    EXPECT_EQ(f.new_orders, 90u);
    EXPECT_EQ(f.min_no_o_id, 211);
  }
  Reader r(run.db.get());
  const TpccTables& t = run.tpcc->tables();
  EXPECT_EQ(r.Count(t.item), 5000u);
  EXPECT_EQ(r.Count(t.stock), 2u * 5000);
  EXPECT_EQ(r.Count(t.customer), 2u * 10 * 300);
  EXPECT_EQ(r.Count(t.customer_name_idx), 2u * 10 * 300);
  EXPECT_EQ(r.Count(t.history), 2u * 10 * 300);
  EXPECT_EQ(r.Count(t.order_customer_idx), 2u * 10 * 300);
}

// The full mix on 2 threads, one warehouse each (remote items and payments
// cross warehouses), then conditions 1-4 and the bookkeeping of what committed.
TEST(TpccRun, ConsistencyConditionsHoldAfterTwoThreadsOnTwoWarehouses) {
  LoadedRun run;
  TpccConfig config = SmallConfig(2);
  ASSERT_NO_FATAL_FAILURE(LoadAndRun(config, 2, 10000, &run));
  const auto& types = run.result.types;
  ASSERT_EQ(types.size(), 5u);
  EXPECT_EQ(run.result.commits + run.result.rollbacks, 2u * 10000);
  EXPECT_GT(types[kNewOrder].rollbacks, 0u) << "1% of NewOrders roll back";
  for (const auto& ts : types) EXPECT_GT(ts.commits, 0u) << ts.name;

  auto facts = CheckConsistency(run.db.get(), *run.tpcc);
  // Every committed NewOrder took one order id; rolled-back ones took none.
  uint64_t new_order_ids = 0;
  for (const auto& [wd, f] : facts) new_order_ids += f.next_o_id - 301;
  EXPECT_EQ(new_order_ids, types[kNewOrder].commits);
  // Every committed Payment added one history row.
  Reader r(run.db.get());
  EXPECT_EQ(r.Count(run.tpcc->tables().history), 2u * 10 * 300 + types[kPayment].commits);
}

// Two workers on one warehouse: they contend on its districts (next order id,
// YTD) and deliver the same districts, so conflicts are frequent; nothing may
// be lost or doubled.
TEST(TpccRun, ConsistencyConditionsHoldWhenTwoThreadsShareOneWarehouse) {
  LoadedRun run;
  TpccConfig config = SmallConfig(1);
  ASSERT_NO_FATAL_FAILURE(LoadAndRun(config, 2, 6000, &run));
  std::printf("conflict aborts: %llu of %llu commits\n", static_cast<unsigned long long>(run.result.conflict_aborts),
              static_cast<unsigned long long>(run.result.commits));
  auto facts = CheckConsistency(run.db.get(), *run.tpcc);
  uint64_t new_order_ids = 0, delivered_orders = 0;
  for (const auto& [wd, f] : facts) {
    new_order_ids += f.next_o_id - 301;
    delivered_orders += 90 + (f.next_o_id - 301) - f.new_orders;
  }
  EXPECT_EQ(new_order_ids, run.result.types[kNewOrder].commits);
  // A Delivery delivers at most one order per district.
  EXPECT_LE(delivered_orders, run.result.types[kDelivery].commits * 10);
  Reader r(run.db.get());
  EXPECT_EQ(r.Count(run.tpcc->tables().history), 10u * 300 + run.result.types[kPayment].commits);
}

TEST(TpccSchema, LastNamesAreThreeSyllables) {
  char name[16];
  size_t n = Tpcc::LastName(371, name);
  EXPECT_EQ(std::string(name, n), "PRICALLYOUGHT");  // the example of clause 4.3.2.3
  n = Tpcc::LastName(0, name);
  EXPECT_EQ(std::string(name, n), "BARBARBAR");
  n = Tpcc::LastName(999, name);
  EXPECT_EQ(std::string(name, n), "EINGEINGEING");
}

TEST(TpccSchema, KeysSortLikeTheirFields) {
  // Byte order of keys = numeric order of (w, d, o, ol); the customer index
  // puts a customer's newest order first.
  EXPECT_LT(OrderLineKey(1, 2, 255, 9).view(), OrderLineKey(1, 2, 256, 1).view());
  EXPECT_LT(OrderLineKey(1, 2, 70000, 15).view(), OrderLineKey(1, 3, 1, 1).view());
  EXPECT_LT(NewOrderKey(1, 10, 4000).view(), NewOrderKey(2, 1, 1).view());
  EXPECT_LT(OrderCustomerKey(1, 1, 5, 3001).view(), OrderCustomerKey(1, 1, 5, 17).view());
  EXPECT_EQ(OrderCustomerKeyO(OrderCustomerKey(1, 1, 5, 3001).view()), 3001u);
  EXPECT_LT(CustomerNameKey(1, 1, "ABLE", "ZED", 9).view(), CustomerNameKey(1, 1, "ABLEABLE", "AL", 1).view());
}

TEST(TpccSchema, HotTableKeysFitOneWord) {
  // Keys of at most 8 bytes compare as one 64-bit slice in the index.
  EXPECT_EQ(WarehouseKey(kMaxWarehouses).size(), 2u);
  EXPECT_EQ(DistrictKey(7, 10).size(), 3u);
  EXPECT_LE(CustomerKey(7, 10, 3000).size(), 8u);
  EXPECT_LE(OrderKey(7, 10, 123456).size(), 8u);
  EXPECT_LE(NewOrderKey(7, 10, 123456).size(), 8u);
  EXPECT_LE(OrderLineKey(7, 10, 123456, 15).size(), 8u);
  EXPECT_LE(StockKey(7, 100000).size(), 8u);
  EXPECT_LE(ItemKey(100000).size(), 8u);
  EXPECT_LE(HistoryKey(7, kLoadHistoryTag, 0xffffffffu).size(), 8u);
  // The decoders read the fields back.
  EXPECT_EQ(OrderKeyO(OrderKey(0xffff, 255, 0xfedcba98u).view()), 0xfedcba98u);
  EXPECT_EQ(NewOrderKeyO(NewOrderKey(3, 4, 70000).view()), 70000u);
  EXPECT_EQ(OrderLineKeyO(OrderLineKey(3, 4, 70000, 15).view()), 70000u);
  EXPECT_EQ(OrderLineKeyOl(OrderLineKey(3, 4, 70000, 15).view()), 15u);
  EXPECT_EQ(OrderCustomerKeyO(OrderCustomerKey(3, 4, 2999, 70000).view()), 70000u);
  // Warehouse ids sort numerically across the byte boundary.
  EXPECT_LT(CustomerKey(255, 10, 3000).view(), CustomerKey(256, 1, 1).view());
  EXPECT_LT(StockKey(1, 100000).view(), StockKey(2, 1).view());
}

TEST(TpccLoad, RejectsPopulationsTheKeysCannotHold) {
  auto db = OpenDb();
  TpccConfig c = SmallConfig(kMaxWarehouses + 1);
  Tpcc too_many_warehouses(c);
  EXPECT_EQ(too_many_warehouses.Load(db.get(), 1).code(), StatusCode::kInvalidArgument);
  c = SmallConfig(1);
  c.customers_per_district = 0x10000;
  c.new_orders_per_district = 1;
  Tpcc too_many_customers(c);
  EXPECT_EQ(too_many_customers.Load(db.get(), 1).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace rolis::workloads
