// BTree::LookupGroupWhole: exact lookups of a group of keys for a
// transaction's Prefetch. Like LookupGroup (follower replay), the keys walk
// down together so their misses overlap; unlike it, each step fetches the
// whole child node, as a single descent (FindLeaf) does: the search's lines,
// child pointers and record slots arrive in one round trip, so a level takes
// two passes over the group (follow and fetch; then validate) instead of
// three, and fewer instructions. The transaction reads the records next, so
// their first two lines are fetched into every cache level.
#include "btree.h"

namespace rolis::core {

void BTree::LookupGroupWhole(GroupProbe* p, int n) {
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

  // Inner levels. Keys of shallower trees reach their leaf first and wait
  // there (`stepped` marks the keys that moved).
  const Inner* parent[kLookupGroup];
  bool stepped[kLookupGroup];
  for (;;) {
    bool any = false;
    int kept = 0;
    for (int j = 0; j < m; j++) {  // search, follow, fetch the whole child
      const int i = live[j];
      stepped[i] = !node[i]->is_leaf;
      if (stepped[i]) {
        const Inner* in = static_cast<const Inner*>(node[i]);
        NodeBase* child = Ld(in->children[InnerChildIndex(in, ClampCount(Ld(in->count), kInnerCap), p[i].key)]);
        if (child == nullptr) continue;  // a torn read
        PrefetchNode(child, in->level == 1);
        parent[i] = in;
        node[i] = child;
        any = true;
      }
      live[kept++] = i;
    }
    m = kept;
    if (!any) break;
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

  for (int j = 0; j < m; j++) {
    const int i = live[j];
    const Leaf* leaf = static_cast<const Leaf*>(node[i]);
    bool exact;
    const int pos = LeafLowerBound(leaf, ClampCount(Ld(leaf->count), kLeafCap), p[i].key, &exact);
    Record* r = exact ? leaf->rec(pos) : nullptr;
    if (!Validate(leaf, ver[i]) || (exact && r == nullptr)) continue;
    p[i].rec = r;
    p[i].resolved = true;
    p[i].leaf = const_cast<Leaf*>(leaf);
    p[i].version = ver[i];
    if (r == nullptr) continue;
    // A prefetch never faults, and the caller is inside an epoch, so the
    // record is not freed while it is used.
    PrefetchLine(reinterpret_cast<const char*>(r));
    PrefetchLine(reinterpret_cast<const char*>(r) + 64);
  }
}

}  // namespace rolis::core
