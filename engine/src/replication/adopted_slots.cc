#include "adopted_slots.h"

#include <map>

namespace rolis::replication {

std::vector<StreamSlots> AdoptedSlots(uint32_t streams, const SnapshotReply& snap,
                                      const std::vector<const PromiseReply*>& oks) {
  // Per stream, after the snapshot: the slot of the highest ballot any of
  // the votes holds. The slots below the snapshot's next_slot are not
  // needed, and step 2 does not ask for them: they are chosen and already
  // applied to the store the snapshot was scanned from (a follower replays
  // a slot only once the leader's G has passed it; the leader's own
  // snapshot ends at c_end, below which a majority accepted every slot),
  // and Reset starts this member's log at next_slot with the snapshot's
  // base reach and barrier, which is all a later failover walk reads of
  // them (docs/replication.md, "Members that lose their memory"). Nothing
  // below next_slot is kept, so no vote there could change what this
  // member holds. Slots below it are still skipped here: a member of an
  // older version ignores from_slot and sends every slot.
  std::vector<StreamSlots> adopted(streams);
  for (uint32_t t = 0; t < streams; t++) {
    adopted[t].first_slot = snap.next_slot[t];
    adopted[t].base_key = snap.stream_key[t];
    adopted[t].base_barrier = snap.stream_barrier[t];
    std::map<uint64_t, Slot> best;
    for (const PromiseReply* r : oks) {
      if (t >= r->streams.size()) continue;
      for (const Slot& s : r->streams[t].slots) {
        if (s.index < snap.next_slot[t] || !s.value) continue;
        auto [it, fresh] = best.try_emplace(s.index, s);
        if (!fresh && s.ballot > it->second.ballot) it->second = s;
      }
    }
    for (auto& [i, s] : best) adopted[t].slots.push_back(s);
  }
  return adopted;
}

}  // namespace rolis::replication
