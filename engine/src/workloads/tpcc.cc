#include "workloads/tpcc.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include "workloads/load_util.h"

namespace rolis::workloads {

using namespace tpcc;  // NOLINT: rows and keys of this workload

namespace {

constexpr std::string_view kTypeNames[] = {"NewOrder", "Payment", "OrderStatus", "Delivery", "StockLevel"};

constexpr uint32_t kMaxLines = 15;            // order lines per order
constexpr uint32_t kStockLevelOrders = 20;    // StockLevel looks at the last 20 orders
constexpr uint32_t kMaxNameMatches = 1024;    // customers of one last name in a district
constexpr int64_t kDistrictInitialYtd = 3000000;  // 30,000.00

uint32_t Now() { return static_cast<uint32_t>(::time(nullptr)); }

// Random alphanumeric string of length [lo, hi] into out (zero-padded to
// width when width > 0); returns its length.
size_t RandomAString(Rng& rng, char* out, size_t lo, size_t hi, size_t width = 0) {
  static constexpr char kAlnum[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  size_t n = static_cast<size_t>(rng.UniformInt(static_cast<int64_t>(lo), static_cast<int64_t>(hi)));
  uint64_t bits = 0;
  for (size_t i = 0; i < n; ++i) {
    if (i % 8 == 0) bits = rng.Next();
    out[i] = kAlnum[(bits & 0xff) % 62];
    bits >>= 8;
  }
  for (size_t i = n; i < width; ++i) out[i] = 0;
  return n;
}

void RandomNString(Rng& rng, char* out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<char>('0' + rng.Uniform(10));
}

void RandomZip(Rng& rng, char (&zip)[9]) {
  RandomNString(rng, zip, 4);
  std::memcpy(zip + 4, "11111", 5);
}

// I_DATA / S_DATA: 26..50 characters, 10% of them contain "ORIGINAL".
uint8_t RandomData(Rng& rng, char (&data)[50]) {
  size_t n = RandomAString(rng, data, 26, 50, 50);
  if (rng.Percent(10)) {
    size_t pos = rng.Uniform(n - 8 + 1);
    std::memcpy(data + pos, "ORIGINAL", 8);
  }
  return static_cast<uint8_t>(n);
}

// Whether "ORIGINAL" occurs in data[0, len). The data is random
// alphanumeric, so memchr for its first letter leaves about one candidate.
bool HasOriginal(const char* data, size_t len) {
  if (len < 8) return false;
  const char* p = data;
  const char* last = data + len - 8;  // last possible start
  while (p <= last) {
    p = static_cast<const char*>(std::memchr(p, 'O', static_cast<size_t>(last - p) + 1));
    if (p == nullptr) return false;
    if (std::memcmp(p, "ORIGINAL", 8) == 0) return true;
    ++p;
  }
  return false;
}

// Appends the decimal digits of v at p; returns the new end.
char* AppendUint(char* p, uint64_t v) {
  char tmp[20];
  int n = 0;
  do {
    tmp[n++] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v != 0);
  while (n > 0) *p++ = tmp[--n];
  return p;
}

}  // namespace

// Per-thread buffers: nothing here is allocated per transaction.
struct Tpcc::Thread : ThreadState {
  uint32_t home_w = 1;
  uint32_t history_seq = 0;  // 4 bytes of the history key (tpcc_schema.h)
  std::vector<uint32_t> delivery_hint;  // per district: no new_order row below this o_id
  std::array<uint32_t, kMaxNameMatches> name_ids{};
  size_t name_count = 0;
  std::array<OrderLine, kMaxLines> lines{};
  std::array<uint8_t, kMaxLines> line_numbers{};
  size_t line_count = 0;
  std::array<uint32_t, kStockLevelOrders * kMaxLines> items{};
  size_t item_count = 0;
  Customer customer{};
  Stock stock{};
  uint64_t sink = 0;  // results a terminal would display; kept so they are computed
};

Tpcc::Tpcc(const TpccConfig& config) : config_(config) {
  // NURand constants (2.1.6): C_LAST at run differs from load by a delta in
  // [65, 119] other than 96 and 112 (2.1.6.1).
  Rng rng(config.seed ^ 0x7470636363ULL);
  c_last_load_ = static_cast<uint32_t>(rng.UniformInt(0, 255));
  uint32_t delta;
  do {
    delta = static_cast<uint32_t>(rng.UniformInt(65, 119));
  } while (delta == 96 || delta == 112);
  c_last_run_ = c_last_load_ + delta <= 255 ? c_last_load_ + delta : c_last_load_ - delta;
  c_id_ = static_cast<uint32_t>(rng.UniformInt(0, 1023));
  c_ol_i_id_ = static_cast<uint32_t>(rng.UniformInt(0, 8191));
}

Tpcc::~Tpcc() = default;

std::span<const std::string_view> Tpcc::txn_types() const { return kTypeNames; }

size_t Tpcc::LastName(uint32_t num, char (&out)[16]) {
  static constexpr const char* kSyllables[] = {"BAR", "OUGHT", "ABLE",  "PRI",   "PRES",
                                               "ESE", "ANTI",  "CALLY", "ATION", "EING"};
  size_t n = 0;
  for (uint32_t div : {100u, 10u, 1u}) {
    const char* s = kSyllables[(num / div) % 10];
    size_t len = std::strlen(s);
    std::memcpy(out + n, s, len);
    n += len;
  }
  std::memset(out + n, 0, 16 - n);
  return n;
}

uint32_t Tpcc::NURand(Rng& rng, uint32_t a, uint32_t x, uint32_t y, uint32_t c) const {
  uint32_t r1 = static_cast<uint32_t>(rng.UniformInt(0, a));
  uint32_t r2 = static_cast<uint32_t>(rng.UniformInt(x, y));
  return (((r1 | r2) + c) % (y - x + 1)) + x;
}

uint32_t Tpcc::CustomerIdRun(Rng& rng) const { return NURand(rng, 1023, 1, config_.customers_per_district, c_id_); }

uint32_t Tpcc::LastNameNumberRun(Rng& rng) const {
  return NURand(rng, 255, 0, std::min<uint32_t>(999, config_.customers_per_district - 1), c_last_run_);
}

uint32_t Tpcc::HomeWarehouse(const WorkerContext& ctx) const { return ctx.index % warehouses_ + 1; }

uint32_t Tpcc::OtherWarehouse(WorkerContext& ctx, uint32_t home) const {
  uint32_t r = static_cast<uint32_t>(ctx.rng.UniformInt(1, warehouses_ - 1));
  return r >= home ? r + 1 : r;
}

// ---------------------------------------------------------------------------
// Loading (clause 4.3.3.1).

namespace {

// Loads rows [begin, end) in transactions of `batch` rows; row(txn, i) draws
// from rng, which is rewound when a batch is retried so it reloads the same rows.
template <class RowFn>
Status LoadInBatches(Worker* worker, Rng& rng, uint64_t begin, uint64_t end, uint64_t batch, RowFn&& row) {
  batch = std::max<uint64_t>(batch, 1);
  for (uint64_t lo = begin; lo < end; lo += batch) {
    const uint64_t hi = std::min(end, lo + batch);
    const Rng saved = rng;
    Status s = CommitBatch(worker, [&](Transaction& txn) -> Status {
      rng = saved;
      for (uint64_t i = lo; i < hi; ++i) {
        Status rs = row(txn, i);
        if (!rs.ok()) return rs;
      }
      return Status::OK();
    });
    if (!s.ok()) return s;
  }
  return Status::OK();
}

}  // namespace

Status Tpcc::Load(Database* db, uint32_t threads) {
  if (threads == 0) threads = 1;
  warehouses_ = config_.warehouses != 0 ? config_.warehouses : threads;
  const TpccConfig& c = config_;
  if (c.items == 0 || c.districts_per_warehouse == 0 || c.districts_per_warehouse > 255 ||
      c.customers_per_district == 0 || c.customers_per_district > 0xffff ||
      c.new_orders_per_district > c.customers_per_district ||
      c.mix[0] + c.mix[1] + c.mix[2] + c.mix[3] > 100) {
    return Status::InvalidArgument("tpcc: bad population sizes or mix");
  }
  // Key widths (tpcc_schema.h): 2-byte warehouse ids and worker tags.
  if (warehouses_ > kMaxWarehouses || threads >= kLoadHistoryTag) {
    return Status::InvalidArgument("tpcc: at most 65,535 warehouses and 65,534 threads");
  }
  Table** handles[] = {&tables_.warehouse, &tables_.district,   &tables_.customer,
                       &tables_.customer_name_idx, &tables_.history, &tables_.new_order,
                       &tables_.order,     &tables_.order_customer_idx, &tables_.order_line,
                       &tables_.item,      &tables_.stock};
  static_assert(std::size(handles) == std::size(kTableNames));
  for (size_t i = 0; i < std::size(handles); ++i) {
    Status s = db->CreateTable(kTableNames[i], handles[i]);
    if (!s.ok()) return s;
  }
  return RunOnThreads(db, threads, [&](uint32_t t, Worker* worker) -> Status {
    Status s = LoadItems(worker, c.items * t / threads + 1, c.items * (t + 1) / threads + 1);
    for (uint32_t w = t + 1; s.ok() && w <= warehouses_; w += threads) s = LoadWarehouse(worker, w, t);
    return s;
  });
}

Status Tpcc::Attach(Database* db, uint32_t warehouses, std::string_view prefix) {
  if (warehouses == 0 || warehouses > kMaxWarehouses) return Status::InvalidArgument("tpcc: 1..65,535 warehouses");
  warehouses_ = warehouses;
  Table** handles[] = {&tables_.warehouse, &tables_.district,   &tables_.customer,
                       &tables_.customer_name_idx, &tables_.history, &tables_.new_order,
                       &tables_.order,     &tables_.order_customer_idx, &tables_.order_line,
                       &tables_.item,      &tables_.stock};
  static_assert(std::size(handles) == std::size(kTableNames));
  for (size_t i = 0; i < std::size(handles); ++i) {
    Status s = CreateOrGetTable(db, TableName(prefix, kTableNames[i]), handles[i]);
    if (!s.ok()) return s;
  }
  return Status::OK();
}

Status Tpcc::LoadItems(Worker* worker, uint32_t lo, uint32_t hi) {
  Rng rng(config_.seed * 31 + lo);
  return LoadInBatches(worker, rng, lo, hi, config_.load_batch, [&](Transaction& txn, uint64_t i) {
    Item item{};
    item.im_id = static_cast<int32_t>(rng.UniformInt(1, 10000));
    RandomAString(rng, item.name, 14, 24, sizeof item.name);
    item.price = static_cast<int32_t>(rng.UniformInt(100, 10000));
    item.data_len = RandomData(rng, item.data);
    auto k = ItemKey(static_cast<uint32_t>(i));
    return txn.Insert(tables_.item, k.view(), RowBytes(item));
  });
}

Status Tpcc::LoadWarehouse(Worker* worker, uint32_t w, uint32_t loader) {
  const TpccConfig& c = config_;
  const uint32_t D = c.districts_per_warehouse, C = c.customers_per_district;
  const uint32_t now = Now();
  Rng rng(c.seed * 1000003 + w);

  // WAREHOUSE, and its STOCK.
  Status s = CommitBatch(worker, [&](Transaction& txn) {
    Warehouse wh{};
    RandomAString(rng, wh.name, 6, 10, sizeof wh.name);
    RandomAString(rng, wh.street_1, 10, 20, sizeof wh.street_1);
    RandomAString(rng, wh.street_2, 10, 20, sizeof wh.street_2);
    RandomAString(rng, wh.city, 10, 20, sizeof wh.city);
    RandomAString(rng, wh.state, 2, 2);
    RandomZip(rng, wh.zip);
    wh.tax = static_cast<int32_t>(rng.UniformInt(0, 2000));
    wh.ytd = kDistrictInitialYtd * D;  // = sum of its districts' D_YTD (condition 1)
    auto k = WarehouseKey(w);
    return txn.Insert(tables_.warehouse, k.view(), RowBytes(wh));
  });
  if (!s.ok()) return s;
  s = LoadInBatches(worker, rng, 1, c.items + 1, c.load_batch, [&](Transaction& txn, uint64_t i) {
    Stock st{};
    st.quantity = static_cast<int32_t>(rng.UniformInt(10, 100));
    for (auto& dist : st.dist) RandomAString(rng, dist, 24, 24);
    st.data_len = RandomData(rng, st.data);
    auto k = StockKey(w, static_cast<uint32_t>(i));
    return txn.Insert(tables_.stock, k.view(), RowBytes(st));
  });
  if (!s.ok()) return s;

  // DISTRICT, CUSTOMER (+ name index, HISTORY), ORDER (+ customer index,
  // ORDER-LINE, NEW-ORDER).
  for (uint32_t d = 1; d <= D && s.ok(); ++d) {
    s = CommitBatch(worker, [&](Transaction& txn) {
      District di{};
      RandomAString(rng, di.name, 6, 10, sizeof di.name);
      RandomAString(rng, di.street_1, 10, 20, sizeof di.street_1);
      RandomAString(rng, di.street_2, 10, 20, sizeof di.street_2);
      RandomAString(rng, di.city, 10, 20, sizeof di.city);
      RandomAString(rng, di.state, 2, 2);
      RandomZip(rng, di.zip);
      di.tax = static_cast<int32_t>(rng.UniformInt(0, 2000));
      di.ytd = kDistrictInitialYtd;
      di.next_o_id = static_cast<int32_t>(C + 1);
      auto k = DistrictKey(w, d);
      return txn.Insert(tables_.district, k.view(), RowBytes(di));
    });
    if (!s.ok()) return s;
    s = LoadInBatches(worker, rng, 1, C + 1, c.load_batch / 3, [&](Transaction& txn, uint64_t i) {
      const uint32_t cid = static_cast<uint32_t>(i);
      Customer cu{};
      RandomAString(rng, cu.first, 8, 16, sizeof cu.first);
      std::memcpy(cu.middle, "OE", 2);
      size_t last_len = LastName(cid <= 1000 ? cid - 1 : NURand(rng, 255, 0, 999, c_last_load_), cu.last);
      RandomAString(rng, cu.street_1, 10, 20, sizeof cu.street_1);
      RandomAString(rng, cu.street_2, 10, 20, sizeof cu.street_2);
      RandomAString(rng, cu.city, 10, 20, sizeof cu.city);
      RandomAString(rng, cu.state, 2, 2);
      RandomZip(rng, cu.zip);
      RandomNString(rng, cu.phone, 16);
      cu.since = now;
      std::memcpy(cu.credit, rng.Percent(10) ? "BC" : "GC", 2);
      cu.credit_lim = 5000000;
      cu.discount = static_cast<int32_t>(rng.UniformInt(0, 5000));
      cu.balance = -1000;
      cu.ytd_payment = 1000;
      cu.payment_cnt = 1;
      cu.delivery_cnt = 0;
      cu.data_len = static_cast<uint16_t>(RandomAString(rng, cu.data, 300, 500, sizeof cu.data));
      auto k = CustomerKey(w, d, cid);
      Status rs = txn.Insert(tables_.customer, k.view(), RowBytes(cu));
      if (!rs.ok()) return rs;
      auto nk = CustomerNameKey(w, d, std::string_view(cu.last, last_len), FixedString(cu.first, sizeof cu.first), cid);
      CustomerNameIdx idx{static_cast<int32_t>(cid)};
      rs = txn.Insert(tables_.customer_name_idx, nk.view(), RowBytes(idx));
      if (!rs.ok()) return rs;
      History h{};
      h.c_id = static_cast<int32_t>(cid);
      h.c_d_id = static_cast<uint8_t>(d);
      h.c_w_id = static_cast<int32_t>(w);
      h.d_id = static_cast<uint8_t>(d);
      h.w_id = static_cast<int32_t>(w);
      h.date = now;
      h.amount = 1000;
      RandomAString(rng, h.data, 12, 24, sizeof h.data);
      auto hk = HistoryKey(w, kLoadHistoryTag, (d << 16) | cid);
      return txn.Insert(tables_.history, hk.view(), RowBytes(h));
    });
    if (!s.ok()) return s;

    // Orders 1..C go to a random permutation of the customers.
    std::vector<uint32_t> perm(C);
    for (uint32_t i = 0; i < C; ++i) perm[i] = i + 1;
    for (uint32_t i = C; i > 1; --i) std::swap(perm[i - 1], perm[rng.Uniform(i)]);
    const uint32_t first_new = C - c.new_orders_per_district + 1;
    s = LoadInBatches(worker, rng, 1, C + 1, std::max<uint32_t>(c.load_batch / 16, 1), [&](Transaction& txn, uint64_t i) {
      const uint32_t o = static_cast<uint32_t>(i);
      const bool delivered = o < first_new;
      Order ord{};
      ord.c_id = static_cast<int32_t>(perm[o - 1]);
      ord.entry_d = now;
      ord.carrier_id = delivered ? static_cast<uint8_t>(rng.UniformInt(1, 10)) : 0;
      ord.ol_cnt = static_cast<uint8_t>(rng.UniformInt(5, 15));
      ord.all_local = 1;
      auto ok = OrderKey(w, d, o);
      Status rs = txn.Insert(tables_.order, ok.view(), RowBytes(ord));
      if (!rs.ok()) return rs;
      auto ck = OrderCustomerKey(w, d, perm[o - 1], o);
      OrderCustomerIdx oc{static_cast<int32_t>(o)};
      rs = txn.Insert(tables_.order_customer_idx, ck.view(), RowBytes(oc));
      if (!rs.ok()) return rs;
      for (uint32_t ol = 1; ol <= ord.ol_cnt; ++ol) {
        OrderLine line{};
        line.i_id = static_cast<int32_t>(rng.UniformInt(1, c.items));
        line.supply_w_id = static_cast<int32_t>(w);
        line.delivery_d = delivered ? now : 0;
        line.quantity = 5;
        line.amount = delivered ? 0 : rng.UniformInt(1, 999999);
        RandomAString(rng, line.dist_info, 24, 24);
        auto lk = OrderLineKey(w, d, o, ol);
        rs = txn.Insert(tables_.order_line, lk.view(), RowBytes(line));
        if (!rs.ok()) return rs;
      }
      if (!delivered) {
        auto nk = NewOrderKey(w, d, o);
        NewOrder no{static_cast<int32_t>(o)};
        rs = txn.Insert(tables_.new_order, nk.view(), RowBytes(no));
      }
      return rs;
    });
  }
  return s;
}

// ---------------------------------------------------------------------------
// Running.

void Tpcc::InitThread(WorkerContext& ctx) {
  auto st = std::make_unique<Thread>();
  st->home_w = HomeWarehouse(ctx);
  st->delivery_hint.assign(config_.districts_per_warehouse + 1, 0);
  ctx.state = std::move(st);
}

TxnOutcome Tpcc::RunType(WorkerContext& ctx, uint32_t type, uint32_t home_w) {
  Thread& st = static_cast<Thread&>(*ctx.state);
  if (st.home_w != home_w) {
    // The delivery hints are of the home warehouse's districts.
    st.home_w = home_w;
    std::fill(st.delivery_hint.begin(), st.delivery_hint.end(), 0);
  }
  switch (type) {
    case kNewOrder: return NewOrderTxn(ctx);
    case kPayment: return PaymentTxn(ctx);
    case kOrderStatus: return OrderStatusTxn(ctx);
    case kDelivery: return DeliveryTxn(ctx);
    default: return StockLevelTxn(ctx);
  }
}

void Tpcc::SetHistorySequence(WorkerContext& ctx, uint32_t next) { static_cast<Thread&>(*ctx.state).history_seq = next; }

TxnOutcome Tpcc::RunOne(WorkerContext& ctx) {
  uint32_t x = static_cast<uint32_t>(ctx.rng.Uniform(100));
  const uint32_t* mix = config_.mix;
  if (x < mix[0]) return NewOrderTxn(ctx);
  x -= mix[0];
  if (x < mix[1]) return PaymentTxn(ctx);
  x -= mix[1];
  if (x < mix[2]) return OrderStatusTxn(ctx);
  x -= mix[2];
  if (x < mix[3]) return DeliveryTxn(ctx);
  return StockLevelTxn(ctx);
}

namespace {

// Reads a row; a missing row or a row of the wrong size is reported with
// `missing` (kNotFound is passed through as is).
template <class Row>
Status GetRow(Transaction& txn, Table* table, std::string_view key, Row* row) {
  std::string_view value;
  Status s = txn.GetView(table, key, &value);  // no copy into a string: straight into the row
  if (!s.ok()) return s;
  if (!DecodeRow(value, row)) return Status::Internal("tpcc: row of unexpected size");
  return Status::OK();
}

// Writes back the fields of a row read in this transaction that lie in
// [first, end) (pointers into `row`): an Update of those bytes, so the
// commit need not compare the rows to find what changed (rolis/db.h).
template <class Row>
Status UpdateFields(Transaction& txn, Table* table, std::string_view key, const Row& row, const void* first,
                    const void* end) {
  const char* base = reinterpret_cast<const char*>(&row);
  const char* from = static_cast<const char*>(first);
  return txn.Update(table, key, static_cast<size_t>(from - base),
                    std::string_view(from, static_cast<size_t>(static_cast<const char*>(end) - from)));
}

// A row the workload knows exists (inserted at load, never deleted) was not
// found: in a read-write transaction a concurrent change may explain it, so
// it is treated as a conflict; anything else is passed on.
Status NotFoundIsConflict(Status s) {
  if (s.IsNotFound()) return Status::Aborted("tpcc: row vanished under a concurrent transaction");
  return s;
}

}  // namespace

TxnOutcome Tpcc::NewOrderTxn(WorkerContext& ctx) {
  Thread& st = static_cast<Thread&>(*ctx.state);
  Rng& rng = ctx.rng;
  const uint32_t w = st.home_w;
  const uint32_t d = static_cast<uint32_t>(rng.UniformInt(1, config_.districts_per_warehouse));
  const uint32_t c = CustomerIdRun(rng);
  const uint32_t ol_cnt = static_cast<uint32_t>(rng.UniformInt(5, kMaxLines));
  const bool rollback = rng.Percent(config_.rollback_percent);
  struct Line {
    uint32_t i_id, supply_w, quantity;
    Key item_key, stock_key;
  };
  std::array<Line, kMaxLines> lines;
  uint8_t all_local = 1;
  for (uint32_t i = 0; i < ol_cnt; ++i) {
    lines[i].i_id = NURand(rng, 8191, 1, config_.items, c_ol_i_id_);
    lines[i].supply_w = w;
    if (warehouses_ > 1 && rng.Percent(config_.remote_item_percent)) {
      lines[i].supply_w = OtherWarehouse(ctx, w);
      all_local = 0;
    }
    lines[i].quantity = static_cast<uint32_t>(rng.UniformInt(1, 10));
  }
  if (rollback) lines[ol_cnt - 1].i_id = config_.items + 1;  // unused: the application rolls back
  for (uint32_t i = 0; i < ol_cnt; ++i) {
    lines[i].item_key = ItemKey(lines[i].i_id);
    lines[i].stock_key = StockKey(lines[i].supply_w, lines[i].i_id);
  }
  const uint32_t now = Now();
  const auto wk = WarehouseKey(w);
  const auto dk = DistrictKey(w, d);
  const auto ck = CustomerKey(w, d, c);

  return RunTxn(ctx, kNewOrder, /*read_only=*/false, [&](Transaction& txn, bool* roll_back) -> Status {
    // Every row NewOrder reads is known before its first read: looking them
    // up together overlaps their misses (Transaction::Prefetch).
    std::array<TableKey, 3 + 2 * kMaxLines> reads;
    reads[0] = {tables_.warehouse, wk.view()};
    reads[1] = {tables_.district, dk.view()};
    reads[2] = {tables_.customer, ck.view()};
    size_t n = 3;
    for (uint32_t i = 0; i < ol_cnt; ++i) {
      reads[n++] = {tables_.item, lines[i].item_key.view()};
      reads[n++] = {tables_.stock, lines[i].stock_key.view()};
    }
    txn.Prefetch(std::span<const TableKey>(reads.data(), n));

    Warehouse wh;
    Status s = GetRow(txn, tables_.warehouse, wk.view(), &wh);
    if (!s.ok()) return NotFoundIsConflict(std::move(s));
    District di;
    s = GetRow(txn, tables_.district, dk.view(), &di);
    if (!s.ok()) return NotFoundIsConflict(std::move(s));
    const uint32_t o = static_cast<uint32_t>(di.next_o_id);
    di.next_o_id++;
    s = UpdateFields(txn, tables_.district, dk.view(), di, &di.next_o_id, &di.next_o_id + 1);
    if (!s.ok()) return s;
    s = GetRow(txn, tables_.customer, ck.view(), &st.customer);
    if (!s.ok()) return NotFoundIsConflict(std::move(s));

    // The order id comes from a district row read in this transaction; if it
    // is already taken, that read is stale and validation would fail anyway.
    auto insert = [&](Table* table, std::string_view key, std::string_view value) {
      Status is = txn.Insert(table, key, value);
      if (is.code() == StatusCode::kAlreadyExists) return Status::Aborted("tpcc: order id taken concurrently");
      return is;
    };
    Order ord{};
    ord.c_id = static_cast<int32_t>(c);
    ord.entry_d = now;
    ord.carrier_id = 0;
    ord.ol_cnt = static_cast<uint8_t>(ol_cnt);
    ord.all_local = all_local;
    auto ok = OrderKey(w, d, o);
    s = insert(tables_.order, ok.view(), RowBytes(ord));
    if (!s.ok()) return s;
    NewOrder no{static_cast<int32_t>(o)};
    auto nk = NewOrderKey(w, d, o);
    s = insert(tables_.new_order, nk.view(), RowBytes(no));
    if (!s.ok()) return s;
    OrderCustomerIdx oc{static_cast<int32_t>(o)};
    auto ock = OrderCustomerKey(w, d, c, o);
    s = insert(tables_.order_customer_idx, ock.view(), RowBytes(oc));
    if (!s.ok()) return s;

    int64_t total = 0;
    for (uint32_t i = 0; i < ol_cnt; ++i) {
      const Line& line = lines[i];
      Item item;
      s = GetRow(txn, tables_.item, line.item_key.view(), &item);
      if (s.IsNotFound()) {
        *roll_back = true;  // "Item number is not valid": the application rolls back
        return Status::OK();
      }
      if (!s.ok()) return s;
      const std::string_view sk = line.stock_key.view();
      s = GetRow(txn, tables_.stock, sk, &st.stock);
      if (!s.ok()) return NotFoundIsConflict(std::move(s));
      Stock& stock = st.stock;
      const int32_t qty = static_cast<int32_t>(line.quantity);
      stock.quantity = stock.quantity >= qty + 10 ? stock.quantity - qty : stock.quantity - qty + 91;
      stock.ytd += qty;
      stock.order_cnt++;
      if (line.supply_w != w) stock.remote_cnt++;
      s = UpdateFields(txn, tables_.stock, sk, stock, &stock.quantity, &stock.remote_cnt + 1);
      if (!s.ok()) return s;

      OrderLine ol{};
      ol.i_id = static_cast<int32_t>(line.i_id);
      ol.supply_w_id = static_cast<int32_t>(line.supply_w);
      ol.delivery_d = 0;
      ol.quantity = qty;
      ol.amount = int64_t{qty} * item.price;
      std::memcpy(ol.dist_info, stock.dist[d - 1], sizeof ol.dist_info);
      total += ol.amount;
      const bool brand = HasOriginal(item.data, item.data_len) && HasOriginal(stock.data, stock.data_len);
      st.sink += brand;
      auto lk = OrderLineKey(w, d, o, i + 1);
      s = insert(tables_.order_line, lk.view(), RowBytes(ol));
      if (!s.ok()) return s;
    }
    // total * (1 - C_DISCOUNT) * (1 + W_TAX + D_TAX), in 1/10000 units.
    st.sink += static_cast<uint64_t>(total * (10000 - st.customer.discount) / 10000 * (10000 + wh.tax + di.tax));
    return Status::OK();
  });
}

Status Tpcc::FindCustomerByLastName(Transaction& txn, Thread& st, uint32_t w, uint32_t d, std::string_view last,
                                    uint32_t* c_id) {
  auto begin = CustomerNamePrefix(w, d, last);
  auto end = CustomerNamePrefix(w, d, last).U8(0xff);  // first names never start with 0xff
  st.name_count = 0;
  Thread* sp = &st;
  Status s = txn.Scan(tables_.customer_name_idx, begin.view(), end.view(), 0,
                      [sp](std::string_view, std::string_view value) {
                        CustomerNameIdx idx;
                        if (!DecodeRow(value, &idx)) return true;
                        sp->name_ids[sp->name_count++] = static_cast<uint32_t>(idx.c_id);
                        return sp->name_count < sp->name_ids.size();
                      });
  if (!s.ok()) return s;
  if (st.name_count == 0) return Status::NotFound("tpcc: no customer of that last name");
  // Position ceil(n / 2) (1-based) in first-name order (2.5.2.2).
  *c_id = st.name_ids[(st.name_count - 1) / 2];
  return Status::OK();
}

TxnOutcome Tpcc::PaymentTxn(WorkerContext& ctx) {
  Thread& st = static_cast<Thread&>(*ctx.state);
  Rng& rng = ctx.rng;
  const uint32_t w = st.home_w;
  const uint32_t d = static_cast<uint32_t>(rng.UniformInt(1, config_.districts_per_warehouse));
  uint32_t c_w = w, c_d = d;
  if (warehouses_ > 1 && rng.Percent(config_.remote_payment_percent)) {
    c_w = OtherWarehouse(ctx, w);
    c_d = static_cast<uint32_t>(rng.UniformInt(1, config_.districts_per_warehouse));
  }
  const bool by_name = rng.Percent(config_.by_last_name_percent);
  char last[16];
  size_t last_len = 0;
  uint32_t c_arg = 0;
  if (by_name) last_len = LastName(LastNameNumberRun(rng), last);
  else c_arg = CustomerIdRun(rng);
  const int64_t amount = rng.UniformInt(100, 500000);
  const uint32_t now = Now();
  const uint32_t seq = ++st.history_seq;

  return RunTxn(ctx, kPayment, /*read_only=*/false, [&](Transaction& txn, bool*) -> Status {
    Warehouse wh;
    auto wk = WarehouseKey(w);
    Status s = GetRow(txn, tables_.warehouse, wk.view(), &wh);
    if (!s.ok()) return NotFoundIsConflict(std::move(s));
    wh.ytd += amount;
    s = UpdateFields(txn, tables_.warehouse, wk.view(), wh, &wh.ytd, &wh.ytd + 1);
    if (!s.ok()) return s;
    District di;
    auto dk = DistrictKey(w, d);
    s = GetRow(txn, tables_.district, dk.view(), &di);
    if (!s.ok()) return NotFoundIsConflict(std::move(s));
    di.ytd += amount;
    s = UpdateFields(txn, tables_.district, dk.view(), di, &di.ytd, &di.ytd + 1);
    if (!s.ok()) return s;

    uint32_t c = c_arg;
    if (by_name) {
      s = FindCustomerByLastName(txn, st, c_w, c_d, std::string_view(last, last_len), &c);
      if (!s.ok()) return NotFoundIsConflict(std::move(s));
    }
    auto ck = CustomerKey(c_w, c_d, c);
    s = GetRow(txn, tables_.customer, ck.view(), &st.customer);
    if (!s.ok()) return NotFoundIsConflict(std::move(s));
    Customer& cu = st.customer;
    cu.balance -= amount;
    cu.ytd_payment += amount;
    cu.payment_cnt++;
    if (cu.credit[0] == 'B') {
      // C_DATA := "C_ID C_D_ID C_W_ID D_ID W_ID H_AMOUNT|" + C_DATA, cut to 500.
      char head[80];
      char* p = head;
      for (uint64_t v : {uint64_t{c}, uint64_t{c_d}, uint64_t{c_w}, uint64_t{d}, uint64_t{w}}) {
        p = AppendUint(p, v);
        *p++ = ' ';
      }
      p = AppendUint(p, static_cast<uint64_t>(amount / 100));
      *p++ = '.';
      *p++ = static_cast<char>('0' + amount % 100 / 10);
      *p++ = static_cast<char>('0' + amount % 10);
      *p++ = '|';
      const size_t head_len = static_cast<size_t>(p - head);
      const size_t keep = std::min<size_t>(cu.data_len, sizeof cu.data - head_len);
      std::memmove(cu.data + head_len, cu.data, keep);
      std::memcpy(cu.data, head, head_len);
      cu.data_len = static_cast<uint16_t>(head_len + keep);
      s = txn.Put(tables_.customer, ck.view(), RowBytes(cu));
    } else {
      s = UpdateFields(txn, tables_.customer, ck.view(), cu, &cu.balance, &cu.payment_cnt + 1);
    }
    if (!s.ok()) return s;

    History h{};
    h.c_id = static_cast<int32_t>(c);
    h.c_d_id = static_cast<uint8_t>(c_d);
    h.c_w_id = static_cast<int32_t>(c_w);
    h.d_id = static_cast<uint8_t>(d);
    h.w_id = static_cast<int32_t>(w);
    h.date = now;
    h.amount = amount;
    // H_DATA = W_NAME + 4 spaces + D_NAME.
    std::string_view wn = FixedString(wh.name, sizeof wh.name), dn = FixedString(di.name, sizeof di.name);
    std::memcpy(h.data, wn.data(), wn.size());
    std::memcpy(h.data + wn.size(), "    ", 4);
    std::memcpy(h.data + wn.size() + 4, dn.data(), dn.size());
    auto hk = HistoryKey(w, ctx.index, seq);
    return txn.Insert(tables_.history, hk.view(), RowBytes(h));
  });
}

TxnOutcome Tpcc::OrderStatusTxn(WorkerContext& ctx) {
  Thread& st = static_cast<Thread&>(*ctx.state);
  Rng& rng = ctx.rng;
  const uint32_t w = st.home_w;
  const uint32_t d = static_cast<uint32_t>(rng.UniformInt(1, config_.districts_per_warehouse));
  const bool by_name = rng.Percent(config_.by_last_name_percent);
  char last[16];
  size_t last_len = 0;
  uint32_t c_arg = 0;
  if (by_name) last_len = LastName(LastNameNumberRun(rng), last);
  else c_arg = CustomerIdRun(rng);

  return RunTxn(ctx, kOrderStatus, /*read_only=*/true, [&](Transaction& txn, bool*) -> Status {
    uint32_t c = c_arg;
    if (by_name) {
      Status s = FindCustomerByLastName(txn, st, w, d, std::string_view(last, last_len), &c);
      if (!s.ok()) return s;
    }
    auto ck = CustomerKey(w, d, c);
    Status s = GetRow(txn, tables_.customer, ck.view(), &st.customer);
    if (!s.ok()) return s;

    // The customer's latest order: first key of the (w, d, c) prefix (o inverted).
    auto begin = OrderCustomerPrefix(w, d, c);
    auto end = OrderCustomerPrefix(w, d, c + 1);
    uint32_t o = 0;
    uint32_t* op = &o;
    s = txn.Scan(tables_.order_customer_idx, begin.view(), end.view(), 1, [op](std::string_view key, std::string_view) {
      *op = OrderCustomerKeyO(key);
      return false;
    });
    if (!s.ok()) return s;
    if (o == 0) return Status::Internal("tpcc: customer without an order");
    Order ord;
    auto ok = OrderKey(w, d, o);
    s = GetRow(txn, tables_.order, ok.view(), &ord);
    if (!s.ok()) return s;

    auto lb = OrderLineKey(w, d, o, 0), le = OrderLineKey(w, d, o + 1, 0);
    st.line_count = 0;
    Thread* sp = &st;
    s = txn.Scan(tables_.order_line, lb.view(), le.view(), 0, [sp](std::string_view, std::string_view value) {
      if (sp->line_count < kMaxLines && DecodeRow(value, &sp->lines[sp->line_count])) ++sp->line_count;
      return true;
    });
    if (!s.ok()) return s;
    st.sink += st.line_count + ord.carrier_id + static_cast<uint64_t>(st.customer.balance);
    return Status::OK();
  });
}

TxnOutcome Tpcc::DeliveryTxn(WorkerContext& ctx) {
  Thread& st = static_cast<Thread&>(*ctx.state);
  const uint32_t w = st.home_w;
  const uint32_t D = config_.districts_per_warehouse;
  const uint8_t carrier = static_cast<uint8_t>(ctx.rng.UniformInt(1, 10));
  const uint32_t now = Now();
  std::array<uint32_t, 256> delivered{};  // per district: the o_id delivered, 0 = none

  TxnOutcome out = RunTxn(ctx, kDelivery, /*read_only=*/false, [&](Transaction& txn, bool*) -> Status {
    for (uint32_t d = 1; d <= D; ++d) {
      delivered[d] = 0;
      // The oldest undelivered order of the district.
      auto begin = NewOrderKey(w, d, st.delivery_hint[d]);
      auto end = NewOrderKey(w, d + 1, 0);
      uint32_t o = 0;
      uint32_t* op = &o;
      Status s = txn.Scan(tables_.new_order, begin.view(), end.view(), 1, [op](std::string_view key, std::string_view) {
        *op = NewOrderKeyO(key);
        return false;
      });
      if (!s.ok()) return s;
      if (o == 0) continue;  // none: this district is skipped (2.7.4.2)
      auto nk = NewOrderKey(w, d, o);
      s = txn.Delete(tables_.new_order, nk.view());
      if (!s.ok()) return NotFoundIsConflict(std::move(s));

      Order ord;
      auto ok = OrderKey(w, d, o);
      s = GetRow(txn, tables_.order, ok.view(), &ord);
      if (!s.ok()) return NotFoundIsConflict(std::move(s));
      ord.carrier_id = carrier;
      s = txn.Put(tables_.order, ok.view(), RowBytes(ord));
      if (!s.ok()) return s;

      auto lb = OrderLineKey(w, d, o, 0), le = OrderLineKey(w, d, o + 1, 0);
      st.line_count = 0;
      Thread* sp = &st;
      s = txn.Scan(tables_.order_line, lb.view(), le.view(), 0, [sp](std::string_view key, std::string_view value) {
        if (sp->line_count < kMaxLines && DecodeRow(value, &sp->lines[sp->line_count])) {
          sp->line_numbers[sp->line_count++] = static_cast<uint8_t>(OrderLineKeyOl(key));
        }
        return true;
      });
      if (!s.ok()) return s;
      int64_t sum = 0;
      for (size_t i = 0; i < st.line_count; ++i) {
        OrderLine& line = st.lines[i];
        sum += line.amount;
        line.delivery_d = now;
        auto lk = OrderLineKey(w, d, o, st.line_numbers[i]);
        s = txn.Put(tables_.order_line, lk.view(), RowBytes(line));
        if (!s.ok()) return s;
      }

      auto ck = CustomerKey(w, d, static_cast<uint32_t>(ord.c_id));
      s = GetRow(txn, tables_.customer, ck.view(), &st.customer);
      if (!s.ok()) return NotFoundIsConflict(std::move(s));
      st.customer.balance += sum;
      st.customer.delivery_cnt++;
      s = UpdateFields(txn, tables_.customer, ck.view(), st.customer, &st.customer.balance,
                       &st.customer.delivery_cnt + 1);
      if (!s.ok()) return s;
      delivered[d] = o;
    }
    return Status::OK();
  });
  if (out.committed) {
    // Orders below a delivered one have no new_order row any more, and none
    // is ever inserted there again (o ids grow): later scans start past it.
    for (uint32_t d = 1; d <= D; ++d) {
      if (delivered[d] != 0) st.delivery_hint[d] = delivered[d] + 1;
    }
  }
  return out;
}

TxnOutcome Tpcc::StockLevelTxn(WorkerContext& ctx) {
  Thread& st = static_cast<Thread&>(*ctx.state);
  const uint32_t w = st.home_w;
  const uint32_t d = static_cast<uint32_t>(ctx.rng.UniformInt(1, config_.districts_per_warehouse));
  const int32_t threshold = static_cast<int32_t>(ctx.rng.UniformInt(10, 20));

  return RunTxn(ctx, kStockLevel, /*read_only=*/true, [&](Transaction& txn, bool*) -> Status {
    District di;
    auto dk = DistrictKey(w, d);
    Status s = GetRow(txn, tables_.district, dk.view(), &di);
    if (!s.ok()) return s;
    const uint32_t next = static_cast<uint32_t>(di.next_o_id);
    const uint32_t first = next > kStockLevelOrders ? next - kStockLevelOrders : 0;
    auto lb = OrderLineKey(w, d, first, 0), le = OrderLineKey(w, d, next, 0);
    st.item_count = 0;
    Thread* sp = &st;
    s = txn.Scan(tables_.order_line, lb.view(), le.view(), 0, [sp](std::string_view, std::string_view value) {
      OrderLine line;
      if (sp->item_count < sp->items.size() && DecodeRow(value, &line)) {
        sp->items[sp->item_count++] = static_cast<uint32_t>(line.i_id);
      }
      return true;
    });
    if (!s.ok()) return s;
    std::sort(st.items.begin(), st.items.begin() + st.item_count);
    const size_t distinct = std::unique(st.items.begin(), st.items.begin() + st.item_count) - st.items.begin();
    // ~200 stock rows, read a chunk at a time, each chunk looked up
    // together first (Transaction::Prefetch).
    constexpr size_t kChunk = 16;
    std::array<Key, kChunk> keys;
    std::array<TableKey, kChunk> chunk;
    uint32_t low = 0;
    for (size_t from = 0; from < distinct; from += kChunk) {
      const size_t n = std::min(kChunk, distinct - from);
      for (size_t i = 0; i < n; ++i) {
        keys[i] = StockKey(w, st.items[from + i]);
        chunk[i] = {tables_.stock, keys[i].view()};
      }
      txn.Prefetch(std::span<const TableKey>(chunk.data(), n));
      for (size_t i = 0; i < n; ++i) {
        s = GetRow(txn, tables_.stock, keys[i].view(), &st.stock);
        if (!s.ok()) return s;
        if (st.stock.quantity < threshold) ++low;
      }
    }
    st.sink += low;
    return Status::OK();
  });
}

}  // namespace rolis::workloads
