// Helpers shared by the core tests.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <thread>

#include "rolis/db.h"

namespace rolis::testing {

inline std::unique_ptr<Database> OpenDb(uint32_t epoch_ms = 2, CommitHook* hook = nullptr) {
  Options o;
  o.epoch_period_ms = epoch_ms;
  o.commit_hook = hook;
  return Database::Open(o);
}

inline Table* MakeTable(Database* db, const std::string& name) {
  Table* t = nullptr;
  Status s = db->CreateTable(name, &t);
  if (!s.ok()) return nullptr;
  return t;
}

// Waits until read-only snapshots include everything committed before the call.
inline void WaitForSnapshot(Database* db, Worker* w = nullptr) {
  uint64_t target = db->Stats().current_epoch;
  while (db->Stats().snapshot_epoch < target) {
    if (w) w->Quiesce();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

// Runs body(txn) in read-write transactions until one commits.
template <class Body>
inline Status RunRw(Worker* w, Body&& body) {
  for (int attempt = 0; attempt < 100000; ++attempt) {
    auto txn = w->Begin();
    Status s = body(txn.get());
    if (s.ok()) s = txn->Commit();
    if (!s.IsAborted()) return s;
  }
  return Status::Aborted("too many aborts");
}

inline Status PutOne(Worker* w, Table* t, const std::string& k, const std::string& v) {
  return RunRw(w, [&](Transaction* txn) { return txn->Put(t, k, v); });
}

inline std::string KeyU64(uint64_t x) {
  std::string k(8, '\0');
  for (int i = 7; i >= 0; --i) {
    k[static_cast<size_t>(i)] = static_cast<char>(x & 0xff);
    x >>= 8;
  }
  return k;
}

// A 120-byte row of `fill` with `counter` at byte 40: two rows that differ
// in the counter make a short patch (Options::patch_updates).
inline std::string Row(char fill, uint32_t counter) {
  std::string r(120, fill);
  std::memcpy(r.data() + 40, &counter, sizeof counter);
  return r;
}

}  // namespace rolis::testing
