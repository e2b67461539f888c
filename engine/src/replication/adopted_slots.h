// The slots a state transfer adopts from the votes it read (docs/replication.md,
// "Members that lose their memory"): per stream, after the snapshot, the
// slot of the highest ballot any of the votes holds.
#pragma once

#include <cstdint>
#include <vector>

#include "types.h"

namespace rolis::replication {

// The log of each of `streams` streams that a member installing `snap`
// starts from, given the promise replies `oks` of a majority. Slots below
// the snapshot's next_slot are left out whether or not a reply carried
// them: a member of an older version ignores from_slot and sends every
// slot.
std::vector<StreamSlots> AdoptedSlots(uint32_t streams, const SnapshotReply& snap,
                                      const std::vector<const PromiseReply*>& oks);

}  // namespace rolis::replication
