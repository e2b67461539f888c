// Failover planning: steps 2-4 of the failover protocol (docs/replication.md)
// as pure functions over the slots a Prepare quorum returned. No I/O, no
// clocks: the candidate calls PlanFailover with what it gathered, decides the
// returned record, then re-proposes RepropositionFor(...) on every stream.
// The spin model engine/model/failover.pml checks the same rules.
#pragma once

#include <compare>
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

namespace rolis::replication {

// Replication key (epoch, ts), ordered epoch first.
struct LogKey {
  uint64_t epoch = 0;
  uint64_t ts = 0;
  auto operator<=>(const LogKey&) const = default;
};

enum class BatchKind { kTxns, kNoop, kBarrier };

// What the plan needs of a slot's value; the transactions themselves ride
// along opaquely (payload_id lets the caller find them again).
struct SlotValue {
  BatchKind kind = BatchKind::kTxns;
  uint64_t epoch = 0;    // epoch of the leader that created the value
  uint64_t last_ts = 0;  // key of a kTxns batch: (epoch, last_ts)
  uint64_t payload_id = 0;
};

struct AcceptedSlot {
  uint64_t index = 0;
  uint64_t ballot = 0;  // epoch under which it was accepted
  SlotValue value;
};

// The decided record (epoch, V): for every earlier surviving epoch, the
// largest surviving ts.
struct EpochRecord {
  uint64_t epoch = 0;
  std::map<uint64_t, uint64_t> cut;
  bool operator==(const EpochRecord&) const = default;
};

// True if a transaction batch with this key survives under `record`.
bool IsValid(const EpochRecord& record, LogKey key);

// Step 2: per slot, the value of the highest ballot. `replies` holds, per
// replica of the quorum, the slots of one stream. Result sorted by index.
std::vector<AcceptedSlot> MergeByHighestBallot(const std::vector<std::vector<AcceptedSlot>>& replies);

// Step 3: the reach of one stream (slots sorted by index, starting at
// first_slot) under the last decided record. Slots below first_slot were
// compacted: they were replayed, so they are chosen and valid; base_key is
// their reach and base_barrier the epoch of the last barrier among them.
LogKey StreamReach(const std::vector<AcceptedSlot>& merged, uint64_t first_slot, const EpochRecord& decided,
                   LogKey base_key = {}, uint64_t base_barrier = 0);

// Where the walk of one stream starts (the compaction point of the quorum
// member that compacted most, with what its compacted prefix proves).
struct StreamBase {
  uint64_t first_slot = 0;
  LogKey base_key{};
  uint64_t base_barrier = 0;
};

struct FailoverPlan {
  EpochRecord record;  // (new_epoch, V') to decide
  LogKey watermark;    // G'
  // Per stream: the values to re-propose with ballot new_epoch at slots
  // [first_slot, first_slot + size), holes filled with no-ops, then a barrier.
  std::vector<std::vector<AcceptedSlot>> repropose;
};

// Steps 2-4 over all streams. `quorum_replies[r][t]` = replica r's slots of
// stream t. Streams start at `first_slot[t]` (slots below were compacted into
// a snapshot that already reflects the record).
FailoverPlan PlanFailover(uint64_t new_epoch, const EpochRecord& decided,
                          const std::vector<std::vector<std::vector<AcceptedSlot>>>& quorum_replies,
                          const std::vector<uint64_t>& first_slot);
// The same, each stream starting at its base (the compaction point).
FailoverPlan PlanFailoverFrom(uint64_t new_epoch, const EpochRecord& decided,
                              const std::vector<std::vector<std::vector<AcceptedSlot>>>& quorum_replies,
                              const std::vector<StreamBase>& bases);

}  // namespace rolis::replication
