// The local keys a received snapshot lacks, which a state transfer deletes
// (docs/replication.md, "Members that lose their memory", step (3)): one
// merge walk of a read-only scan of every table against the snapshot's
// writes in (table, key) order, with no set of the snapshot's keys.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "packed_writes.h"
#include "rolis/db.h"

namespace rolis::replication {

// Every key of every table of `db` that `txn` (a read-only transaction)
// sees and `snapshot` has no write of, in (table, key) order, into *stale.
// The snapshot's writes are walked through an index of 8 bytes a write,
// sorted first if they were not added in (table, key) order (*sorted
// says whether it had to be). Returns the first scan error.
Status KeysNotInSnapshot(Database* db, Transaction* txn, const PackedWrites& snapshot,
                         std::vector<std::pair<TableId, std::string>>* stale, bool* sorted = nullptr);

}  // namespace rolis::replication
