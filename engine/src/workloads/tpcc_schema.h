// TPC-C tables, keys and rows as stored in the engine.
//
// Keys are fixed-width big-endian integers (and zero-padded fixed-width
// strings), so byte order = logical order and range scans work:
//   warehouse          (w)                       -> Warehouse
//   district           (w, d)                    -> District
//   customer           (w, d, c)                 -> Customer
//   customer_name_idx  (w, d, last[16], first[16], c) -> CustomerNameIdx
//                      (c at the end keeps two customers of the same full
//                      name apart; a scan of the (w, d, last) prefix returns
//                      them sorted by first name, as Payment/OrderStatus need)
//   history            (w, worker tag, seq)      -> History
//   new_order          (w, d, o)                 -> NewOrder
//   order              (w, d, o)                 -> Order
//   order_customer_idx (w, d, c, ~o)             -> OrderCustomerIdx
//                      (o inverted: the customer's latest order comes first)
//   order_line         (w, d, o, ol)             -> OrderLine
//   item               (i)                       -> Item
//   stock              (w, i)                    -> Stock
// w and the history tag are 2 bytes; c, o, i and seq 4; d and ol 1. So every
// key of the hot tables (all but the two secondary indexes) is at most 8
// bytes: the index compares those keys as one 64-bit word (core/key.h), with
// no tie-breaking on later bytes. Hence at most 65,535 warehouses, 65,534
// worker threads and 2^32 payments per worker (Tpcc::Load and Payment check).
// Rows are trivially copyable structs stored as their bytes (memcpy); money
// is in cents, rates in 1/10000.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>
#include <type_traits>

#include "workloads/workload.h"

