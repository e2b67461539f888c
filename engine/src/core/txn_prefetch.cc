// TxnImpl::Prefetch: a transaction's keys looked up as groups.
//
// A transaction that knows several keys before it reads the first (TPC-C's
// NewOrder knows its items and stocks, a server request its ops) would
// otherwise pay their index and record misses one after another, each Get
// waiting on its own descent. BTree::LookupGroupWhole walks up to
// kLookupGroup keys down together, so the group pays about one memory
// round trip per level, and the records found go into the transaction's
// RecentKeys, where the reads and writes that follow look first.
//
// Why a remembered record may be read later: the transaction holds its
// epoch, so the record is not freed; a read-write read of a record that has
// since been unlinked sees `latest` cleared and looks the key up again, as
// any read of a stale pointer does; a snapshot read may use any record the
// index held while the transaction was open (a Get's own lookup could have
// found the same one at that moment).
#include "txn_impl.h"

namespace rolis::core {

void TxnImpl::Prefetch(std::span<const TableKey> keys) {
  if (!usable()) return;
  BTree::GroupProbe* const probes = s_->probes;  // scratch: a local array would be zeroed per call
  uint32_t table_ids[BTree::kLookupGroup];
  size_t next = 0;
  while (next < keys.size()) {
    int n = 0;
    for (; next < keys.size() && n < BTree::kLookupGroup; ++next) {
      const TableKey& tk = keys[next];
      TableImpl* t;
      if (!CheckTableAndKey(tk.table, tk.key, &t).ok()) continue;  // a hint: a bad key is skipped
      probes[n].tree = &t->tree;
      probes[n].key = KeyRef(tk.key);
      table_ids[n] = t->id();
      ++n;
    }
    if (n == 0) break;
    BTree::LookupGroupWhole(probes, n);
    for (int i = 0; i < n; ++i) {
      // Unresolved (a node moved under the walk) or absent: the read that
      // follows descends on its own, and records an absent key's leaf then.
      if (probes[i].rec != nullptr) s_->recent.Remember(table_ids[i], probes[i].key, probes[i].rec);
    }
  }
}

}  // namespace rolis::core
