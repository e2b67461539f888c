// An ordered, concurrent in-memory index: a B+-tree with optimistic lock
// coupling (Leis et al., "The ART of practical synchronization").
//
// Every node has a version word. Readers take no locks and write nothing
// shared: they read a node's version, read the node, and re-check the
// version, restarting from the root when it moved. Writers lock only the
// nodes they change (a leaf; its parent too when it splits). Full inner
// nodes are split on the way down, so a splitting leaf always finds room in
// its parent.
//
// Values are Record pointers; a leaf keeps the first 16 bytes of each key
// inline (key.h) and reads longer keys' remaining bytes from the record.
// Keys are never physically removed by transactions (a delete marks the
// record absent); the reclaimer removes them. Nodes are never freed while
// the tree lives (no merging), so an optimistic reader can always follow a
// pointer it read, and only records need epoch-based reclamation.
//
// Leaf versions serve Silo's phantom detection: any insert or removal of a
// key in a leaf, and any split, changes that leaf's version. A scan reports
// each leaf it read with the version it validated, and a transaction
// re-checks them at commit.
#pragma once

#include <immintrin.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "key.h"
#include "record.h"

namespace rolis::core {

inline constexpr int kLeafCap = 32;
inline constexpr int kInnerCap = 64;

inline void CpuRelax() { _mm_pause(); }

// Version word: bit 1 = write-locked. Lock adds 2, unlock adds 2, so every
// write moves the version by 4 and a reader that saw an unlocked version v
// knows the node is unchanged iff it still reads v.
struct NodeBase {
  std::atomic<uint64_t> version{0};
  uint16_t count = 0;
  bool is_leaf = false;
  uint8_t level = 0;  // 0 for leaves; an inner node is one above its children
};

// Nodes keep their keys as arrays (structure of arrays): a search first
// runs a branchless binary search over the first 8-byte slices, which sit
// in four consecutive cache lines, and compares further only on ties.
// Unused slice slots (count .. capacity) hold kPadSlice, the largest value,
// so that search runs over the whole capacity in a fixed number of steps
// (unrolled, no loop control) and still stops at or before count.
// A leaf slot: the second slice and the record pointer tagged with the key
// length in its top 16 bits (user-space pointers use 47), so an exact
// lookup reads one slot line after the s0 search and never sees a length
// and a pointer from different keys.
struct LeafSlot {
  uint64_t s1;
  uint64_t tagged;
};
inline constexpr uint64_t kPadSlice = ~uint64_t{0};
inline constexpr uint64_t kPtrMask = (uint64_t{1} << 48) - 1;
inline uint64_t TagRecord(const Record* r, uint32_t len) {
  return reinterpret_cast<uint64_t>(r) | (static_cast<uint64_t>(len) << 48);
}
inline Record* UntagRecord(uint64_t t) { return reinterpret_cast<Record*>(t & kPtrMask); }
inline uint32_t UntagLen(uint64_t t) { return static_cast<uint32_t>(t >> 48); }

struct alignas(64) Leaf : NodeBase {
  Leaf* next;
  alignas(64) uint64_t s0[kLeafCap];
  LeafSlot slots[kLeafCap];
  Record* rec(int i) const { return UntagRecord(Ld(slots[i].tagged)); }
};

// A separator longer than 16 bytes, owned by the inner node that holds it.
struct SepKey {
  uint32_t len;
  const char* data() const { return reinterpret_cast<const char*>(this + 1); }
};

struct alignas(64) Inner : NodeBase {
  // Separators; child i holds keys in [sep[i-1], sep[i]).
  alignas(64) uint64_t s0[kInnerCap];
  uint64_t s1[kInnerCap];
  NodeBase* children[kInnerCap + 1];
  const SepKey* full[kInnerCap];  // non-null iff lens[i] > 16
  uint16_t lens[kInnerCap];
};

// Starts fetching every line a search of `n` may read (header, slices,
// child pointers or record slots), so the misses of one level overlap and a
// descent costs about one memory round trip per level.
// (Inline asm: GCC 12 silently drops __builtin_prefetch here once inlined.)
inline void PrefetchLine(const char* p) { asm volatile("prefetcht0 %0" : : "m"(*p)); }
// For a line used once and then left (a follower's replay of a record):
// the non-temporal hint asks the core not to place it in the outer caches
// when it leaves L1 (on AMD the L3 takes every line evicted from L2), so a
// follower's replay leaves more of a shared L3 to a leader's worker on the
// same host. Only a hint: the line is read and written as any other.
inline void PrefetchLineOnce(const char* p) { asm volatile("prefetchnta %0" : : "m"(*p)); }
template <size_t kBytes>
inline void PrefetchBytes(const void* n) {
  const char* p = static_cast<const char*>(n);
#pragma GCC unroll 32
  for (size_t off = 0; off < kBytes; off += 64) PrefetchLine(p + off);
}
// `leaf` comes from the parent's level, so choosing does not wait for n.
inline void PrefetchNode(const NodeBase* n, bool leaf) {
  if (leaf) {
    PrefetchBytes<sizeof(Leaf)>(n);  // header, s0, slots: the whole leaf
  } else {
    const Inner* in = static_cast<const Inner*>(n);
    PrefetchBytes<64 + sizeof(in->s0)>(in);  // header and s0
    PrefetchBytes<sizeof(in->children)>(in->children);
  }
}

// Starts fetching only the lines a search of `n` reads before it knows
// where to go: the header and the first slices. The one child pointer or
// record slot the search then picks is a single further line (LookupGroup
// fetches it once it is known, instead of the whole array).
inline void PrefetchSearchLines(const NodeBase* n, bool leaf) {
  if (leaf) {
    PrefetchBytes<64 + sizeof(Leaf::s0)>(n);
  } else {
    PrefetchBytes<64 + sizeof(Inner::s0)>(n);
  }
}

inline bool IsLocked(uint64_t v) { return (v & 2) != 0; }

inline uint64_t WaitUnlocked(const NodeBase* n) {
  for (;;) {
    uint64_t v = n->version.load(std::memory_order_acquire);
    if (!IsLocked(v)) return v;
    CpuRelax();
  }
}

// Seqlock-style re-check after optimistic reads.
inline bool Validate(const NodeBase* n, uint64_t v) {
  std::atomic_thread_fence(std::memory_order_acquire);
  return n->version.load(std::memory_order_relaxed) == v;
}

inline bool TryUpgrade(NodeBase* n, uint64_t v) {
  return n->version.compare_exchange_strong(v, v + 2, std::memory_order_acquire);
}

inline void UnlockNode(NodeBase* n) { n->version.fetch_add(2, std::memory_order_release); }

inline int ClampCount(int n, int cap) { return n > cap ? cap : n; }

// Branchless: first i in [0, kCap) with a[i] >= x (kCap if none), for a
// sorted array of kCap (a power of two) slices, in log2(kCap) unrolled steps.
template <int kCap>
inline int LowerBoundFixed(const uint64_t* a, uint64_t x) {
  static_assert(kCap > 0 && (kCap & (kCap - 1)) == 0);
  const uint64_t* base = a;
#pragma GCC unroll 8
  for (int half = kCap / 2; half >= 1; half >>= 1) base = (Ld(base[half - 1]) < x) ? base + half : base;
  return static_cast<int>(base - a) + (Ld(*base) < x ? 1 : 0);
}

// First i in [0, n) with a node's slice s0[i] >= x (n if none). The padding
// keeps the fixed search's answer <= n; the min only guards torn reads
// (whose answer the caller's version check rejects anyway).
template <int kCap>
inline int NodeLowerBound(const uint64_t* s0, int n, uint64_t x) {
  int i = LowerBoundFixed<kCap>(s0, x);
  return i < n ? i : n;
}

// Branchless: first i in [0, n) with a[i] >= x (n if none).
inline int LowerBoundU64(const uint64_t* a, int n, uint64_t x) {
  if (n <= 0) return 0;
  const uint64_t* base = a;
  int len = n;
  while (len > 1) {
    int half = len >> 1;
    base = (Ld(base[half - 1]) < x) ? base + half : base;
    len -= half;
  }
  return static_cast<int>(base - a) + (Ld(*base) < x ? 1 : 0);
}

// Branchless: first i in [0, n) with a[i] > x (n if none).
inline int UpperBoundU64(const uint64_t* a, int n, uint64_t x) {
  if (n <= 0) return 0;
  const uint64_t* base = a;
  int len = n;
  while (len > 1) {
    int half = len >> 1;
    base = (Ld(base[half - 1]) <= x) ? base + half : base;
    len -= half;
  }
  return static_cast<int>(base - a) + (Ld(*base) <= x ? 1 : 0);
}

inline int CompareLeafSlot(const Leaf* l, int i, const KeyRef& k) {
  const uint64_t t = Ld(l->slots[i].tagged);
  return CompareStored(Ld(l->s0[i]), Ld(l->slots[i].s1), UntagLen(t), k, [&](const char** p, uint32_t* n) {
    const Record* r = UntagRecord(t);
    if (!r) return false;
    *p = r->key_data();
    *n = r->key_len;
    return true;
  });
}

inline int CompareInnerSlot(const Inner* in, int i, const KeyRef& k) {
  return CompareStored(Ld(in->s0[i]), Ld(in->s1[i]), Ld(in->lens[i]), k, [&](const char** p, uint32_t* n) {
    const SepKey* f = Ld(in->full[i]);
    if (!f) return false;
    *p = f->data();
    *n = f->len;
    return true;
  });
}

// First slot whose key is >= k; *exact if that slot's key equals k.
// LeafLowerBound when lo, the first slot with s0 >= k.s0, is already known.
inline int LeafLowerBoundFrom(const Leaf* l, int n, const KeyRef& k, int lo, bool* exact) {
  if (lo == n || Ld(l->s0[lo]) != k.s0) {
    *exact = false;
    return lo;
  }
  // Ties on the first slice: binary search the tied run with full compares
  // (usually a run of one).
  int hi = (lo + 1 == n || Ld(l->s0[lo + 1]) != k.s0) ? lo + 1 : lo + UpperBoundU64(l->s0 + lo, n - lo, k.s0);
  int found = 0;
  while (lo < hi) {
    int mid = (lo + hi) >> 1;
    int c = CompareLeafSlot(l, mid, k);
    if (c < 0) {
      lo = mid + 1;
    } else {
      hi = mid;
      found = (c == 0);
    }
  }
  *exact = found != 0;
  return lo;
}

inline int LeafLowerBound(const Leaf* l, int n, const KeyRef& k, bool* exact) {
  return LeafLowerBoundFrom(l, n, k, NodeLowerBound<kLeafCap>(l->s0, n, k.s0), exact);
}

// Index of the child that covers k: the number of separators <= k.
inline int InnerChildIndex(const Inner* in, int n, const KeyRef& k) {
  int lo = NodeLowerBound<kInnerCap>(in->s0, n, k.s0);
  if (lo == n || Ld(in->s0[lo]) != k.s0) return lo;
  int hi = lo + UpperBoundU64(in->s0 + lo, n - lo, k.s0);
  while (lo < hi) {
    int mid = (lo + hi) >> 1;
    if (CompareInnerSlot(in, mid, k) <= 0) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

class BTree {
 public:
  BTree();
  ~BTree();
  BTree(const BTree&) = delete;
  BTree& operator=(const BTree&) = delete;

  struct LookupResult {
    Record* rec;      // null if the key is not in the tree
    Leaf* leaf;       // the leaf that covers the key
    uint64_t version; // its validated version (for phantom checks)
  };
  LookupResult Lookup(const KeyRef& k) const;

  // Exact lookups of a group of keys, possibly in different trees
  // (follower replay: BTree::LookupGroup in btree_lookup_group.cc). Walks
  // them down together, one level per pass, so the group's misses overlap,
  // and fetches only the lines each search reads (PrefetchSearchLines, then
  // the chosen child pointer or slot, then the record's first line).
  // Same reader rules as Lookup; the caller is inside an epoch.
  struct GroupProbe {
    const BTree* tree;  // in
    KeyRef key;         // in
    Record* rec;        // out: the record under key, or null when absent
    bool resolved;      // out: false when a node moved under the walk (look the key up again)
    Leaf* leaf;         // out, when resolved: the leaf that covers key ...
    uint64_t version;   // ... and its validated version (for InsertIntoLeaf)
  };
  static constexpr int kLookupGroup = 16;
  static void LookupGroup(GroupProbe* probes, int n);
  // The same lookups for a transaction (Transaction::Prefetch), which reads
  // each record's value next (also btree_lookup_group.cc). A step fetches
  // the whole child node, as FindLeaf does, so a level costs one round trip
  // and two passes over the group instead of two and three; the record's
  // first two lines (header, start of the value) go into every cache level.
  static void LookupGroupWhole(GroupProbe* probes, int n);

  // Receives leaf version changes made by this thread's inserts, so a
  // transaction can keep its own node set valid.
  struct NoObserver {
    void OnLeafChanged(Leaf*, uint64_t, uint64_t) {}
    void OnLeafSplit(Leaf*, uint64_t, uint64_t, Leaf*, uint64_t) {}
  };

  // Inserts rec under k unless k is present; returns the present record, or
  // nullptr when rec was inserted.
  template <class Obs = NoObserver>
  Record* InsertIfAbsent(const KeyRef& k, Record* rec, Obs* obs = nullptr) {
    Record* made = rec;
    Record* r = FindOrInsert(k, [] { return static_cast<Record*>(nullptr); }, &made, obs);
    return r == rec ? nullptr : r;
  }

  // One descent that finds k's record or inserts a new one: returns the
  // record present under k, or else inserts *made and returns it. When
  // *made is null it is created by make() only once the key is known to be
  // absent (so a present key costs no allocation); if make() returns null,
  // nothing is inserted and null is returned. *made stays the caller's to
  // free when it is not the returned record (another thread's insert won).
  template <class Make, class Obs = NoObserver>
  Record* FindOrInsert(const KeyRef& k, Make&& make, Record** made, Obs* obs = nullptr);

  // Inserts rec under k into `leaf`, which a lookup found to cover k, with
  // k absent, at *version (a LookupGroup probe): the insert without a
  // second descent. Then *version is the leaf's version after the insert
  // (so other keys probed into the same leaf can follow it). Returns false,
  // having changed nothing, when the leaf has moved since (every insert,
  // removal and split moves its version) or is full (its split needs the
  // parent, which only a descent knows); the caller then calls FindOrInsert.
  bool InsertIntoLeaf(Leaf* leaf, uint64_t* version, const KeyRef& k, Record* rec);
  // After an InsertIntoLeaf at `done` moved its leaf from version `seen` to
  // done.version: the probes in later[0..n) that ended at that leaf at
  // `seen` still hold (that insert was the leaf's only change), so they
  // take the new version and can insert there too.
  static void FollowInsert(const GroupProbe& done, uint64_t seen, GroupProbe* later, int n) {
    for (int j = 0; j < n; ++j) {
      if (later[j].resolved && later[j].leaf == done.leaf && later[j].version == seen) later[j].version = done.version;
    }
  }

  // Removes k if it maps to `expected`.
  bool Remove(const KeyRef& k, const Record* expected);

  // Visits leaves in key order from the one covering `start`:
  // f(leaf, version, recs, n) gets the records of keys >= start (and after
  // every key already visited) in a validated copy of the leaf; it returns
  // false to stop. Records of one call are sorted; keys never repeat.
  template <class F>
  void Scan(const KeyRef& start, F&& f) const;

  // Single-threaded walks (destruction, tests).
  template <class F>
  void ForEachRecordUnsafe(F&& f) const;
  bool CheckInvariantsUnsafe(std::string* why) const;

 private:
  struct Sep {
    uint64_t s0, s1;
    uint16_t len;
    const SepKey* full;
  };
  Leaf* FindLeaf(const KeyRef& k, uint64_t* version) const;
  // The start of a group walk (btree_lookup_group.cc): clears the probes'
  // results, takes each key's root and its version, and lists the keys
  // whose root was stable in live[]; returns how many.
  static int StartGroup(GroupProbe* p, int n, const NodeBase** node, uint64_t* ver, int* live);
  // Puts (k, rec) at slot pos of a locked leaf of n < kLeafCap keys.
  static void InsertAtLocked(Leaf* leaf, int n, int pos, const KeyRef& k, Record* rec);
  // `append` means the key that caused the split sorts after every key in
  // the node: then the split leaves the old node full and starts a new one
  // (sequential loads fill nodes instead of leaving them half empty).
  Leaf* SplitLeafLocked(Leaf* leaf, Inner* parent, bool append);
  void SplitInnerLocked(Inner* node, Inner* parent, bool append);
  void AddChildLocked(Inner* parent, NodeBase* left, const Sep& sep, NodeBase* right);
  void NewRootLocked(NodeBase* left, const Sep& sep, NodeBase* right);
  static void FreeSubtree(NodeBase* n);

  std::atomic<NodeBase*> root_;
};

template <class Make, class Obs>
Record* BTree::FindOrInsert(const KeyRef& k, Make&& make, Record** made, Obs* obs) {
  for (;;) {
    NodeBase* node = root_.load(std::memory_order_acquire);
    uint64_t v = node->version.load(std::memory_order_acquire);
    if (IsLocked(v) || node != root_.load(std::memory_order_acquire)) {
      CpuRelax();
      continue;
    }
    Inner* parent = nullptr;
    uint64_t pv = 0;
    bool restart = false;
    while (!node->is_leaf) {
      Inner* in = static_cast<Inner*>(node);
      if (Ld(in->count) == kInnerCap) {
        // Split full inner nodes on the way down.
        const bool append = InnerChildIndex(in, kInnerCap, k) == kInnerCap;
        if (parent && !TryUpgrade(parent, pv)) {
          restart = true;
          break;
        }
        if (!TryUpgrade(in, v)) {
          if (parent) UnlockNode(parent);
          restart = true;
          break;
        }
        SplitInnerLocked(in, parent, append);
        UnlockNode(in);
        if (parent) UnlockNode(parent);
        restart = true;
        break;
      }
      int idx = InnerChildIndex(in, ClampCount(Ld(in->count), kInnerCap), k);
      NodeBase* child = Ld(in->children[idx]);
      if (child == nullptr) {  // a torn read; nodes are never freed, so any non-null pointer is safe
        restart = true;
        break;
      }
      PrefetchNode(child, in->level == 1);
      uint64_t cv = child->version.load(std::memory_order_acquire);
      if (IsLocked(cv) || !Validate(in, v)) {
        CpuRelax();
        restart = true;
        break;
      }
      parent = in;
      pv = v;
      node = child;
      v = cv;
    }
    if (restart) continue;

    Leaf* leaf = static_cast<Leaf*>(node);
    int n = ClampCount(Ld(leaf->count), kLeafCap);
    bool exact;
    int pos = LeafLowerBound(leaf, n, k, &exact);
    if (exact) {
      Record* r = leaf->rec(pos);
      if (!Validate(leaf, v)) continue;
      return r;
    }
    if (*made == nullptr) {
      if (!Validate(leaf, v)) continue;  // absent only if the leaf did not move
      *made = make();
      if (*made == nullptr) return nullptr;
      // n and pos stand: the TryUpgrade below fails if the leaf moved.
    }
    if (n == kLeafCap) {
      if (parent && !TryUpgrade(parent, pv)) continue;
      if (!TryUpgrade(leaf, v)) {
        if (parent) UnlockNode(parent);
        continue;
      }
      Leaf* nl = SplitLeafLocked(leaf, parent, pos == n);
      UnlockNode(leaf);
      if (parent) UnlockNode(parent);
      if (obs) obs->OnLeafSplit(leaf, v, v + 4, nl, 0);
      continue;
    }
    if (!TryUpgrade(leaf, v)) continue;
    InsertAtLocked(leaf, n, pos, k, *made);
    UnlockNode(leaf);
    if (obs) obs->OnLeafChanged(leaf, v, v + 4);
    return *made;
  }
}

template <class F>
void BTree::Scan(const KeyRef& start, F&& f) const {
  KeyRef from = start;
  bool exclusive = false;
  Record* buf[kLeafCap];
  for (;;) {
    uint64_t v;
    Leaf* leaf = FindLeaf(from, &v);
    for (;;) {
      int n = ClampCount(Ld(leaf->count), kLeafCap);
      bool exact;
      int pos = LeafLowerBound(leaf, n, from, &exact);
      if (exclusive && exact) ++pos;
      int m = 0;
      for (int i = pos; i < n; ++i) buf[m++] = leaf->rec(i);
      Leaf* next = Ld(leaf->next);
      if (!Validate(leaf, v)) break;  // changed under us: descend again from `from`
      if (!f(leaf, v, static_cast<Record* const*>(buf), m)) return;
      if (m > 0) {
        from = KeyRef(buf[m - 1]->key());
        exclusive = true;
      }
      if (!next) return;
      leaf = next;
      PrefetchNode(leaf, true);
      v = WaitUnlocked(leaf);
    }
  }
}

template <class F>
void BTree::ForEachRecordUnsafe(F&& f) const {
  const NodeBase* n = root_.load(std::memory_order_acquire);
  while (!n->is_leaf) n = static_cast<const Inner*>(n)->children[0];
  for (const Leaf* l = static_cast<const Leaf*>(n); l; l = l->next) {
    for (int i = 0; i < l->count; ++i) f(l->rec(i));
  }
}

}  // namespace rolis::core
