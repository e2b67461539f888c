// Accepts and peeks as a leader and a reader send them, for tests of the
// acceptor's answers (peek_test, adopted_slots_test).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "txn_batch.h"
#include "types.h"

namespace rolis::replication::testing {

// Member 2's accept, in `epoch`, of slot `index` of `stream`: one
// transaction at ts index + 1.
inline AcceptMsg Accept(uint64_t epoch, uint32_t stream, uint64_t index) {
  AcceptMsg m;
  m.from = 2;
  m.epoch = epoch;
  m.stream = stream;
  m.slot = Slot{index, epoch, TxnBatch(epoch, index + 1)};
  return m;
}

// Member 3's peek (a Promise that promises nothing) for the slots from
// `from_slot` on (empty: every slot).
inline PromiseMsg Peek(std::vector<uint64_t> from_slot) {
  PromiseMsg m;
  m.from = 3;
  m.peek = true;
  m.from_slot = std::move(from_slot);
  return m;
}

}  // namespace rolis::replication::testing
