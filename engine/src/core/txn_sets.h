// The per-transaction working state of read-write transactions: read set,
// write set, node set (scanned and absent-key leaves), the values written,
// and a small cache of the keys the transaction already resolved to
// records. A Worker pools these and hands one to each open transaction, so
// the vectors keep their capacity and the hot path does not allocate.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <string_view>
#include <vector>

#include "btree.h"

namespace rolis::core {

class TableImpl;

struct ReadEntry {
  Record* rec;
  uint64_t word;  // TID word observed (never locked)
};

enum class WriteKind : uint8_t { kPut, kDelete };

struct WriteEntry {
  Record* rec;
  TableImpl* table;
  const char* val;  // in the transaction's arena
  uint32_t len;
  WriteKind kind;
  bool created;  // this transaction inserted the placeholder record
  // Only Update sets these: the value differs from the version it read
  // only in the 8-byte words [changed_from, changed_to), so a patch is
  // those words and no diff is needed. changed_to == 0: not known.
  uint8_t changed_from = 0, changed_to = 0;

  // A whole new value (or a delete) for the key: what was read no longer
  // bounds what changed.
  void Replace(const char* v, uint32_t n, WriteKind k) {
    val = v;
    len = n;
    kind = k;
    changed_to = 0;
  }
};
static_assert(sizeof(WriteEntry) == 32, "the write set is sorted and scanned: keep an entry in half a line");

struct NodeEntry {
  Leaf* leaf;
  uint64_t version;
};

// Bump allocator for the values of a transaction's writes (and for values
// read through GetView); reset per transaction, blocks kept.
class Arena {
 public:
  const char* Copy(std::string_view s) {
    if (s.empty()) return "";
    return CopyMutable(s);
  }
  // A copy the caller may still change (s not empty).
  char* CopyMutable(std::string_view s) {
    if (__builtin_expect(s.size() <= kBlock / 4 && !blocks_.empty() && used_ + s.size() <= kBlock, 1)) {
      char* p = blocks_[block_].get() + used_;
      std::memcpy(p, s.data(), s.size());
      used_ += (s.size() + 7) & ~size_t{7};
      return p;
    }
    return CopySlow(s);
  }
  void Reset();

 private:
  char* CopySlow(std::string_view s);
  static constexpr size_t kBlock = 64 * 1024;
  std::vector<std::unique_ptr<char[]>> blocks_;
  size_t block_ = 0, used_ = 0;
  std::vector<std::unique_ptr<char[]>> big_;
};

// Open-addressing index Record* -> write-set position, used once a write set
// outgrows a linear search.
class WriteIndex {
 public:
  static constexpr size_t kLinearLimit = 16;
  void Clear() {
    if (built_) ClearSlots();
  }
  void Add(const Record* r, uint32_t pos, const std::vector<WriteEntry>& writes) {
    if (writes.size() > kLinearLimit) AddSlow(r, pos, writes);
  }
  int Find(const Record* r, const std::vector<WriteEntry>& writes) const;  // -1 if absent

 private:
  void ClearSlots();
  void AddSlow(const Record* r, uint32_t pos, const std::vector<WriteEntry>& writes);
  void Rebuild(const std::vector<WriteEntry>& writes);
  std::vector<uint32_t> slots_;  // pos + 1, 0 = empty
  size_t used_ = 0;
  bool built_ = false;
};

// Keys this transaction resolved to records, so that a read-modify-write
// (Get then Put of one key) finds its record without descending the index
// again, an Update finds the value the transaction read, and a read of a
// key it prefetched (Transaction::Prefetch) needs no descent. Direct-mapped
// on a hash of (table, first 16 key bytes, length): one probe per lookup,
// no clearing between transactions (entries carry the transaction's
// generation). A miss is only a lost shortcut.
class RecentKeys {
 public:
  // Forgets every entry (a new transaction).
  void NewGeneration() {
    if (__builtin_expect(++gen_ == 0, 0)) {
      std::memset(static_cast<void*>(slots_), 0, sizeof slots_);
      gen_ = 1;
    }
  }
  // The record of k, and in *read (if asked) the value this transaction
  // last read from it through GetView (empty if none: not read, read
  // absent, or read another way).
  Record* Find(uint32_t table, const KeyRef& k, std::string_view* read = nullptr) const {
    const Slot& e = slots_[SlotOf(table, k)];
    if (e.gen != gen_ || e.s0 != k.s0 || e.s1 != k.s1 || e.len != k.len || e.table != table) return nullptr;
    if (k.len > kInlineKeyBytes &&
        std::memcmp(e.rec->key_data() + kInlineKeyBytes, k.data + kInlineKeyBytes, k.len - kInlineKeyBytes) != 0) {
      return nullptr;
    }
    if (read) *read = std::string_view(e.read, e.read_len);
    return e.rec;
  }
  // `read`: the value this transaction read from r through GetView, if it
  // did (the arena's: kept until the transaction ends).
  void Remember(uint32_t table, const KeyRef& k, Record* r, std::string_view read = {}) {
    slots_[SlotOf(table, k)] = {k.s0, k.s1, k.len, table, gen_, static_cast<uint32_t>(read.size()), r, read.data()};
  }

 private:
  // Room for a TPC-C NewOrder's prefetched keys (up to 33) and its inserts
  // with few collisions: a collision only costs a descent.
  static constexpr int kSlotBits = 7;
  static constexpr uint32_t kSlots = 1u << kSlotBits;
  static uint32_t SlotOf(uint32_t table, const KeyRef& k) {
    uint64_t h = (k.s0 ^ (k.s1 * 0x9e3779b97f4a7c15ull) ^ (uint64_t{table} << 40) ^ k.len) * 0xbf58476d1ce4e5b9ull;
    return static_cast<uint32_t>(h >> (64 - kSlotBits));
  }
  struct Slot {
    uint64_t s0, s1;
    uint32_t len;
    uint32_t table;
    uint32_t gen;
    uint32_t read_len;
    Record* rec;
    const char* read;
  };
  Slot slots_[kSlots] = {};
  uint32_t gen_ = 1;
};

struct TxnSets {
  TxnSets() {
    reads.reserve(64);
    writes.reserve(32);
    nodes.reserve(16);
  }
  // Empties everything for the next transaction (capacity kept).
  void Clear() {
    reads.clear();
    writes.clear();
    nodes.clear();
    windex.Clear();
    arena.Reset();
    recent.NewGeneration();
  }

  std::vector<ReadEntry> reads;
  std::vector<WriteEntry> writes;
  std::vector<NodeEntry> nodes;
  WriteIndex windex;
  Arena arena;
  RecentKeys recent;
  BTree::GroupProbe probes[BTree::kLookupGroup];  // Transaction::Prefetch's scratch
};

}  // namespace rolis::core
