// TPC-C (clause 2 transactions, clause 4 population), as in Silo/Rolis:
// one home warehouse per worker thread, mix NewOrder 45 / Payment 43 /
// OrderStatus 4 / Delivery 4 / StockLevel 4, 1% remote NewOrder lines and 15%
// remote Payments (when there is more than one warehouse), 1% NewOrder
// rollbacks (an unused item id; the application aborts, not a conflict), 60%
// of Payment and OrderStatus select the customer by last name (NURand).
// Delivery runs all ten districts in one transaction, as Silo does. There are
// no terminals, keying or think times: each worker runs back to back.
//
// Population sizes default to the specification and can be reduced for tests
// (TpccConfig); the schema is in tpcc_schema.h.
//
// For the lock-based baselines (2pl, calvin) TPC-C declares its read and
// write sets (Workload::Generate/Execute, tpcc_declared.cc): the sets of
// Payment and OrderStatus by last name, Delivery and StockLevel depend on
// what they read, so a reconnaissance read computes them and the execution
// re-checks them (docs/benchmarks.md, "Modes").
#pragma once

#include <array>
#include <cstdint>
#include <memory>

#include "workloads/tpcc_schema.h"
#include "workloads/workload.h"

namespace rolis::workloads {

struct TpccConfig {
  uint32_t warehouses = 0;  // 0: one per loading thread (= worker threads)
  uint32_t items = 100000;
  uint32_t districts_per_warehouse = 10;
  uint32_t customers_per_district = 3000;  // also the initial orders per district
  uint32_t new_orders_per_district = 900;  // the newest initial orders are undelivered
  // Mix in percent: NewOrder, Payment, OrderStatus, Delivery; StockLevel gets the rest.
  uint32_t mix[4] = {45, 43, 4, 4};
  uint32_t remote_item_percent = 1;
  uint32_t remote_payment_percent = 15;
  uint32_t rollback_percent = 1;
  uint32_t by_last_name_percent = 60;
  uint64_t seed = 1;  // NURand run constants are derived from it
  uint32_t load_batch = 512;  // rows per loading transaction
};

enum TpccTxnType : uint32_t {
  kNewOrder = 0,
  kPayment = 1,
  kOrderStatus = 2,
  kDelivery = 3,
  kStockLevel = 4,
};

// Each transaction's inputs, as a terminal would key them in (Draw*), and
// what its reconnaissance read (tpcc_declared.cc): the execution runs from
// them alone.
inline constexpr uint32_t kTpccMaxLines = 15;
struct TpccNewOrderInput {
  struct Line {
    uint32_t i_id, supply_w, quantity;
  };
  uint32_t w = 0, d = 0, c = 0, ol_cnt = 0, now = 0;
  uint8_t all_local = 1;
  std::array<Line, kTpccMaxLines> lines{};
};
struct TpccPaymentInput {
  uint32_t w = 0, d = 0, c_w = 0, c_d = 0;
  bool by_name = false;
  uint32_t last_num = 0;  // by name: the last name's number (Tpcc::LastName)
  uint32_t c = 0;         // by id: the customer; by name: what the reconnaissance found (0: none)
  int64_t amount = 0;
  uint32_t now = 0, tag = 0, seq = 0;  // the history row's date and key
};
struct TpccOrderStatusInput {
  uint32_t w = 0, d = 0;
  bool by_name = false;
  uint32_t last_num = 0, c = 0;  // as in TpccPaymentInput
  uint32_t o = 0;                // reconnaissance: the customer's latest order
};
struct TpccDeliveryInput {
  uint32_t w = 0, now = 0;
  uint8_t carrier = 0;
  // Reconnaissance, per district (1-based): its oldest undelivered order
  // and that order's customer (0: none).
  std::array<uint32_t, 256> o{}, c{};
};
struct TpccStockLevelInput {
  uint32_t w = 0, d = 0;
  int32_t threshold = 0;
  // Reconnaissance: D_NEXT_O_ID, and the digest of the distinct items of
  // the 20 orders below it (tpcc_internal.h, ItemsDigest).
  uint32_t next_o = 0;
  uint64_t items_digest = 0;
};

// The tables, by their handles; all set by Load.
struct TpccTables {
  Table* warehouse = nullptr;
  Table* district = nullptr;
  Table* customer = nullptr;
  Table* customer_name_idx = nullptr;
  Table* history = nullptr;
  Table* new_order = nullptr;
  Table* order = nullptr;
  Table* order_customer_idx = nullptr;
  Table* order_line = nullptr;
  Table* item = nullptr;
  Table* stock = nullptr;
};

class Tpcc : public Workload {
 public:
  explicit Tpcc(const TpccConfig& config);
  ~Tpcc() override;

  std::string_view name() const override { return "tpcc"; }
  std::span<const std::string_view> txn_types() const override;
  Status Load(Database* db, uint32_t threads) override;
  void InitThread(WorkerContext& ctx) override;
  TxnOutcome RunOne(WorkerContext& ctx) override;

