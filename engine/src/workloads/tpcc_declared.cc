// TPC-C with declared read and write sets, for the lock-based baselines
// (docs/benchmarks.md, "Modes"): Generate draws a transaction's inputs into
// TxnRequest::params and declares its keys; Execute runs it from the params.
//
// Locks are on rows, plus one convention: a district's lock (written by
// NewOrder) covers the orders NewOrder inserts there (ORDER, NEW-ORDER,
// ORDER-LINE, the customer index), and an order's lock covers its lines.
// NewOrder's set follows from its inputs. The others read first to know
// theirs, so a reconnaissance (plain reads of the newest versions, no locks,
// then rolled back) computes it and stores what it read in the params:
//   Payment, OrderStatus by last name: the customer (the name index);
//   OrderStatus: the customer's latest order;
//   Delivery: each district's oldest new order and its customer;
//   StockLevel: D_NEXT_O_ID and the items of the 20 orders below it.
// The execution reads them again; when they differ it rolls back with
// TxnOutcome::set_changed and the runner reconnoitres and resubmits.
//
// A thread keeps many transactions queued under Calvin, Deliveries of its
// warehouse among them. Each would find the same oldest orders and all but
// the first would restart, every epoch: at most one Delivery per warehouse
// per epoch. So a Delivery's reconnaissance starts past the orders the
// thread's earlier Deliveries claimed (Thread::delivery_claim), and every
// Delivery also writes one key per warehouse, which runs them in the order
// they were submitted. When one of them restarts, those before it have run
// and those after it claimed past orders it leaves undelivered: the claims
// start again from the store (a new generation) with its reconnaissance,
// and the Deliveries of the old generation still queued restart once each,
// claiming after it.
#include <algorithm>

#include "workloads/tpcc.h"
#include "workloads/tpcc_internal.h"

