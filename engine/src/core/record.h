// Records and their old versions.
//
// A Record is the stable home of one key in one table: the index points to
// it from the moment the key is first written until the record is reclaimed,
// and it is never moved. It holds the newest version inline (TID word, commit
// ts, snapshot epoch, value) and a chain of older versions, newest first,
// kept only while a read-only snapshot may need them.
//
// TID word (64 bits), the Silo way:
//   bit 0  lock     held by a committing writer (or reclaimer, replay)
//   bit 1  latest   the record is in the index; cleared when it is unlinked,
//                   so holders of a stale pointer look the key up again
//   bit 2  absent   the newest version is a delete (or a fresh placeholder)
//   bits 3..63      the low 61 bits of the newest version's commit ts
// Any install changes the word, so "word unchanged" means "not overwritten".
#pragma once

#include <atomic>
#include <cstdint>
#include <string_view>

namespace rolis::core {

namespace tid {
inline constexpr uint64_t kLock = 1;
inline constexpr uint64_t kLatest = 2;
inline constexpr uint64_t kAbsent = 4;
inline constexpr int kTsShift = 3;
inline constexpr uint64_t Make(uint64_t ts, bool absent) {
  return (ts << kTsShift) | kLatest | (absent ? kAbsent : 0);
}
}  // namespace tid

// Relaxed accessors for fields that optimistic readers read while a writer
// holding the record (or node) lock may change them; readers re-check a
// version word afterwards.
template <class T>
inline T Ld(const T& x) {
  return __atomic_load_n(&x, __ATOMIC_RELAXED);
}
template <class T, class U>
inline void St(T& x, U v) {
  __atomic_store_n(&x, static_cast<T>(v), __ATOMIC_RELAXED);
}

// An old, immutable version. `prev` is the next older one.
struct Version {
  std::atomic<Version*> prev;
  uint64_t ts;
  uint64_t epoch;       // snapshot epoch of the commit that wrote it
  uint64_t repl_epoch;  // replication epoch it was stamped with
  uint32_t len;
  uint32_t absent;
  const char* data() const { return reinterpret_cast<const char*>(this + 1); }
  char* data() { return reinterpret_cast<char*>(this + 1); }
};

// Out-of-line value buffer, used when a value outgrows the inline space.
struct HeapValue {
  uint32_t cap;
  uint32_t pad;
  char* data() { return reinterpret_cast<char*>(this + 1); }
  static HeapValue* Of(const char* data) {
    return reinterpret_cast<HeapValue*>(const_cast<char*>(data)) - 1;
  }
};

// Record flags (changed only under the record lock).
inline constexpr uint16_t kFlagGcQueued = 1;        // on some worker's absent queue
inline constexpr uint16_t kFlagReplTombstone = 2;   // absent because of a replicated delete
inline constexpr uint16_t kFlagHeapValue = 4;       // the value lives in a HeapValue (see Record)

// Layout, 64-byte aligned: a 48-byte header, the inline value area, then the
// key. A record with a short key and value (8 + 8 bytes) is one cache line,
// and a reader of the newest version touches only the first line or two.
struct Record {
  std::atomic<uint64_t> word;
  uint64_t ts;                  // full commit ts of the newest version
  std::atomic<Version*> chain;  // older versions, newest first
  uint64_t epoch;               // snapshot epoch of the newest version
  uint32_t repl_epoch;          // replication epoch of the newest version
  uint32_t vlen;
  uint32_t inline_cap;          // bytes of inline value area (a multiple of 8, >= 8)
  uint16_t key_len;
  uint16_t flags;
  // Followed by inline_cap value bytes, then key_len key bytes. With
  // kFlagHeapValue the first 8 inline bytes hold the HeapValue data pointer.

  char* inline_value() { return reinterpret_cast<char*>(this + 1); }
  const char* inline_value() const { return reinterpret_cast<const char*>(this + 1); }
  const char* key_data() const { return inline_value() + inline_cap; }
  std::string_view key() const { return {key_data(), key_len}; }

  // Where the value lives, as an optimistic reader sees it (re-check the
  // word afterwards). The flag is published with release after the pointer.
  const char* ValuePtr() const {
    if (__atomic_load_n(&flags, __ATOMIC_ACQUIRE) & kFlagHeapValue) {
      return __atomic_load_n(reinterpret_cast<char* const*>(inline_value()), __ATOMIC_RELAXED);
    }
    return inline_value();
  }
  char* ValuePtrLocked() { return const_cast<char*>(static_cast<const Record*>(this)->ValuePtr()); }
  // Capacity of the buffer `p` returned by ValuePtr.
  uint32_t CapacityOf(const char* p) const { return p == inline_value() ? inline_cap : HeapValue::Of(p)->cap; }
};
static_assert(sizeof(Record) == 48, "record header is 48 bytes");

// A fresh record: absent, latest, unlocked, ts 0, epoch 0, with room for a
// value of `value_cap` bytes inline.
Record* NewRecord(std::string_view key, uint32_t value_cap);
// Frees the record, its heap value and its whole version chain.
void FreeRecord(Record* r);
Version* NewVersion(uint64_t ts, uint64_t epoch, uint64_t repl_epoch, bool absent, const char* data,
                    uint32_t len);
// Frees v and every older version; returns how many were freed.
uint64_t FreeVersionChain(Version* v);
HeapValue* NewHeapValue(uint32_t cap);
void FreeHeapValue(char* data);

}  // namespace rolis::core
