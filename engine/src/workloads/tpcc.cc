#include "workloads/tpcc.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include "workloads/load_util.h"
#include "workloads/tpcc_internal.h"

namespace rolis::workloads {

using namespace tpcc;  // NOLINT: rows and keys of this workload
using namespace tpcc_internal;  // NOLINT: shared with tpcc_declared.cc

namespace {

constexpr std::string_view kTypeNames[] = {"NewOrder", "Payment", "OrderStatus", "Delivery", "StockLevel"};

constexpr int64_t kDistrictInitialYtd = 3000000;  // 30,000.00

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

}  // namespace

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
  const uint32_t now = TpccNow();
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
  st->delivery_claim.assign(config_.districts_per_warehouse + 1, 0);
  ctx.state = std::move(st);
}

TxnOutcome Tpcc::RunType(WorkerContext& ctx, uint32_t type, uint32_t home_w) {
  Thread& st = static_cast<Thread&>(*ctx.state);
  if (st.home_w != home_w) {
    // The delivery hints are of the home warehouse's districts.
    st.home_w = home_w;
    std::fill(st.delivery_hint.begin(), st.delivery_hint.end(), 0);
    std::fill(st.delivery_claim.begin(), st.delivery_claim.end(), 0);
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


}  // namespace rolis::workloads
