#include "btree.h"

#include <cstring>
#include <new>
#include <string_view>

#include "alloc.h"

namespace rolis::core {
namespace {

Leaf* NewLeaf() {
  void* mem = AllocZeroedAligned(sizeof(Leaf), 64);
  if (!mem) throw std::bad_alloc();
  Leaf* l = new (mem) Leaf();
  l->is_leaf = true;
  for (uint64_t& s : l->s0) s = kPadSlice;
  return l;
}

Inner* NewInner() {
  void* mem = AllocZeroedAligned(sizeof(Inner), 64);
  if (!mem) throw std::bad_alloc();
  Inner* in = new (mem) Inner();
  in->is_leaf = false;
  for (uint64_t& s : in->s0) s = kPadSlice;
  return in;
}

const SepKey* NewSepKey(const char* data, uint32_t len) {
  void* mem = Alloc(sizeof(SepKey) + len);
  if (!mem) throw std::bad_alloc();
  SepKey* s = static_cast<SepKey*>(mem);
  s->len = len;
  std::memcpy(reinterpret_cast<char*>(s + 1), data, len);
  return s;
}

// Full bytes of the key at slot i of a locked leaf.
std::string_view LeafKey(const Leaf* l, int i) { return l->rec(i)->key(); }

}  // namespace

BTree::BTree() { root_.store(NewLeaf(), std::memory_order_release); }

BTree::~BTree() { FreeSubtree(root_.load(std::memory_order_acquire)); }

void BTree::FreeSubtree(NodeBase* n) {
  if (!n->is_leaf) {
    Inner* in = static_cast<Inner*>(n);
    for (int i = 0; i <= in->count; ++i) FreeSubtree(in->children[i]);
    for (int i = 0; i < in->count; ++i) {
      if (in->full[i]) Free(const_cast<SepKey*>(in->full[i]));
    }
  }
  Free(n);
}

Leaf* BTree::FindLeaf(const KeyRef& k, uint64_t* out_version) const {
restart:
  NodeBase* node = root_.load(std::memory_order_acquire);
  uint64_t v = node->version.load(std::memory_order_acquire);
  if (IsLocked(v) || node != root_.load(std::memory_order_acquire)) {
    CpuRelax();
    goto restart;
  }
  while (!node->is_leaf) {
    const Inner* in = static_cast<const Inner*>(node);
    int idx = InnerChildIndex(in, ClampCount(Ld(in->count), kInnerCap), k);
    NodeBase* child = Ld(in->children[idx]);
    // Any non-null child pointer is safe to follow (nodes are never freed);
    // checking the parent after reading the child's version proves it was
    // the right child at that moment.
    if (child == nullptr) goto restart;
    PrefetchNode(child, in->level == 1);
    uint64_t cv = child->version.load(std::memory_order_acquire);
    if (IsLocked(cv) || !Validate(in, v)) {
      CpuRelax();
      goto restart;
    }
    node = child;
    v = cv;
  }
  *out_version = v;
  return static_cast<Leaf*>(node);
}

BTree::LookupResult BTree::Lookup(const KeyRef& k) const {
  for (;;) {
    uint64_t v;
    Leaf* leaf = FindLeaf(k, &v);
    int n = ClampCount(Ld(leaf->count), kLeafCap);
    bool exact;
    int pos = LeafLowerBound(leaf, n, k, &exact);
    Record* r = exact ? leaf->rec(pos) : nullptr;
    if (!Validate(leaf, v)) continue;
    return {r, leaf, v};
  }
}

void BTree::InsertAtLocked(Leaf* leaf, int n, int pos, const KeyRef& k, Record* rec) {
  for (int i = n; i > pos; --i) {
    St(leaf->s0[i], leaf->s0[i - 1]);
    St(leaf->slots[i].s1, leaf->slots[i - 1].s1);
    St(leaf->slots[i].tagged, leaf->slots[i - 1].tagged);
  }
  St(leaf->s0[pos], k.s0);
  St(leaf->slots[pos].s1, k.s1);
  St(leaf->slots[pos].tagged, TagRecord(rec, k.len));
  St(leaf->count, n + 1);
}

bool BTree::InsertIntoLeaf(Leaf* leaf, uint64_t* version, const KeyRef& k, Record* rec) {
  // Read optimistically; the upgrade fails if the leaf moved since
  // *version, and then n and pos may be torn but are not used.
  const int n = ClampCount(Ld(leaf->count), kLeafCap);
  if (n == kLeafCap) return false;
  bool exact;
  const int pos = LeafLowerBound(leaf, n, k, &exact);
  if (exact || !TryUpgrade(leaf, *version)) return false;
  InsertAtLocked(leaf, n, pos, k, rec);
  UnlockNode(leaf);
  *version += 4;  // the lock's 2 and the unlock's 2 (NodeBase::version)
  return true;
}

bool BTree::Remove(const KeyRef& k, const Record* expected) {
  for (;;) {
    uint64_t v;
    Leaf* leaf = FindLeaf(k, &v);
    int n = ClampCount(Ld(leaf->count), kLeafCap);
    bool exact;
    int pos = LeafLowerBound(leaf, n, k, &exact);
    if (!exact || leaf->rec(pos) != expected) {
      if (!Validate(leaf, v)) continue;
      return false;
    }
    if (!TryUpgrade(leaf, v)) continue;
    for (int i = pos; i + 1 < n; ++i) {
      St(leaf->s0[i], leaf->s0[i + 1]);
      St(leaf->slots[i].s1, leaf->slots[i + 1].s1);
      St(leaf->slots[i].tagged, leaf->slots[i + 1].tagged);
    }
    St(leaf->s0[n - 1], kPadSlice);
    St(leaf->slots[n - 1].tagged, uint64_t{0});
    St(leaf->count, n - 1);
    UnlockNode(leaf);
    return true;
  }
}

Leaf* BTree::SplitLeafLocked(Leaf* leaf, Inner* parent, bool append) {
  int n = leaf->count;
  int half = append ? n - 1 : n / 2;
  Leaf* nl = NewLeaf();
  for (int i = half; i < n; ++i) {
    nl->s0[i - half] = leaf->s0[i];
    nl->slots[i - half] = leaf->slots[i];
  }
  nl->count = static_cast<uint16_t>(n - half);
  nl->next = leaf->next;

  // Shortest separator s with left max < s <= right min: the right min's
  // prefix one byte past the common prefix.
  std::string_view a = LeafKey(leaf, half - 1), b = LeafKey(leaf, half);
  size_t m = std::min(a.size(), b.size()), lcp = 0;
  while (lcp < m && a[lcp] == b[lcp]) ++lcp;
  uint32_t slen = static_cast<uint32_t>(lcp + 1);
  Sep sep{SliceAt(b.data(), slen, 0), SliceAt(b.data(), slen, 8), static_cast<uint16_t>(slen),
          slen > kInlineKeyBytes ? NewSepKey(b.data(), slen) : nullptr};

  St(leaf->next, nl);
  for (int i = half; i < n; ++i) {
    St(leaf->s0[i], kPadSlice);
    St(leaf->slots[i].tagged, uint64_t{0});
  }
  St(leaf->count, half);
  if (parent) {
    AddChildLocked(parent, leaf, sep, nl);
  } else {
    NewRootLocked(leaf, sep, nl);
  }
  return nl;
}

void BTree::SplitInnerLocked(Inner* in, Inner* parent, bool append) {
  int n = in->count;
  int mid = append ? n - 1 : n / 2;
  Inner* ni = NewInner();
  ni->level = in->level;
  for (int i = mid + 1; i < n; ++i) {
    ni->s0[i - mid - 1] = in->s0[i];
    ni->s1[i - mid - 1] = in->s1[i];
    ni->lens[i - mid - 1] = in->lens[i];
    ni->full[i - mid - 1] = in->full[i];
  }
  for (int i = mid + 1; i <= n; ++i) ni->children[i - mid - 1] = in->children[i];
  ni->count = static_cast<uint16_t>(n - mid - 1);
  Sep up{in->s0[mid], in->s1[mid], in->lens[mid], in->full[mid]};
  St(in->count, mid);
  for (int i = mid; i < n; ++i) {
    St(in->s0[i], kPadSlice);
    St(in->full[i], nullptr);
    St(in->lens[i], 0);
  }
  if (parent) {
    AddChildLocked(parent, in, up, ni);
  } else {
    NewRootLocked(in, up, ni);
  }
}

void BTree::AddChildLocked(Inner* parent, NodeBase* left, const Sep& sep, NodeBase* right) {
  int n = parent->count;
  int j = 0;
  while (j <= n && parent->children[j] != left) ++j;
  for (int i = n; i > j; --i) {
    St(parent->s0[i], parent->s0[i - 1]);
    St(parent->s1[i], parent->s1[i - 1]);
    St(parent->lens[i], parent->lens[i - 1]);
    St(parent->full[i], parent->full[i - 1]);
    St(parent->children[i + 1], parent->children[i]);
  }
  St(parent->s0[j], sep.s0);
  St(parent->s1[j], sep.s1);
  St(parent->lens[j], sep.len);
  St(parent->full[j], sep.full);
  St(parent->children[j + 1], right);
  St(parent->count, n + 1);
}

void BTree::NewRootLocked(NodeBase* left, const Sep& sep, NodeBase* right) {
  Inner* r = NewInner();
  r->level = static_cast<uint8_t>(left->level + 1);
  r->s0[0] = sep.s0;
  r->s1[0] = sep.s1;
  r->lens[0] = sep.len;
  r->full[0] = sep.full;
  r->children[0] = left;
  r->children[1] = right;
  r->count = 1;
  root_.store(r, std::memory_order_release);
}

namespace {

std::string SepBytes(const Inner* in, int i) {
  if (in->full[i]) return std::string(in->full[i]->data(), in->full[i]->len);
  char buf[16];
  uint64_t a = __builtin_bswap64(in->s0[i]), b = __builtin_bswap64(in->s1[i]);
  std::memcpy(buf, &a, 8);
  std::memcpy(buf + 8, &b, 8);
  return std::string(buf, in->lens[i]);
}

// The fixed-step search relies on s0[count .. cap) holding kPadSlice.
bool PaddedFrom(const uint64_t* s0, int count, int cap) {
  for (int i = count; i < cap; ++i) {
    if (s0[i] != kPadSlice) return false;
  }
  return true;
}

// Checks that every key under n lies in [lo, hi) (empty optional bounds).
bool CheckNode(const NodeBase* n, const std::string* lo, const std::string* hi, std::string* why) {
  if (n->is_leaf) {
    const Leaf* l = static_cast<const Leaf*>(n);
    for (int i = 0; i < l->count; ++i) {
      std::string_view k = l->rec(i)->key();
      KeyRef kr(k);
      if (l->s0[i] != kr.s0 || l->slots[i].s1 != kr.s1 || UntagLen(l->slots[i].tagged) != kr.len) {
        *why = "leaf slot does not match its record's key";
        return false;
      }
      if (i > 0 && CompareKeys(l->rec(i - 1)->key(), k) >= 0) {
        *why = "leaf keys not strictly sorted";
        return false;
      }
      if ((lo && CompareKeys(k, *lo) < 0) || (hi && CompareKeys(k, *hi) >= 0)) {
        *why = "leaf key outside its parent's separators";
        return false;
      }
    }
    if (!PaddedFrom(l->s0, l->count, kLeafCap)) {
      *why = "leaf slice slot past count is not padding";
      return false;
    }
    return true;
  }
  const Inner* in = static_cast<const Inner*>(n);
  if (!PaddedFrom(in->s0, in->count, kInnerCap)) {
    *why = "inner slice slot past count is not padding";
    return false;
  }
  for (int i = 0; i <= in->count; ++i) {
    std::string l = i > 0 ? SepBytes(in, i - 1) : std::string();
    std::string h = i < in->count ? SepBytes(in, i) : std::string();
    if (!CheckNode(in->children[i], i > 0 ? &l : lo, i < in->count ? &h : hi, why)) return false;
  }
  return true;
}

}  // namespace

bool BTree::CheckInvariantsUnsafe(std::string* why) const {
  const NodeBase* root = root_.load(std::memory_order_acquire);
  if (!CheckNode(root, nullptr, nullptr, why)) return false;
  // The leaf chain visits keys in strictly increasing order.
  const NodeBase* n = root;
  while (!n->is_leaf) n = static_cast<const Inner*>(n)->children[0];
  const Record* prev = nullptr;
  for (const Leaf* l = static_cast<const Leaf*>(n); l; l = l->next) {
    for (int i = 0; i < l->count; ++i) {
      if (prev && CompareKeys(prev->key(), l->rec(i)->key()) >= 0) {
        *why = "leaf chain out of order";
        return false;
      }
      prev = l->rec(i);
    }
  }
  return true;
}

}  // namespace rolis::core
