#include "stale_keys.h"

#include <algorithm>
#include <string_view>

namespace rolis::replication {

Status KeysNotInSnapshot(Database* db, Transaction* txn, const PackedWrites& snapshot,
                         std::vector<std::pair<TableId, std::string>>* stale, bool* sorted) {
  std::vector<PackedWrites::Ref> order = snapshot.Refs();
  if (sorted) *sorted = !snapshot.in_scan_order();
  if (!snapshot.in_scan_order()) {
    std::sort(order.begin(), order.end(), [&](PackedWrites::Ref a, PackedWrites::Ref b) {
      const PackedWrites::Record ra = snapshot.At(a), rb = snapshot.At(b);
      return InScanOrder(ra.table, ra.key, rb.table, rb.key);
    });
  }
  size_t next = 0;  // the first snapshot write not below the local key being walked
  for (TableId id = 0;; id++) {
    Table* table = nullptr;
    if (!db->GetTable(id, &table).ok()) break;
    Status s = txn->Scan(table, "", "", 0, [&](std::string_view k, std::string_view) {
      PackedWrites::Record r;
      while (next < order.size() && InScanOrder((r = snapshot.At(order[next])).table, r.key, id, k)) next++;
      if (next == order.size() || (r = snapshot.At(order[next])).table != id || r.key != k) {
        stale->push_back({id, std::string(k)});
      }
      return true;
    });
    if (!s.ok()) return s;
  }
  return Status::OK();
}

}  // namespace rolis::replication
