// BTree::LookupGroup: exact lookups of a group of keys for follower replay.
// A replayed write is memory bound (a random descent and a record miss);
// walking a group of keys down together issues every key's fetch for a
// step before waiting on any, so the group pays about one memory round
// trip per step instead of one per key. Each step fetches only what the
// next search reads: a node's header and first slices, then the one child
// pointer or record slot the search picked, then the record's first line.
// The slot and record lines are fetched with a non-temporal hint
// (PrefetchLineOnce): replay touches them once, so they should leave the
// outer caches to the worker of a leader that shares the host
// (docs/benchmarks.md, session of 2026-11-26 13:35 UTC). Inner nodes and
// leaf headers, hot across writes, are fetched as usual.
#include "btree.h"

namespace rolis::core {

void BTree::LookupGroup(GroupProbe* p, int n) {
  if (n > kLookupGroup) n = kLookupGroup;
  const NodeBase* node[kLookupGroup];
  uint64_t ver[kLookupGroup];
  int live[kLookupGroup];  // keys still walking
  int m = 0;
  // Same optimistic rules as FindLeaf: a stable, unlocked root; a non-null
  // child (nodes are never freed); a child kept only if its parent still
  // validates after the child's version is read. A key that fails a check
  // stays unresolved and the caller looks it up on its own.
  for (int i = 0; i < n; i++) {
    p[i].rec = nullptr;
    p[i].resolved = false;
    p[i].leaf = nullptr;
    p[i].version = 0;
    const std::atomic<NodeBase*>& root_ptr = p[i].tree->root_;
    NodeBase* root = root_ptr.load(std::memory_order_acquire);
    uint64_t v = root->version.load(std::memory_order_acquire);
    if (IsLocked(v) || root != root_ptr.load(std::memory_order_acquire)) continue;
    node[i] = root;
    ver[i] = v;
    live[m++] = i;
  }

  // Inner levels, three passes each. Keys of shallower trees reach their
  // leaf first and wait there (`stepped` marks the keys that moved).
  NodeBase* const* child_slot[kLookupGroup];
  const Inner* parent[kLookupGroup];
  bool stepped[kLookupGroup];
  for (;;) {
    bool any = false;
    for (int j = 0; j < m; j++) {  // search, fetch the chosen child pointer
      const int i = live[j];
      stepped[i] = !node[i]->is_leaf;
      if (!stepped[i]) continue;
      const Inner* in = static_cast<const Inner*>(node[i]);
      const int c = InnerChildIndex(in, ClampCount(Ld(in->count), kInnerCap), p[i].key);
      child_slot[i] = &in->children[c];
      PrefetchLine(reinterpret_cast<const char*>(child_slot[i]));
      parent[i] = in;
      any = true;
    }
    if (!any) break;
    int kept = 0;
    for (int j = 0; j < m; j++) {  // follow it, fetch the child's search lines
      const int i = live[j];
      if (stepped[i]) {
        NodeBase* child = Ld(*child_slot[i]);
        if (child == nullptr) continue;  // a torn read
        PrefetchSearchLines(child, parent[i]->level == 1);
        node[i] = child;
      }
      live[kept++] = i;
    }
    m = kept;
    kept = 0;
    for (int j = 0; j < m; j++) {  // the child's version, then the parent re-checked
      const int i = live[j];
      if (stepped[i]) {
        const uint64_t cv = node[i]->version.load(std::memory_order_acquire);
        if (IsLocked(cv) || !Validate(parent[i], ver[i])) continue;
        ver[i] = cv;
      }
      live[kept++] = i;
    }
    m = kept;
  }

  // Leaves: the slice search picks a slot; fetch its line; then finish the
  // search (ties compare the slot), validate, and fetch the record.
  int count[kLookupGroup], lo[kLookupGroup];
  for (int j = 0; j < m; j++) {
    const int i = live[j];
    const Leaf* leaf = static_cast<const Leaf*>(node[i]);
    count[i] = ClampCount(Ld(leaf->count), kLeafCap);
    lo[i] = NodeLowerBound<kLeafCap>(leaf->s0, count[i], p[i].key.s0);
    if (lo[i] < count[i]) PrefetchLineOnce(reinterpret_cast<const char*>(&leaf->slots[lo[i]]));
  }
  for (int j = 0; j < m; j++) {
    const int i = live[j];
    const Leaf* leaf = static_cast<const Leaf*>(node[i]);
    bool exact;
    const int pos = LeafLowerBoundFrom(leaf, count[i], p[i].key, lo[i], &exact);
    Record* r = exact ? leaf->rec(pos) : nullptr;
    if (!Validate(leaf, ver[i]) || (exact && r == nullptr)) continue;
    p[i].rec = r;
    p[i].resolved = true;
    p[i].leaf = const_cast<Leaf*>(leaf);
    p[i].version = ver[i];
    // A prefetch never faults, and the caller is inside an epoch, so the
    // record is not freed while it is used.
    if (r) PrefetchLineOnce(reinterpret_cast<const char*>(r));
  }
}

}  // namespace rolis::core
