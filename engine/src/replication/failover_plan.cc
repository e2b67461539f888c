#include "failover_plan.h"

#include <algorithm>

namespace rolis::replication {

bool IsValid(const EpochRecord& record, LogKey key) {
  if (key.epoch == record.epoch) return true;
  auto it = record.cut.find(key.epoch);
  return key.epoch < record.epoch && it != record.cut.end() && key.ts <= it->second;
}

std::vector<AcceptedSlot> MergeByHighestBallot(const std::vector<std::vector<AcceptedSlot>>& replies) {
  std::map<uint64_t, AcceptedSlot> best;
  for (const auto& reply : replies) {
    for (const auto& slot : reply) {
      auto [it, inserted] = best.try_emplace(slot.index, slot);
      if (!inserted && slot.ballot > it->second.ballot) it->second = slot;
    }
  }
  std::vector<AcceptedSlot> merged;
  merged.reserve(best.size());
  for (auto& [index, slot] : best) merged.push_back(slot);
  return merged;
}

LogKey StreamReach(const std::vector<AcceptedSlot>& merged, uint64_t first_slot, const EpochRecord& decided,
                   LogKey base_key, uint64_t base_barrier) {
  LogKey reach = base_key;
  uint64_t barrier_epoch = base_barrier;  // epoch of the last barrier passed
  uint64_t expected = first_slot;
  for (const auto& slot : merged) {
    if (slot.index < first_slot) continue;
    if (slot.index != expected) break;    // a hole
    if (slot.ballot < barrier_epoch) break;  // stale: that barrier's leader never wrote it
    ++expected;
    const SlotValue& v = slot.value;
    if (v.kind == BatchKind::kNoop) continue;
    if (v.kind == BatchKind::kBarrier) {
      barrier_epoch = v.epoch;
      continue;
    }
    LogKey key{v.epoch, v.last_ts};
    if (IsValid(decided, key)) {
      reach = std::max(reach, key);
    } else if (auto it = decided.cut.find(v.epoch); v.epoch < decided.epoch && it != decided.cut.end()) {
      // Voided by the cut, but it proves the stream held all of its epoch up to the cut.
      reach = std::max(reach, LogKey{v.epoch, it->second});
    }
    // Epochs that did not survive at all (or newer than the record: the
    // compare-and-set will fail) neither count nor stop the walk.
  }
  return reach;
}

namespace {

// V' = V_c plus e_c, cut at G'.
std::map<uint64_t, uint64_t> CutAt(const EpochRecord& decided, LogKey watermark) {
  std::map<uint64_t, uint64_t> cut = decided.cut;
  cut[decided.epoch] = UINT64_MAX;
  for (auto it = cut.begin(); it != cut.end();) {
    if (it->first > watermark.epoch) {
      it = cut.erase(it);
      continue;
    }
    if (it->first == watermark.epoch) it->second = std::min(it->second, watermark.ts);
    ++it;
  }
  return cut;
}

std::vector<AcceptedSlot> Reproposition(const std::vector<AcceptedSlot>& merged, uint64_t first_slot,
                                        uint64_t new_epoch) {
  std::vector<AcceptedSlot> out;
  uint64_t next = first_slot;
  for (const auto& slot : merged) {
    if (slot.index < first_slot) continue;
    for (; next < slot.index; ++next) {  // a hole: no majority accepted anything here
      out.push_back({next, new_epoch, SlotValue{BatchKind::kNoop, new_epoch, 0, 0}});
    }
    out.push_back({slot.index, new_epoch, slot.value});  // as found
    next = slot.index + 1;
  }
  out.push_back({next, new_epoch, SlotValue{BatchKind::kBarrier, new_epoch, 0, 0}});
  return out;
}

}  // namespace

FailoverPlan PlanFailover(uint64_t new_epoch, const EpochRecord& decided,
                          const std::vector<std::vector<std::vector<AcceptedSlot>>>& quorum_replies,
                          const std::vector<uint64_t>& first_slot) {
  std::vector<StreamBase> bases(first_slot.size());
  for (size_t t = 0; t < first_slot.size(); ++t) bases[t].first_slot = first_slot[t];
  return PlanFailoverFrom(new_epoch, decided, quorum_replies, bases);
}

FailoverPlan PlanFailoverFrom(uint64_t new_epoch, const EpochRecord& decided,
                              const std::vector<std::vector<std::vector<AcceptedSlot>>>& quorum_replies,
                              const std::vector<StreamBase>& bases) {
  const size_t streams = bases.size();
  FailoverPlan plan;
  plan.repropose.resize(streams);
  std::optional<LogKey> watermark;
  for (size_t t = 0; t < streams; ++t) {
    std::vector<std::vector<AcceptedSlot>> per_replica;
    for (const auto& reply : quorum_replies) {
      if (t < reply.size()) per_replica.push_back(reply[t]);
    }
    std::vector<AcceptedSlot> merged = MergeByHighestBallot(per_replica);
    LogKey reach = StreamReach(merged, bases[t].first_slot, decided, bases[t].base_key, bases[t].base_barrier);
    watermark = watermark ? std::min(*watermark, reach) : reach;
    plan.repropose[t] = Reproposition(merged, bases[t].first_slot, new_epoch);
  }
  plan.watermark = watermark.value_or(LogKey{});
  plan.record.epoch = new_epoch;
  plan.record.cut = CutAt(decided, plan.watermark);
  return plan;
}

}  // namespace rolis::replication
