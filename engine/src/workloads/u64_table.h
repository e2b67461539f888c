// Tables of 8-byte big-endian record numbers to 8-byte integer values, shared
// by the small workloads (bank, hash table, Retwis, TPC-A): create and load
// one, read and write a value in a transaction.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "rolis/db.h"
#include "rolis/status.h"
#include "workloads/workload.h"

namespace rolis::workloads {

struct U64Key {
  explicit U64Key(uint64_t record) { StoreBigEndian64(buf, record); }
  std::string_view view() const { return {buf, 8}; }
  char buf[8];
};

inline Status GetU64(Transaction& txn, Table* table, uint64_t record, int64_t* value) {
  std::string_view v;
  Status s = txn.GetView(table, U64Key(record).view(), &v);
  if (!s.ok()) return s;
  *value = 0;
  std::memcpy(value, v.data(), v.size() < 8 ? v.size() : 8);
  return Status::OK();
}

inline Status PutU64(Transaction& txn, Table* table, uint64_t record, int64_t value) {
  return txn.Put(table, U64Key(record).view(), std::string_view(reinterpret_cast<const char*>(&value), 8));
}

// Creates `name` and loads records 0..n-1, each with value `initial`, on `threads` threads.
Status CreateU64Table(Database* db, const char* name, uint64_t n, int64_t initial, uint32_t threads, Table** table);

// Loads records [lo, hi) with value `initial` in one transaction on `worker`
// (one part of a load that a server runs as procedures).
Status LoadU64Range(Worker* worker, Table* table, uint64_t lo, uint64_t hi, int64_t initial);

// The sum of the values of records 0..n-1 in one read-write transaction on a
// Worker registered here (a check after a run).
Status SumU64Table(Database* db, Table* table, uint64_t n, int64_t* sum);

// Up to `count` distinct records drawn by next() (count <= out's size).
template <class Draw>
void DrawDistinct(uint32_t count, uint64_t* out, Draw&& next) {
  for (uint32_t i = 0; i < count; ++i) {
    bool dup;
    do {
      out[i] = next();
      dup = false;
      for (uint32_t j = 0; j < i; ++j) dup |= out[j] == out[i];
    } while (dup);
  }
}

}  // namespace rolis::workloads
