// TPC-C's five transactions (clause 2): each drawn from the inputs a
// terminal would key in (Draw*) and run from them (Run*). The silo and rolis
// modes run them back to back (Tpcc::RunOne); the declared path
// (tpcc_declared.cc) runs them with the reconnaissance in the inputs.
#include <algorithm>
#include <array>
#include <cstring>

#include "workloads/tpcc.h"
#include "workloads/tpcc_internal.h"

namespace rolis::workloads {

using namespace tpcc;           // NOLINT: rows and keys of this workload
using namespace tpcc_internal;  // NOLINT

namespace {

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

// A reconnaissance the execution finds out of date: the body returns this
// status after setting its flag; Stale turns it into TxnOutcome::set_changed.
Status StaleSet(bool* stale) {
  *stale = true;
  return Status::FailedPrecondition("tpcc: the reconnaissance is out of date");
}

// `stale` by reference: read after the transaction ran (the order in which
// a call's arguments are evaluated is unspecified).
TxnOutcome Stale(TxnOutcome out, const bool& stale) {
  if (stale && out.error.code() == StatusCode::kFailedPrecondition) {
    out.error = Status::OK();
    out.committed = false;
    out.set_changed = true;
  }
  return out;
}

// Runs `run` with ctx.snapshot_reads off when `newest`: a declared
// read-only transaction reads the newest versions under its locks, as its
// reconnaissance does, not a snapshot up to an epoch old.
template <class Fn>
TxnOutcome NewestReads(WorkerContext& ctx, bool newest, Fn&& run) {
  const bool saved = ctx.snapshot_reads;
  if (newest) ctx.snapshot_reads = false;
  TxnOutcome out = run();
  ctx.snapshot_reads = saved;
  return out;
}

}  // namespace

TxnOutcome Tpcc::NewOrderTxn(WorkerContext& ctx) { return RunNewOrder(ctx, DrawNewOrder(ctx)); }
TxnOutcome Tpcc::PaymentTxn(WorkerContext& ctx) { return RunPayment(ctx, DrawPayment(ctx), false); }
TxnOutcome Tpcc::OrderStatusTxn(WorkerContext& ctx) { return RunOrderStatus(ctx, DrawOrderStatus(ctx), false); }
TxnOutcome Tpcc::DeliveryTxn(WorkerContext& ctx) { return RunDelivery(ctx, DrawDelivery(ctx), false); }
TxnOutcome Tpcc::StockLevelTxn(WorkerContext& ctx) { return RunStockLevel(ctx, DrawStockLevel(ctx), false); }

// ---------------------------------------------------------------------------
// NewOrder (2.4).

TpccNewOrderInput Tpcc::DrawNewOrder(WorkerContext& ctx) {
  Thread& st = static_cast<Thread&>(*ctx.state);
  Rng& rng = ctx.rng;
  TpccNewOrderInput in;
  in.w = st.home_w;
  in.d = static_cast<uint32_t>(rng.UniformInt(1, config_.districts_per_warehouse));
  in.c = CustomerIdRun(rng);
  in.ol_cnt = static_cast<uint32_t>(rng.UniformInt(5, kMaxLines));
  const bool rollback = rng.Percent(config_.rollback_percent);
  for (uint32_t i = 0; i < in.ol_cnt; ++i) {
    TpccNewOrderInput::Line& line = in.lines[i];
    line.i_id = NURand(rng, 8191, 1, config_.items, c_ol_i_id_);
    line.supply_w = in.w;
    if (warehouses_ > 1 && rng.Percent(config_.remote_item_percent)) {
      line.supply_w = OtherWarehouse(ctx, in.w);
      in.all_local = 0;
    }
    line.quantity = static_cast<uint32_t>(rng.UniformInt(1, 10));
  }
  if (rollback) in.lines[in.ol_cnt - 1].i_id = config_.items + 1;  // unused: the application rolls back
  in.now = TpccNow();
  return in;
}

TxnOutcome Tpcc::RunNewOrder(WorkerContext& ctx, const TpccNewOrderInput& in) {
  Thread& st = static_cast<Thread&>(*ctx.state);
  const uint32_t w = in.w, d = in.d, c = in.c, ol_cnt = in.ol_cnt, now = in.now;
  const uint8_t all_local = in.all_local;
  struct Line {
    uint32_t i_id, supply_w, quantity;
    Key item_key, stock_key;
  };
  std::array<Line, kMaxLines> lines;
  for (uint32_t i = 0; i < ol_cnt; ++i) {
    lines[i].i_id = in.lines[i].i_id;
    lines[i].supply_w = in.lines[i].supply_w;
    lines[i].quantity = in.lines[i].quantity;
    lines[i].item_key = ItemKey(lines[i].i_id);
    lines[i].stock_key = StockKey(lines[i].supply_w, lines[i].i_id);
  }
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

Status Tpcc::LatestOrder(Transaction& txn, uint32_t w, uint32_t d, uint32_t c, uint32_t* o) {
  // The first key of the (w, d, c) prefix (o inverted).
  auto begin = OrderCustomerPrefix(w, d, c);
  auto end = OrderCustomerPrefix(w, d, c + 1);
  *o = 0;
  return txn.Scan(tables_.order_customer_idx, begin.view(), end.view(), 1, [o](std::string_view key, std::string_view) {
    *o = OrderCustomerKeyO(key);
    return false;
  });
}

Status Tpcc::OldestNewOrder(Transaction& txn, uint32_t w, uint32_t d, uint32_t from, uint32_t* o) {
  auto begin = NewOrderKey(w, d, from);
  auto end = NewOrderKey(w, d + 1, 0);
  *o = 0;
  return txn.Scan(tables_.new_order, begin.view(), end.view(), 1, [o](std::string_view key, std::string_view) {
    *o = NewOrderKeyO(key);
    return false;
  });
}

Status Tpcc::RecentItems(Transaction& txn, Thread& st, uint32_t w, uint32_t d, uint32_t next, size_t* distinct) {
  const uint32_t first = next > kStockLevelOrders ? next - kStockLevelOrders : 0;
  auto lb = OrderLineKey(w, d, first, 0), le = OrderLineKey(w, d, next, 0);
  st.item_count = 0;
  Thread* sp = &st;
  Status s = txn.Scan(tables_.order_line, lb.view(), le.view(), 0, [sp](std::string_view, std::string_view value) {
    OrderLine line;
    if (sp->item_count < sp->items.size() && DecodeRow(value, &line)) {
      sp->items[sp->item_count++] = static_cast<uint32_t>(line.i_id);
    }
    return true;
  });
  if (!s.ok()) return s;
  std::sort(st.items.begin(), st.items.begin() + st.item_count);
  *distinct = std::unique(st.items.begin(), st.items.begin() + st.item_count) - st.items.begin();
  return Status::OK();
}

// ---------------------------------------------------------------------------
// Payment (2.5).

TpccPaymentInput Tpcc::DrawPayment(WorkerContext& ctx) {
  Thread& st = static_cast<Thread&>(*ctx.state);
  Rng& rng = ctx.rng;
  TpccPaymentInput in;
  in.w = st.home_w;
  in.d = static_cast<uint32_t>(rng.UniformInt(1, config_.districts_per_warehouse));
  in.c_w = in.w;
  in.c_d = in.d;
  if (warehouses_ > 1 && rng.Percent(config_.remote_payment_percent)) {
    in.c_w = OtherWarehouse(ctx, in.w);
    in.c_d = static_cast<uint32_t>(rng.UniformInt(1, config_.districts_per_warehouse));
  }
  in.by_name = rng.Percent(config_.by_last_name_percent);
  if (in.by_name) {
    in.last_num = LastNameNumberRun(rng);
  } else {
    in.c = CustomerIdRun(rng);
  }
  in.amount = rng.UniformInt(100, 500000);
  in.now = TpccNow();
  in.tag = ctx.index;
  in.seq = ++st.history_seq;
  return in;
}

TxnOutcome Tpcc::RunPayment(WorkerContext& ctx, const TpccPaymentInput& in, bool check) {
  Thread& st = static_cast<Thread&>(*ctx.state);
  const uint32_t w = in.w, d = in.d, c_w = in.c_w, c_d = in.c_d;
  const int64_t amount = in.amount;
  char last[16];
  const size_t last_len = in.by_name ? LastName(in.last_num, last) : 0;
  bool stale = false;

  return Stale(RunTxn(ctx, kPayment, /*read_only=*/false, [&](Transaction& txn, bool*) -> Status {
    stale = false;
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

    uint32_t c = in.c;
    if (in.by_name) {
      s = FindCustomerByLastName(txn, st, c_w, c_d, std::string_view(last, last_len), &c);
      if (!s.ok()) return NotFoundIsConflict(std::move(s));
      if (check && c != in.c) return StaleSet(&stale);
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
    h.date = in.now;
    h.amount = amount;
    // H_DATA = W_NAME + 4 spaces + D_NAME.
    std::string_view wn = FixedString(wh.name, sizeof wh.name), dn = FixedString(di.name, sizeof di.name);
    std::memcpy(h.data, wn.data(), wn.size());
    std::memcpy(h.data + wn.size(), "    ", 4);
    std::memcpy(h.data + wn.size() + 4, dn.data(), dn.size());
    auto hk = HistoryKey(w, in.tag, in.seq);
    return txn.Insert(tables_.history, hk.view(), RowBytes(h));
  }), stale);
}

// ---------------------------------------------------------------------------
// OrderStatus (2.6).

TpccOrderStatusInput Tpcc::DrawOrderStatus(WorkerContext& ctx) {
  Thread& st = static_cast<Thread&>(*ctx.state);
  Rng& rng = ctx.rng;
  TpccOrderStatusInput in;
  in.w = st.home_w;
  in.d = static_cast<uint32_t>(rng.UniformInt(1, config_.districts_per_warehouse));
  in.by_name = rng.Percent(config_.by_last_name_percent);
  if (in.by_name) {
    in.last_num = LastNameNumberRun(rng);
  } else {
    in.c = CustomerIdRun(rng);
  }
  return in;
}

TxnOutcome Tpcc::RunOrderStatus(WorkerContext& ctx, const TpccOrderStatusInput& in, bool check) {
  Thread& st = static_cast<Thread&>(*ctx.state);
  const uint32_t w = in.w, d = in.d;
  char last[16];
  const size_t last_len = in.by_name ? LastName(in.last_num, last) : 0;
  bool stale = false;

  return NewestReads(ctx, check, [&] {
    return Stale(RunTxn(ctx, kOrderStatus, /*read_only=*/true, [&](Transaction& txn, bool*) -> Status {
      stale = false;
      uint32_t c = in.c;
      if (in.by_name) {
        Status s = FindCustomerByLastName(txn, st, w, d, std::string_view(last, last_len), &c);
        if (!s.ok()) return s;
        if (check && c != in.c) return StaleSet(&stale);
      }
      auto ck = CustomerKey(w, d, c);
      Status s = GetRow(txn, tables_.customer, ck.view(), &st.customer);
      if (!s.ok()) return s;

      uint32_t o = 0;
      s = LatestOrder(txn, w, d, c, &o);
      if (!s.ok()) return s;
      if (check && o != in.o) return StaleSet(&stale);
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
    }), stale);
  });
}

// ---------------------------------------------------------------------------
// Delivery (2.7), all districts in one transaction.

TpccDeliveryInput Tpcc::DrawDelivery(WorkerContext& ctx) {
  Thread& st = static_cast<Thread&>(*ctx.state);
  TpccDeliveryInput in;
  in.w = st.home_w;
  in.carrier = static_cast<uint8_t>(ctx.rng.UniformInt(1, 10));
  in.now = TpccNow();
  return in;
}

TxnOutcome Tpcc::RunDelivery(WorkerContext& ctx, const TpccDeliveryInput& in, bool check) {
  Thread& st = static_cast<Thread&>(*ctx.state);
  const uint32_t w = in.w;
  const uint32_t D = config_.districts_per_warehouse;
  std::array<uint32_t, 256> delivered{};  // per district: the o_id delivered, 0 = none
  bool stale = false;

  TxnOutcome out = Stale(RunTxn(ctx, kDelivery, /*read_only=*/false, [&](Transaction& txn, bool*) -> Status {
    stale = false;
    for (uint32_t d = 1; d <= D; ++d) {
      delivered[d] = 0;
      // The oldest undelivered order of the district.
      uint32_t o = 0;
      Status s = OldestNewOrder(txn, w, d, st.delivery_hint[d], &o);
      if (!s.ok()) return s;
      if (check && o != in.o[d]) return StaleSet(&stale);
      if (o == 0) continue;  // none: this district is skipped (2.7.4.2)
      auto nk = NewOrderKey(w, d, o);
      s = txn.Delete(tables_.new_order, nk.view());
      if (!s.ok()) return NotFoundIsConflict(std::move(s));

      Order ord;
      auto ok = OrderKey(w, d, o);
      s = GetRow(txn, tables_.order, ok.view(), &ord);
      if (!s.ok()) return NotFoundIsConflict(std::move(s));
      if (check && static_cast<uint32_t>(ord.c_id) != in.c[d]) return StaleSet(&stale);
      ord.carrier_id = in.carrier;
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
        line.delivery_d = in.now;
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
  }), stale);
  if (out.committed) {
    // Orders below a delivered one have no new_order row any more, and none
    // is ever inserted there again (o ids grow): later scans start past it.
    for (uint32_t d = 1; d <= D; ++d) {
      if (delivered[d] != 0) st.delivery_hint[d] = delivered[d] + 1;
    }
  }
  return out;
}

// ---------------------------------------------------------------------------
// StockLevel (2.8).

TpccStockLevelInput Tpcc::DrawStockLevel(WorkerContext& ctx) {
  Thread& st = static_cast<Thread&>(*ctx.state);
  TpccStockLevelInput in;
  in.w = st.home_w;
  in.d = static_cast<uint32_t>(ctx.rng.UniformInt(1, config_.districts_per_warehouse));
  in.threshold = static_cast<int32_t>(ctx.rng.UniformInt(10, 20));
  return in;
}

TxnOutcome Tpcc::RunStockLevel(WorkerContext& ctx, const TpccStockLevelInput& in, bool check) {
  Thread& st = static_cast<Thread&>(*ctx.state);
  const uint32_t w = in.w, d = in.d;
  bool stale = false;

  return NewestReads(ctx, check, [&] {
    return Stale(RunTxn(ctx, kStockLevel, /*read_only=*/true, [&](Transaction& txn, bool*) -> Status {
      stale = false;
      // Declared: the 20 orders below the D_NEXT_O_ID its reconnaissance
      // read (Stock-Level needs only committed reads, clause 3.4.1; order lines
      // never change their items), whose items must be the declared ones.
      uint32_t next = in.next_o;
      if (!check) {
        District di;
        auto dk = DistrictKey(w, d);
        Status s = GetRow(txn, tables_.district, dk.view(), &di);
        if (!s.ok()) return s;
        next = static_cast<uint32_t>(di.next_o_id);
      }
      size_t distinct = 0;
      Status s = RecentItems(txn, st, w, d, next, &distinct);
      if (!s.ok()) return s;
      if (check && ItemsDigest(st.items.data(), distinct) != in.items_digest) return StaleSet(&stale);
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
          if (st.stock.quantity < in.threshold) ++low;
        }
      }
      st.sink += low;
      return Status::OK();
    }), stale);
  });
}

}  // namespace rolis::workloads