namespace rolis::workloads {

using namespace tpcc;           // NOLINT
using namespace tpcc_internal;  // NOLINT

namespace {

// NewOrder's lines, one parameter each.
uint64_t PackLine(const TpccNewOrderInput::Line& l) {
  return uint64_t{l.i_id} | uint64_t{l.supply_w} << 32 | uint64_t{l.quantity} << 48;
}
TpccNewOrderInput::Line UnpackLine(uint64_t v) {
  return {static_cast<uint32_t>(v), static_cast<uint32_t>(v >> 32) & 0xffff, static_cast<uint32_t>(v >> 48)};
}

// Parameter layouts, by type.
enum : uint32_t { kNoHead = 0, kNoC = 1, kNoNow = 2, kNoLines = 3 };
enum : uint32_t { kPayW, kPayD, kPayCW, kPayCD, kPayByName, kPayLast, kPayC, kPayAmount, kPayNow, kPayTag, kPaySeq };
enum : uint32_t { kOsW, kOsD, kOsByName, kOsLast, kOsC, kOsO };
enum : uint32_t { kDlW, kDlCarrier, kDlNow, kDlGeneration, kDlDistricts };  // then (o | c << 32) per district
enum : uint32_t { kSlW, kSlD, kSlThreshold, kSlNext, kSlDigest };

// Runs `read` in a transaction that is rolled back (plain reads, no locks,
// nothing validated); retried while it meets a conflict.
template <class Fn>
void Reconnaissance(WorkerContext& ctx, Fn&& read) {
  for (uint32_t attempt = 0; attempt < 100; ++attempt) {
    std::unique_ptr<Transaction> txn = ctx.worker->Begin();
    Status s = read(*txn);
    txn->Abort();
    if (!s.IsAborted()) return;
    BackoffAfterAbort(ctx.rng, attempt);
  }
}

}  // namespace

void Tpcc::Generate(WorkerContext& ctx, TxnRequest* req) {
  uint32_t x = static_cast<uint32_t>(ctx.rng.Uniform(100));
  const uint32_t* mix = config_.mix;
  if (x < mix[0]) {
    const TpccNewOrderInput in = DrawNewOrder(ctx);
    req->Reset(kNewOrder, false);
    req->Param(uint64_t{in.w} | uint64_t{in.d} << 16 | uint64_t{in.ol_cnt} << 24 | uint64_t{in.all_local} << 32);
    req->Param(in.c);
    req->Param(in.now);
    for (uint32_t i = 0; i < in.ol_cnt; ++i) req->Param(PackLine(in.lines[i]));
  } else if ((x -= mix[0]) < mix[1]) {
    const TpccPaymentInput in = DrawPayment(ctx);
    req->Reset(kPayment, false);
    for (uint64_t v : {uint64_t{in.w}, uint64_t{in.d}, uint64_t{in.c_w}, uint64_t{in.c_d}, uint64_t{in.by_name},
                       uint64_t{in.last_num}, uint64_t{in.c}, static_cast<uint64_t>(in.amount), uint64_t{in.now},
                       uint64_t{in.tag}, uint64_t{in.seq}}) {
      req->Param(v);
    }
  } else if ((x -= mix[1]) < mix[2]) {
    const TpccOrderStatusInput in = DrawOrderStatus(ctx);
    req->Reset(kOrderStatus, true);
    for (uint64_t v : {uint64_t{in.w}, uint64_t{in.d}, uint64_t{in.by_name}, uint64_t{in.last_num}, uint64_t{in.c},
                       uint64_t{0}}) {
      req->Param(v);
    }
  } else if ((x -= mix[2]) < mix[3]) {
    const TpccDeliveryInput in = DrawDelivery(ctx);
    req->Reset(kDelivery, false);
    req->Param(in.w);
    req->Param(in.carrier);
    req->Param(in.now);
    req->Param(0);  // the claims' generation
    for (uint32_t d = 1; d <= config_.districts_per_warehouse; ++d) req->Param(0);
  } else {
    const TpccStockLevelInput in = DrawStockLevel(ctx);
    req->Reset(kStockLevel, true);
    for (uint64_t v : {uint64_t{in.w}, uint64_t{in.d}, static_cast<uint64_t>(static_cast<int64_t>(in.threshold)),
                       uint64_t{0}, uint64_t{0}}) {
      req->Param(v);
    }
  }
  ReconnoiterSet(ctx, req, /*restart=*/false);
}

void Tpcc::Reconnoiter(WorkerContext& ctx, TxnRequest* req) { ReconnoiterSet(ctx, req, /*restart=*/true); }

void Tpcc::ReconnoiterSet(WorkerContext& ctx, TxnRequest* req, bool restart) {
  Thread& st = static_cast<Thread&>(*ctx.state);
  uint64_t* p = req->params;
  req->keys.clear();
  switch (req->type) {
    case kNewOrder: {
      const uint32_t w = p[kNoHead] & 0xffff, d = (p[kNoHead] >> 16) & 0xff, ol_cnt = (p[kNoHead] >> 24) & 0xff;
      const uint32_t c = static_cast<uint32_t>(p[kNoC]);
      req->Key(tables_.warehouse->id(), WarehouseKey(w).view(), false);
      req->Key(tables_.district->id(), DistrictKey(w, d).view(), true);  // and the order it inserts
      req->Key(tables_.customer->id(), CustomerKey(w, d, c).view(), false);
      for (uint32_t i = 0; i < ol_cnt; ++i) {
        const TpccNewOrderInput::Line l = UnpackLine(p[kNoLines + i]);
        req->Key(tables_.item->id(), ItemKey(l.i_id).view(), false);
        req->Key(tables_.stock->id(), StockKey(l.supply_w, l.i_id).view(), true);
      }
      return;
    }
    case kPayment: {
      const uint32_t w = static_cast<uint32_t>(p[kPayW]), d = static_cast<uint32_t>(p[kPayD]);
      const uint32_t c_w = static_cast<uint32_t>(p[kPayCW]), c_d = static_cast<uint32_t>(p[kPayCD]);
      if (p[kPayByName] != 0) {
        char last[16];
        const std::string_view name(last, LastName(static_cast<uint32_t>(p[kPayLast]), last));
        uint32_t c = 0;
        Reconnaissance(ctx, [&](Transaction& txn) { return FindCustomerByLastName(txn, st, c_w, c_d, name, &c); });
        p[kPayC] = c;
        req->reconnoitred = true;
        req->Key(tables_.customer_name_idx->id(), CustomerNamePrefix(c_w, c_d, name).view(), false);
      }
      req->Key(tables_.warehouse->id(), WarehouseKey(w).view(), true);
      req->Key(tables_.district->id(), DistrictKey(w, d).view(), true);
      req->Key(tables_.customer->id(), CustomerKey(c_w, c_d, static_cast<uint32_t>(p[kPayC])).view(), true);
      req->Key(tables_.history->id(),
               HistoryKey(w, static_cast<uint32_t>(p[kPayTag]), static_cast<uint32_t>(p[kPaySeq])).view(), true);
      return;
    }
    case kOrderStatus: {
      const uint32_t w = static_cast<uint32_t>(p[kOsW]), d = static_cast<uint32_t>(p[kOsD]);
      char last[16];
      const std::string_view name(last, p[kOsByName] != 0 ? LastName(static_cast<uint32_t>(p[kOsLast]), last) : 0);
      uint32_t c = static_cast<uint32_t>(p[kOsC]), o = 0;
      Reconnaissance(ctx, [&](Transaction& txn) {
        if (p[kOsByName] != 0) {
          Status s = FindCustomerByLastName(txn, st, w, d, name, &c);
          if (!s.ok()) return s;
        }
        return LatestOrder(txn, w, d, c, &o);
      });
      p[kOsC] = c;
      p[kOsO] = o;
      req->reconnoitred = true;
      if (p[kOsByName] != 0) req->Key(tables_.customer_name_idx->id(), CustomerNamePrefix(w, d, name).view(), false);
      req->Key(tables_.customer->id(), CustomerKey(w, d, c).view(), false);
      req->Key(tables_.order->id(), OrderKey(w, d, o).view(), false);  // and its lines
      return;
    }
    case kDelivery: {
      const uint32_t w = static_cast<uint32_t>(p[kDlW]);
      const uint32_t D = config_.districts_per_warehouse;
      if (restart && p[kDlGeneration] == st.claim_generation) {
        ++st.claim_generation;
        std::fill(st.delivery_claim.begin(), st.delivery_claim.end(), 0);
      }
      p[kDlGeneration] = st.claim_generation;
      Reconnaissance(ctx, [&](Transaction& txn) -> Status {
        for (uint32_t d = 1; d <= D; ++d) {
          uint32_t o = 0;
          Status s = OldestNewOrder(txn, w, d, std::max(st.delivery_hint[d], st.delivery_claim[d]), &o);
          if (!s.ok()) return s;
          Order ord{};
          if (o != 0) {
            auto ok = OrderKey(w, d, o);
            s = GetRow(txn, tables_.order, ok.view(), &ord);
            if (!s.ok() && !s.IsNotFound()) return s;
          }
          p[kDlDistricts + d - 1] = uint64_t{o} | uint64_t{static_cast<uint32_t>(ord.c_id)} << 32;
        }
        return Status::OK();
      });
      req->reconnoitred = true;
      req->Key(tables_.new_order->id(), WarehouseKey(w).view(), true);  // the warehouse's Deliveries, in order
      for (uint32_t d = 1; d <= D; ++d) {
        const uint32_t o = static_cast<uint32_t>(p[kDlDistricts + d - 1]);
        const uint32_t c = static_cast<uint32_t>(p[kDlDistricts + d - 1] >> 32);
        if (o == 0) continue;
        st.delivery_claim[d] = o + 1;
        req->Key(tables_.new_order->id(), NewOrderKey(w, d, o).view(), true);
        req->Key(tables_.order->id(), OrderKey(w, d, o).view(), true);  // and its lines
        req->Key(tables_.customer->id(), CustomerKey(w, d, c).view(), true);
      }
      return;
    }
    default: {
      const uint32_t w = static_cast<uint32_t>(p[kSlW]), d = static_cast<uint32_t>(p[kSlD]);
      uint32_t next = 0;
      size_t distinct = 0;
      Reconnaissance(ctx, [&](Transaction& txn) -> Status {
        District di{};
        auto dk = DistrictKey(w, d);
        Status s = GetRow(txn, tables_.district, dk.view(), &di);
        if (!s.ok()) return s;
        next = static_cast<uint32_t>(di.next_o_id);
        return RecentItems(txn, st, w, d, next, &distinct);
      });
      p[kSlNext] = next;
      p[kSlDigest] = ItemsDigest(st.items.data(), distinct);
      req->reconnoitred = true;
      for (uint32_t o = next > kStockLevelOrders ? next - kStockLevelOrders : 0; o < next; ++o) {
        req->Key(tables_.order->id(), OrderKey(w, d, o).view(), false);  // and its lines
      }
      for (size_t i = 0; i < distinct; ++i) req->Key(tables_.stock->id(), StockKey(w, st.items[i]).view(), false);
      return;
    }
  }
}

TxnOutcome Tpcc::Execute(WorkerContext& ctx, const TxnRequest& req) {
  const uint64_t* p = req.params;
  switch (req.type) {
    case kNewOrder: {
      TpccNewOrderInput in;
      in.w = p[kNoHead] & 0xffff;
      in.d = (p[kNoHead] >> 16) & 0xff;
      in.ol_cnt = (p[kNoHead] >> 24) & 0xff;
      in.all_local = static_cast<uint8_t>(p[kNoHead] >> 32);
      in.c = static_cast<uint32_t>(p[kNoC]);
      in.now = static_cast<uint32_t>(p[kNoNow]);
      for (uint32_t i = 0; i < in.ol_cnt; ++i) in.lines[i] = UnpackLine(p[kNoLines + i]);
      return RunNewOrder(ctx, in);
    }
    case kPayment: {
      TpccPaymentInput in;
      in.w = static_cast<uint32_t>(p[kPayW]);
      in.d = static_cast<uint32_t>(p[kPayD]);
      in.c_w = static_cast<uint32_t>(p[kPayCW]);
      in.c_d = static_cast<uint32_t>(p[kPayCD]);
      in.by_name = p[kPayByName] != 0;
      in.last_num = static_cast<uint32_t>(p[kPayLast]);
      in.c = static_cast<uint32_t>(p[kPayC]);
      in.amount = static_cast<int64_t>(p[kPayAmount]);
      in.now = static_cast<uint32_t>(p[kPayNow]);
      in.tag = static_cast<uint32_t>(p[kPayTag]);
      in.seq = static_cast<uint32_t>(p[kPaySeq]);
      return RunPayment(ctx, in, /*check=*/true);
    }
    case kOrderStatus: {
      TpccOrderStatusInput in;
      in.w = static_cast<uint32_t>(p[kOsW]);
      in.d = static_cast<uint32_t>(p[kOsD]);
      in.by_name = p[kOsByName] != 0;
      in.last_num = static_cast<uint32_t>(p[kOsLast]);
      in.c = static_cast<uint32_t>(p[kOsC]);
      in.o = static_cast<uint32_t>(p[kOsO]);
      return RunOrderStatus(ctx, in, /*check=*/true);
    }
    case kDelivery: {
      TpccDeliveryInput in;
      in.w = static_cast<uint32_t>(p[kDlW]);
      in.carrier = static_cast<uint8_t>(p[kDlCarrier]);
      in.now = static_cast<uint32_t>(p[kDlNow]);
      for (uint32_t d = 1; d <= config_.districts_per_warehouse; ++d) {
        in.o[d] = static_cast<uint32_t>(p[kDlDistricts + d - 1]);
        in.c[d] = static_cast<uint32_t>(p[kDlDistricts + d - 1] >> 32);
      }
      return RunDelivery(ctx, in, /*check=*/true);
    }
    default: {
      TpccStockLevelInput in;
      in.w = static_cast<uint32_t>(p[kSlW]);
      in.d = static_cast<uint32_t>(p[kSlD]);
      in.threshold = static_cast<int32_t>(static_cast<int64_t>(p[kSlThreshold]));
      in.next_o = static_cast<uint32_t>(p[kSlNext]);
      in.items_digest = p[kSlDigest];
      return RunStockLevel(ctx, in, /*check=*/true);
    }
  }
}

}  // namespace rolis::workloads
