// BTree::PrefetchGroup: overlapping the cache misses of several descents.
// A replayed batch applies its writes one at a time, each a random descent
// and a record miss; walking a group of its keys down together issues every
// key's fetch for a level before waiting on any, so the group pays about one
// memory round trip per level instead of one per key per level.
#include "btree.h"

namespace rolis::core {

void BTree::PrefetchGroup(const KeyRef* keys, int n) const {
  if (n > kPrefetchGroup) n = kPrefetchGroup;
  const NodeBase* node[kPrefetchGroup];
  uint64_t ver[kPrefetchGroup];
  int live = 0;
  int idx[kPrefetchGroup];  // positions of keys still descending
  // Same optimistic rules as FindLeaf: start from a stable, unlocked root;
  // follow a non-null child (nodes are never freed); keep it only if the
  // parent still validates after the child's version is read. A key that
  // fails any check is dropped instead of restarted: this is only a hint.
  NodeBase* root = root_.load(std::memory_order_acquire);
  uint64_t rv = root->version.load(std::memory_order_acquire);
  if (IsLocked(rv) || root != root_.load(std::memory_order_acquire)) return;
  for (int i = 0; i < n; i++) {
    node[i] = root;
    ver[i] = rv;
    idx[live++] = i;
  }
  // One level per pass; is_leaf is fixed for a node's life, and every path
  // from one root has the same depth, so the keys reach leaves together.
  while (live > 0 && !node[idx[0]]->is_leaf) {
    const NodeBase* parent[kPrefetchGroup];
    uint64_t pv[kPrefetchGroup];
    int kept = 0;
    for (int j = 0; j < live; j++) {
      const int i = idx[j];
      if (node[i]->is_leaf) continue;
      const Inner* in = static_cast<const Inner*>(node[i]);
      int c = InnerChildIndex(in, ClampCount(Ld(in->count), kInnerCap), keys[i]);
      NodeBase* child = Ld(in->children[c]);
      if (child == nullptr) continue;
      PrefetchNode(child, in->level == 1);
      parent[i] = in;
      pv[i] = ver[i];
      node[i] = child;
      idx[kept++] = i;
    }
    live = kept;
    // Second half of the level, once every fetch of it is issued: the
    // child's version, then the parent re-checked (as FindLeaf does).
    kept = 0;
    for (int j = 0; j < live; j++) {
      const int i = idx[j];
      uint64_t cv = node[i]->version.load(std::memory_order_acquire);
      if (IsLocked(cv) || !Validate(parent[i], pv[i])) continue;
      ver[i] = cv;
      idx[kept++] = i;
    }
    live = kept;
  }
  for (int j = 0; j < live; j++) {
    const int i = idx[j];
    const Leaf* leaf = static_cast<const Leaf*>(node[i]);
    if (!leaf->is_leaf) continue;
    int cnt = ClampCount(Ld(leaf->count), kLeafCap);
    bool exact;
    int pos = LeafLowerBound(leaf, cnt, keys[i], &exact);
    if (!exact) continue;
    Record* r = leaf->rec(pos);
    if (!Validate(leaf, ver[i]) || r == nullptr) continue;
    // A prefetch never faults, and the caller is inside an epoch as for
    // Lookup, so the record is not reclaimed meanwhile either way.
    PrefetchLine(reinterpret_cast<const char*>(r));
  }
}

}  // namespace rolis::core
