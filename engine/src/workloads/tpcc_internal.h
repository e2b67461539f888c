// What tpcc.cc (the transactions) and tpcc_declared.cc (their declared sets
// and reconnaissance) share: the per-thread state and the row helpers.
#pragma once

#include <array>
#include <cstdint>
#include <ctime>
#include <string_view>
#include <vector>

#include "workloads/tpcc.h"
#include "workloads/tpcc_schema.h"

namespace rolis::workloads {

namespace tpcc_internal {

inline constexpr uint32_t kMaxLines = kTpccMaxLines;  // order lines per order
inline constexpr uint32_t kStockLevelOrders = 20;     // StockLevel looks at the last 20 orders
inline constexpr uint32_t kMaxNameMatches = 1024;     // customers of one last name in a district

// The date columns' clock (seconds).
inline uint32_t TpccNow() { return static_cast<uint32_t>(::time(nullptr)); }

// A digest of StockLevel's sorted distinct items: its execution finds the
// items its reconnaissance declared.
inline uint64_t ItemsDigest(const uint32_t* items, size_t n) {
  uint64_t h = 0xcbf29ce484222325ULL ^ n;
  for (size_t i = 0; i < n; ++i) h = (h ^ items[i]) * 0x100000001b3ULL;
  return h;
}

// Reads a row (kNotFound is passed through as is; a row of the wrong size is kInternal).
template <class Row>
Status GetRow(Transaction& txn, Table* table, std::string_view key, Row* row) {
  std::string_view value;
  Status s = txn.GetView(table, key, &value);  // no copy into a string: straight into the row
  if (!s.ok()) return s;
  if (!tpcc::DecodeRow(value, row)) return Status::Internal("tpcc: row of unexpected size");
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
inline Status NotFoundIsConflict(Status s) {
  if (s.IsNotFound()) return Status::Aborted("tpcc: row vanished under a concurrent transaction");
  return s;
}

}  // namespace tpcc_internal

// Per-thread buffers: nothing here is allocated per transaction.
struct Tpcc::Thread : ThreadState {
  uint32_t home_w = 1;
  uint32_t history_seq = 0;  // 4 bytes of the history key (tpcc_schema.h)
  std::vector<uint32_t> delivery_hint;  // per district: no new_order row below this o_id
  // Declared path, per district: the orders below this one are claimed by
  // this thread's Deliveries still queued (tpcc_declared.cc); 0: none.
  std::vector<uint32_t> delivery_claim;
  uint32_t claim_generation = 0;  // advanced when a Delivery of the current one restarts
  std::array<uint32_t, tpcc_internal::kMaxNameMatches> name_ids{};
  size_t name_count = 0;
  std::array<tpcc::OrderLine, tpcc_internal::kMaxLines> lines{};
  std::array<uint8_t, tpcc_internal::kMaxLines> line_numbers{};
  size_t line_count = 0;
  std::array<uint32_t, tpcc_internal::kStockLevelOrders * tpcc_internal::kMaxLines> items{};
  size_t item_count = 0;
  tpcc::Customer customer{};
  tpcc::Stock stock{};
  uint64_t sink = 0;  // results a terminal would display; kept so they are computed
};

}  // namespace rolis::workloads