namespace rolis::workloads::tpcc {

inline constexpr const char* kTableNames[] = {
    "warehouse", "district", "customer",   "customer_name_idx", "history", "new_order",
    "order",     "order_customer_idx",     "order_line",        "item",    "stock"};

struct Warehouse {
  int64_t ytd;  // cents
  int32_t tax;  // 1/10000
  char name[10];
  char street_1[20];
  char street_2[20];
  char city[20];
  char state[2];
  char zip[9];
};

struct District {
  int64_t ytd;
  int32_t tax;
  int32_t next_o_id;
  char name[10];
  char street_1[20];
  char street_2[20];
  char city[20];
  char state[2];
  char zip[9];
};

struct Customer {
  int64_t credit_lim;
  int64_t balance;
  int64_t ytd_payment;
  int32_t payment_cnt;
  int32_t delivery_cnt;
  int32_t discount;  // 1/10000
  uint32_t since;
  char first[16];
  char middle[2];
  char last[16];
  char street_1[20];
  char street_2[20];
  char city[20];
  char state[2];
  char zip[9];
  char phone[16];
  char credit[2];  // "GC" or "BC"
  uint16_t data_len;
  char data[500];
};

struct CustomerNameIdx {
  int32_t c_id;
};

struct History {
  int64_t amount;
  int32_t c_id;
  int32_t c_w_id;
  int32_t w_id;
  uint32_t date;
  uint8_t c_d_id;
  uint8_t d_id;
  char data[24];
};

struct NewOrder {
  int32_t o_id;
};

struct Order {
  int32_t c_id;
  uint32_t entry_d;
  uint8_t carrier_id;  // 0 = null (not delivered)
  uint8_t ol_cnt;
  uint8_t all_local;
};

struct OrderCustomerIdx {
  int32_t o_id;
};

struct OrderLine {
  int64_t amount;
  int32_t i_id;
  int32_t supply_w_id;
  uint32_t delivery_d;  // 0 = null
  int32_t quantity;
  char dist_info[24];
};

struct Item {
  int32_t im_id;
  int32_t price;  // cents
  uint8_t data_len;
  char name[24];
  char data[50];
};

struct Stock {
  int32_t quantity;
  int32_t ytd;
  int32_t order_cnt;
  int32_t remote_cnt;
  char dist[10][24];
  uint8_t data_len;
  char data[50];
};

// Row <-> value bytes.
template <class Row>
inline std::string_view RowBytes(const Row& row) {
  static_assert(std::is_trivially_copyable_v<Row>);
  return {reinterpret_cast<const char*>(&row), sizeof(Row)};
}
template <class Row>
inline bool DecodeRow(std::string_view value, Row* row) {
  static_assert(std::is_trivially_copyable_v<Row>);
  if (value.size() != sizeof(Row)) return false;
  std::memcpy(row, value.data(), sizeof(Row));
  return true;
}

// Keys. Each returns a builder whose view() is the key.
using Key = KeyBuilder<48>;

inline constexpr uint32_t kMaxWarehouses = 0xffff;
inline constexpr uint32_t kLoadHistoryTag = 0xffff;  // history key tag of loaded rows (workers use 0..0xfffe)

inline Key WarehouseKey(uint32_t w) { return Key().U16(static_cast<uint16_t>(w)); }
inline Key DistrictKey(uint32_t w, uint32_t d) { return WarehouseKey(w).U8(static_cast<uint8_t>(d)); }
inline Key CustomerKey(uint32_t w, uint32_t d, uint32_t c) { return DistrictKey(w, d).U32(c); }
inline constexpr size_t kNameWidth = 16;
// The (w, d, last) prefix of customer_name_idx; append first and c for a full key.
inline Key CustomerNamePrefix(uint32_t w, uint32_t d, std::string_view last) {
  return DistrictKey(w, d).Padded(last, kNameWidth);
}
inline Key CustomerNameKey(uint32_t w, uint32_t d, std::string_view last, std::string_view first, uint32_t c) {
  return CustomerNamePrefix(w, d, last).Padded(first, kNameWidth).U32(c);
}
inline Key HistoryKey(uint32_t w, uint32_t tag, uint32_t seq) {
  return WarehouseKey(w).U16(static_cast<uint16_t>(tag)).U32(seq);
}
inline Key NewOrderKey(uint32_t w, uint32_t d, uint32_t o) { return DistrictKey(w, d).U32(o); }
inline Key OrderKey(uint32_t w, uint32_t d, uint32_t o) { return DistrictKey(w, d).U32(o); }
inline Key OrderCustomerPrefix(uint32_t w, uint32_t d, uint32_t c) { return DistrictKey(w, d).U32(c); }
inline Key OrderCustomerKey(uint32_t w, uint32_t d, uint32_t c, uint32_t o) {
  return OrderCustomerPrefix(w, d, c).U32(~o);
}
inline Key OrderLineKey(uint32_t w, uint32_t d, uint32_t o, uint32_t ol) {
  return DistrictKey(w, d).U32(o).U8(static_cast<uint8_t>(ol));
}
inline Key ItemKey(uint32_t i) { return Key().U32(i); }
inline Key StockKey(uint32_t w, uint32_t i) { return WarehouseKey(w).U32(i); }

// Field decoders for keys read back from scans (offsets follow the layouts above).
inline constexpr size_t kDistrictKeyBytes = 3;
inline uint32_t NewOrderKeyO(std::string_view k) { return DecodeU32(k.data() + kDistrictKeyBytes); }
inline uint32_t OrderKeyO(std::string_view k) { return DecodeU32(k.data() + kDistrictKeyBytes); }
inline uint32_t OrderLineKeyO(std::string_view k) { return DecodeU32(k.data() + kDistrictKeyBytes); }
inline uint32_t OrderLineKeyOl(std::string_view k) { return static_cast<uint8_t>(k[kDistrictKeyBytes + 4]); }
inline uint32_t OrderCustomerKeyO(std::string_view k) { return ~DecodeU32(k.data() + kDistrictKeyBytes + 4); }

// Length of a zero-padded fixed-width string field.
inline std::string_view FixedString(const char* field, size_t width) {
  size_t n = 0;
  while (n < width && field[n] != 0) ++n;
  return {field, n};
}

}  // namespace rolis::workloads::tpcc
