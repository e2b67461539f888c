// A small, obviously correct implementation of the engine API (rolis/db.h)
// for the server's tests: one global mutex, buffered writes, optimistic reads
// validated at commit by record versions, scans validated by a per-table
// structure version (coarser than the engine's phantom check: any insert or
// delete in the table aborts a scanning transaction). It lets the server be
// tested without the real engine, with deterministic conflicts.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "rolis/db.h"

namespace rolis::testing {

struct FakeOptions {
  // Like the engine before multi-transaction Workers: a second Begin on a
  // Worker with an open transaction gives a transaction whose every call
  // fails with kFailedPrecondition.
  bool one_txn_per_worker = false;
};

std::unique_ptr<Database> OpenFakeDatabase(const Options& options, FakeOptions fake = {});

}  // namespace rolis::testing