  // Each transaction with explicit inputs drawn from ctx.rng (exposed for tests).
  TxnOutcome NewOrderTxn(WorkerContext& ctx);
  TxnOutcome PaymentTxn(WorkerContext& ctx);
  TxnOutcome OrderStatusTxn(WorkerContext& ctx);
  TxnOutcome DeliveryTxn(WorkerContext& ctx);
  TxnOutcome StockLevelTxn(WorkerContext& ctx);

  // Declared transactions (tpcc_declared.cc). Up to kMaxDeclaredDistricts
  // districts per warehouse: Delivery's reconnaissance is a parameter each.
  static constexpr uint32_t kMaxDeclaredDistricts = TxnRequest::kMaxParams - 4;
  bool declares_sets() const override { return config_.districts_per_warehouse <= kMaxDeclaredDistricts; }
  void Generate(WorkerContext& ctx, TxnRequest* req) override;
  void Reconnoiter(WorkerContext& ctx, TxnRequest* req) override;
  TxnOutcome Execute(WorkerContext& ctx, const TxnRequest& req) override;

  // Drawing the inputs (ctx.rng) and running a transaction from them. The
  // Run* with `check` true (the declared path) run their read-only types on
  // the newest versions and re-check the reconnaissance in the inputs: when
  // it no longer holds they roll back with TxnOutcome::set_changed.
  TpccNewOrderInput DrawNewOrder(WorkerContext& ctx);
  TpccPaymentInput DrawPayment(WorkerContext& ctx);
  TpccOrderStatusInput DrawOrderStatus(WorkerContext& ctx);
  TpccDeliveryInput DrawDelivery(WorkerContext& ctx);
  TpccStockLevelInput DrawStockLevel(WorkerContext& ctx);
  TxnOutcome RunNewOrder(WorkerContext& ctx, const TpccNewOrderInput& in);
  TxnOutcome RunPayment(WorkerContext& ctx, const TpccPaymentInput& in, bool check);
  TxnOutcome RunOrderStatus(WorkerContext& ctx, const TpccOrderStatusInput& in, bool check);
  TxnOutcome RunDelivery(WorkerContext& ctx, const TpccDeliveryInput& in, bool check);
  TxnOutcome RunStockLevel(WorkerContext& ctx, const TpccStockLevelInput& in, bool check);

  const TpccConfig& config() const { return config_; }
  const TpccTables& tables() const { return tables_; }
  uint32_t warehouses() const { return warehouses_; }

  // For a server that loads and runs TPC-C as procedures (server/procedures.h):
  // Attach binds the tables (created when absent) for `warehouses`
  // warehouses without loading them; LoadItems loads items [lo, hi) (1-based),
  // LoadWarehouse warehouse w (1-based; `loader` is unused by the rows, as
  // in Load); RunType runs one
  // transaction of `type` with home warehouse home_w, its inputs drawn from
  // ctx.rng; SetHistorySequence sets where the thread's Payment history keys
  // continue (a server picks a random start so that keys of an earlier
  // leader's threads are not reused).
  Status Attach(Database* db, uint32_t warehouses, std::string_view prefix = {});
  Status LoadItems(Worker* worker, uint32_t lo, uint32_t hi);
  Status LoadWarehouse(Worker* worker, uint32_t w, uint32_t loader);
  TxnOutcome RunType(WorkerContext& ctx, uint32_t type, uint32_t home_w);
  void SetHistorySequence(WorkerContext& ctx, uint32_t next);

  // TPC-C last name of number 0..999 (three syllables); returns its length.
  static size_t LastName(uint32_t num, char (&out)[16]);

 private:
  struct Thread;
  uint32_t HomeWarehouse(const WorkerContext& ctx) const;
  uint32_t OtherWarehouse(WorkerContext& ctx, uint32_t home) const;
  uint32_t NURand(Rng& rng, uint32_t a, uint32_t x, uint32_t y, uint32_t c) const;
  uint32_t CustomerIdRun(Rng& rng) const;
  uint32_t LastNameNumberRun(Rng& rng) const;
  // Customer by last name: the one in the middle, by first name.
  Status FindCustomerByLastName(Transaction& txn, Thread& st, uint32_t w, uint32_t d, std::string_view last,
                                uint32_t* c_id);
  // Reads shared by a transaction and its reconnaissance.
  Status LatestOrder(Transaction& txn, uint32_t w, uint32_t d, uint32_t c, uint32_t* o);
  // The oldest new order of (w, d) at or after `from`.
  Status OldestNewOrder(Transaction& txn, uint32_t w, uint32_t d, uint32_t from, uint32_t* o);
  void ReconnoiterSet(WorkerContext& ctx, TxnRequest* req, bool restart);
  Status RecentItems(Transaction& txn, Thread& st, uint32_t w, uint32_t d, uint32_t next_o, size_t* distinct);

  TpccConfig config_;
  TpccTables tables_;
  uint32_t warehouses_ = 0;
  // NURand C constants (clause 2.1.6): for C_LAST at load and at run, C_ID, OL_I_ID.
  uint32_t c_last_load_ = 0, c_last_run_ = 0, c_id_ = 0, c_ol_i_id_ = 0;
};

}  // namespace rolis::workloads
