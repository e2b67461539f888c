// A batch of one transaction (one write of "k") at `ts`, for tests of the
// acceptor and its answers.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "codec.h"

namespace rolis::replication::testing {

inline BatchPtr TxnBatch(uint64_t epoch, uint64_t ts) {
  auto b = std::make_shared<Batch>();
  b->epoch = epoch;
  b->last_ts = ts;
  WriteRecord w{0, "k", "v", false};
  AppendTxn(&b->payload, ts, std::span<const WriteRecord>(&w, 1));
  b->txn_count = 1;
  b->crc = Crc32c(b->payload);
  return b;
}

}  // namespace rolis::replication::testing
