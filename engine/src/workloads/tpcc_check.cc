#include "workloads/tpcc_check.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>

#include "workloads/tpcc_schema.h"

namespace rolis::workloads {

using namespace tpcc;  // NOLINT

namespace {

template <class Row>
Status GetRow(Transaction& txn, Table* table, std::string_view key, Row* row) {
  std::string_view v;
  Status s = txn.GetView(table, key, &v);
  if (!s.ok()) return s;
  if (!DecodeRow(v, row)) return Status::Internal("tpcc check: a row of " + table->name() + " does not decode");
  return Status::OK();
}

Status Fail(uint32_t w, uint32_t d, const std::string& what) {
  return Status::Internal("tpcc check: warehouse " + std::to_string(w) + (d ? " district " + std::to_string(d) : "") +
                          ": " + what);
}

}  // namespace

Status CheckTpccConsistency(Database* db, const Tpcc& tpcc) {
  const TpccTables& t = tpcc.tables();
  const uint32_t D = tpcc.config().districts_per_warehouse;
  std::unique_ptr<Worker> worker = db->RegisterWorker();
  if (!worker) return Status::ResourceExhausted("RegisterWorker failed");
  std::unique_ptr<Transaction> txn = worker->BeginReadOnly();
  struct AbortAtEnd {
    Transaction* t;
    ~AbortAtEnd() { t->Abort(); }
  } abort_at_end{txn.get()};
  for (uint32_t w = 1; w <= tpcc.warehouses(); ++w) {
    Warehouse wh{};
    auto wk = WarehouseKey(w);
    Status s = GetRow(*txn, t.warehouse, wk.view(), &wh);
    if (!s.ok()) return s;
    int64_t sum_d_ytd = 0;
    for (uint32_t d = 1; d <= D; ++d) {
      District di{};
      auto dk = DistrictKey(w, d);
      s = GetRow(*txn, t.district, dk.view(), &di);
      if (!s.ok()) return s;
      sum_d_ytd += di.ytd;
      int64_t max_o = 0, max_no = 0, min_no = std::numeric_limits<int64_t>::max();
      uint64_t sum_ol_cnt = 0, new_orders = 0, order_lines = 0;
      bool bad_row = false;
      auto ob = OrderKey(w, d, 0), oe = OrderKey(w, d + 1, 0);
      s = txn->Scan(t.order, ob.view(), oe.view(), 0, [&](std::string_view k, std::string_view v) {
        Order o{};
        bad_row = bad_row || !DecodeRow(v, &o);
        max_o = std::max<int64_t>(max_o, OrderKeyO(k));
        sum_ol_cnt += o.ol_cnt;
        return true;
      });
      if (!s.ok()) return s;
      auto nb = NewOrderKey(w, d, 0), ne = NewOrderKey(w, d + 1, 0);
      s = txn->Scan(t.new_order, nb.view(), ne.view(), 0, [&](std::string_view k, std::string_view) {
        const int64_t o = NewOrderKeyO(k);
        max_no = std::max(max_no, o);
        min_no = std::min(min_no, o);
        ++new_orders;
        return true;
      });
      if (!s.ok()) return s;
      auto lb = OrderLineKey(w, d, 0, 0), le = OrderLineKey(w, d + 1, 0, 0);
      s = txn->Scan(t.order_line, lb.view(), le.view(), 0, [&](std::string_view, std::string_view) {
        ++order_lines;
        return true;
      });
      if (!s.ok()) return s;
      if (bad_row) return Fail(w, d, "an ORDER row does not decode");
      if (di.next_o_id - 1 != max_o) {
        return Fail(w, d, "condition 2: D_NEXT_O_ID - 1 = " + std::to_string(di.next_o_id - 1) + ", max(O_ID) = " +
                              std::to_string(max_o));
      }
      if (new_orders > 0) {
        if (di.next_o_id - 1 != max_no) {
          return Fail(w, d, "condition 2: D_NEXT_O_ID - 1 = " + std::to_string(di.next_o_id - 1) +
                                ", max(NO_O_ID) = " + std::to_string(max_no));
        }
        if (static_cast<uint64_t>(max_no - min_no + 1) != new_orders) {
          return Fail(w, d, "condition 3: NO_O_ID spans " + std::to_string(max_no - min_no + 1) + " in " +
                                std::to_string(new_orders) + " rows");
        }
      }
      if (sum_ol_cnt != order_lines) {
        return Fail(w, d, "condition 4: sum(O_OL_CNT) = " + std::to_string(sum_ol_cnt) + ", ORDER-LINE rows = " +
                              std::to_string(order_lines));
      }
    }
    if (wh.ytd != sum_d_ytd) {
      return Fail(w, 0, "condition 1: W_YTD = " + std::to_string(wh.ytd) + ", sum(D_YTD) = " +
                            std::to_string(sum_d_ytd));
    }
  }
  return Status::OK();
}

}  // namespace rolis::workloads
