// Exact lookups of a group of keys, walked down together so the group's
// misses overlap: each step issues every key's fetch before waiting on any,
// so the group pays about one memory round trip per step instead of one per
// key. Two walks share the start, the validation and the leaf:
//
// BTree::LookupGroup, for follower replay (a replayed write is a random
// descent and a record miss). Each step fetches only what the next search
// reads: a node's header and first slices, then the one child pointer or
// record slot the search picked, then the record's first line. The slot and
// record lines are fetched with a non-temporal hint (PrefetchLineOnce):
// replay touches them once, so they should leave the outer caches to the
// worker of a leader that shares the host (docs/benchmarks.md, "Follower
// replay in groups"). Inner nodes and leaf headers, hot across writes,
// are fetched as usual.
//
// BTree::LookupGroupWhole, for a transaction's Prefetch. Each step fetches
// the whole child node, as a single descent (FindLeaf) does: search lines,
// child pointers and slots arrive in one round trip, so a level takes two
// passes over the group (follow and fetch; validate) instead of three. The
// transaction reads the records next: their first two lines are fetched
// into every cache level.
#include "btree.h"

namespace rolis::core {
namespace {

// Keeps, of live[0..m), the keys whose step down validated: the child's
// version unlocked, then the parent unchanged since its own version was
// read (as FindLeaf). Keys that did not step (`stepped` false: already at a
// leaf) stay as they are. Returns how many are kept.
int KeepValidatedSteps(int m, int* live, const bool* stepped, const NodeBase* const* node, const Inner* const* parent,
                       uint64_t* ver) {
  int kept = 0;
  for (int j = 0; j < m; j++) {
    const int i = live[j];
    if (stepped[i]) {
      const uint64_t cv = node[i]->version.load(std::memory_order_acquire);
      if (IsLocked(cv) || !Validate(parent[i], ver[i])) continue;
      ver[i] = cv;
    }
    live[kept++] = i;
  }
  return kept;
}

// The probe's answer once its leaf search is done: the record (or its
// absence) at that leaf and version, if the leaf still validates. Returns
// the record found (null when absent or unresolved).
Record* ResolveAtLeaf(BTree::GroupProbe& p, const Leaf* leaf, uint64_t ver, int pos, bool exact) {
  Record* r = exact ? leaf->rec(pos) : nullptr;
  if (!Validate(leaf, ver) || (exact && r == nullptr)) return nullptr;
  p.rec = r;
  p.resolved = true;
  p.leaf = const_cast<Leaf*>(leaf);
  p.version = ver;
  return r;
}

}  // namespace

// Same optimistic rules as FindLeaf: a stable, unlocked root; a non-null
// child (nodes are never freed); a child kept only if its parent still
// validates after the child's version is read. A key that fails a check
// stays unresolved and the caller looks it up on its own.
int BTree::StartGroup(GroupProbe* p, int n, const NodeBase** node, uint64_t* ver, int* live) {
  int m = 0;
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
  return m;
}

void BTree::LookupGroup(GroupProbe* p, int n) {
  if (n > kLookupGroup) n = kLookupGroup;
  const NodeBase* node[kLookupGroup];
  uint64_t ver[kLookupGroup];
  int live[kLookupGroup];  // keys still walking
  int m = StartGroup(p, n, node, ver, live);

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
    m = KeepValidatedSteps(kept, live, stepped, node, parent, ver);
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
    // A prefetch never faults, and the caller is inside an epoch, so the
    // record is not freed while it is used.
    if (Record* r = ResolveAtLeaf(p[i], leaf, ver[i], pos, exact)) PrefetchLineOnce(reinterpret_cast<const char*>(r));
  }
}

void BTree::LookupGroupWhole(GroupProbe* p, int n) {
  if (n > kLookupGroup) n = kLookupGroup;
  const NodeBase* node[kLookupGroup];
  uint64_t ver[kLookupGroup];
  int live[kLookupGroup];  // keys still walking
  int m = StartGroup(p, n, node, ver, live);

  // Inner levels, two passes each (shallower trees wait at their leaf).
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
    m = kept;  // without the keys whose child read torn
    if (!any) break;
    m = KeepValidatedSteps(m, live, stepped, node, parent, ver);
  }

  for (int j = 0; j < m; j++) {
    const int i = live[j];
    const Leaf* leaf = static_cast<const Leaf*>(node[i]);
    bool exact;
    const int pos = LeafLowerBound(leaf, ClampCount(Ld(leaf->count), kLeafCap), p[i].key, &exact);
    if (Record* r = ResolveAtLeaf(p[i], leaf, ver[i], pos, exact)) {
      PrefetchLine(reinterpret_cast<const char*>(r));
      PrefetchLine(reinterpret_cast<const char*>(r) + 64);
    }
  }
}

}  // namespace rolis::core
