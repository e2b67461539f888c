#include "record.h"

#include <cstring>
#include <new>

#include "alloc.h"
#include "version_cache.h"

namespace rolis::core {

Record* NewRecord(std::string_view key, uint32_t value_cap) {
  uint32_t cap = (value_cap + 7u) & ~7u;
  if (cap < 8) cap = 8;
  size_t key_space = (key.size() + 7u) & ~size_t{7};
  // Whole cache lines; the slack becomes inline value room.
  size_t size = (sizeof(Record) + cap + key_space + 63u) & ~size_t{63};
  cap = static_cast<uint32_t>(size - sizeof(Record) - key_space);
  void* mem = AllocAligned(size, 64);
  if (!mem) throw std::bad_alloc();
  Record* r = static_cast<Record*>(mem);
  r->word.store(tid::kLatest | tid::kAbsent, std::memory_order_relaxed);
  r->ts = 0;
  r->chain.store(nullptr, std::memory_order_relaxed);
  r->epoch = 0;
  r->repl_epoch = 0;
  r->vlen = 0;
  r->inline_cap = cap;
  r->key_len = static_cast<uint16_t>(key.size());
  r->flags = 0;
  std::memcpy(const_cast<char*>(r->key_data()), key.data(), key.size());
  return r;
}

void FreeRecord(Record* r) {
  FreeVersionChain(r->chain.load(std::memory_order_relaxed));
  if (r->flags & kFlagHeapValue) FreeHeapValue(r->ValuePtrLocked());
  Free(r);
}

Version* NewVersion(uint64_t ts, uint64_t epoch, uint64_t repl_epoch, bool absent, const char* data,
                    uint32_t len) {
  const size_t bytes = sizeof(Version) + len;
  void* mem = nullptr;
  if (bytes <= VersionCache::kMaxBytes) {
    // A block of the whole class, so that any version of the class fits it.
    const size_t cls = VersionCache::ClassOf(bytes);
    if (VersionCache* cache = VersionCache::Mine()) mem = cache->Take(cls);
    if (!mem) mem = Alloc(VersionCache::BytesOf(cls));
  } else {
    mem = Alloc(bytes);
  }
  if (!mem) throw std::bad_alloc();
  Version* v = static_cast<Version*>(mem);
  v->prev.store(nullptr, std::memory_order_relaxed);
  v->ts = ts;
  v->epoch = epoch;
  v->repl_epoch = repl_epoch;
  v->len = len;
  v->absent = absent ? 1 : 0;
  if (len) std::memcpy(v->data(), data, len);
  return v;
}

uint64_t FreeVersionChain(Version* v) {
  uint64_t n = 0;
  VersionCache* cache = v != nullptr ? VersionCache::Mine() : nullptr;
  while (v) {
    Version* prev = v->prev.load(std::memory_order_relaxed);
    const size_t bytes = sizeof(Version) + v->len;
    if (bytes <= VersionCache::kMaxBytes && cache != nullptr) {
      if (!cache->Keep(VersionCache::ClassOf(bytes), v)) Free(v);
    } else {
      Free(v);
    }
    v = prev;
    ++n;
  }
  return n;
}

HeapValue* NewHeapValue(uint32_t cap) {
  void* mem = Alloc(sizeof(HeapValue) + cap);
  if (!mem) throw std::bad_alloc();
  HeapValue* h = static_cast<HeapValue*>(mem);
  h->cap = cap;
  h->pad = 0;
  return h;
}

void FreeHeapValue(char* data) { Free(HeapValue::Of(data)); }

}  // namespace rolis::core
