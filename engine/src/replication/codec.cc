#include "codec.h"

#include <algorithm>
#include <cstring>

#include "rolis/value_patch.h"
#include "stream_copy.h"

namespace rolis::replication {
namespace {

class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  template <typename T>
  bool Get(T* v) {
    if (in_.size() - pos_ < sizeof(T)) return false;
    std::memcpy(v, in_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }
  bool Bytes(uint32_t n, std::string_view* v) {
    if (in_.size() - pos_ < n) return false;
    *v = in_.substr(pos_, n);
    pos_ += n;
    return true;
  }
  bool done() const { return pos_ == in_.size(); }
  // Asks for the cache lines up to kAhead bytes past the position. A
  // follower decodes a batch long after it arrived, when it is no longer in
  // cache: without this, 70% of decoding was the miss on each write's header
  // (perf annotate, replicated TPC-C).
  void PrefetchAhead() {
    static constexpr size_t kAhead = 1024;
    const size_t until = std::min(in_.size(), pos_ + kAhead);
    for (; prefetched_ < until; prefetched_ += 64) __builtin_prefetch(in_.data() + prefetched_);
  }

 private:
  std::string_view in_;
  size_t pos_ = 0;
  size_t prefetched_ = 0;
};

// A write's flags byte; a patch's is followed by its base version's ts.
constexpr uint8_t kFlagPut = 0, kFlagDelete = 1, kFlagPatch = 2;

size_t EncodedSize(std::span<const WriteRecord> writes) {
  size_t n = sizeof(uint64_t) + sizeof(uint32_t);
  for (const WriteRecord& w : writes) {
    n += 3 * sizeof(uint32_t) + 1 + w.key.size() + (w.is_delete ? 0 : w.value.size()) +
         (w.is_patch ? sizeof(uint64_t) : 0);
  }
  return n;
}

// Copies len bytes, sizeof(Word) <= len <= 2 * sizeof(Word), as two
// overlapping words: no loop, no call.
template <typename Word>
inline void CopyTwoWords(char* dst, const char* src, size_t len) {
  Word head, tail;
  std::memcpy(&head, src, sizeof head);
  std::memcpy(&tail, src + len - sizeof tail, sizeof tail);
  std::memcpy(dst, &head, sizeof head);
  std::memcpy(dst + len - sizeof tail, &tail, sizeof tail);
}

// Copies len bytes; inline up to 16, as most keys and many values are: a
// call to the library's memcpy per key and per value was a third of
// EncodeAt's instructions for YCSB++'s 8-byte keys and values (callgrind,
// docs/benchmarks.md).
inline void CopyBytes(char* dst, const char* src, size_t len) {
  if (len > 16) {
    std::memcpy(dst, src, len);
  } else if (len >= 8) {
    CopyTwoWords<uint64_t>(dst, src, len);
  } else if (len >= 4) {
    CopyTwoWords<uint32_t>(dst, src, len);
  } else {
    for (size_t i = 0; i < len; i++) dst[i] = src[i];
  }
}

// Plain stores into room already made (not five appends per write, each
// with its capacity check).
void EncodeAt(char* p, uint64_t ts, std::span<const WriteRecord> writes) {
  auto put = [&p](const void* v, size_t len) {
    CopyBytes(p, static_cast<const char*>(v), len);  // x86-64: little endian
    p += len;
  };
  const uint32_t count = static_cast<uint32_t>(writes.size());
  put(&ts, sizeof ts);
  put(&count, sizeof count);
  for (const WriteRecord& w : writes) {
    const uint8_t flags = w.is_delete ? kFlagDelete : w.is_patch ? kFlagPatch : kFlagPut;
    const uint32_t klen = static_cast<uint32_t>(w.key.size());
    std::string_view v = w.is_delete ? std::string_view() : w.value;
    const uint32_t vlen = static_cast<uint32_t>(v.size());
    put(&w.table, sizeof w.table);
    put(&flags, 1);
    if (w.is_patch) put(&w.base_ts, sizeof w.base_ts);
    put(&klen, sizeof klen);
    put(w.key.data(), klen);
    put(&vlen, sizeof vlen);
    put(v.data(), vlen);
  }
}

}  // namespace

void AppendTxn(std::string* out, uint64_t ts, std::span<const WriteRecord> writes) {
  const size_t at = out->size();
  out->resize(at + EncodedSize(writes));
  EncodeAt(out->data() + at, ts, writes);
}

void AppendTxnAt(std::string* out, size_t* used, uint64_t ts, std::span<const WriteRecord> writes) {
  const size_t n = EncodedSize(writes);
  // resize zero-fills what it adds (0.5% of a TPC-C worker when every
  // transaction grew the buffer): only the bytes past the buffer's old end
  // are filled, a reused buffer's own bytes are just overwritten.
  if (out->size() < *used + n) {
    if (out->capacity() < *used + n) out->reserve(std::max(*used + n, 2 * out->capacity()));
    out->resize(*used + n);
  }
  // Encoded where this core's cache keeps it, then copied past the caches:
  // a batch's buffer comes back for reuse only after the retained log lets
  // it go, cold by then, and writing it directly read each of its lines in
  // and evicted the engine's own (a TPC-C worker ~5% slower than with a
  // buffer that stays in cache).
  // A transaction larger than the scratch is encoded in place: it is rare,
  // and a worker should not keep a scratch the size of its largest one.
  constexpr size_t kScratchBytes = 64 << 10;
  if (n > kScratchBytes) {
    EncodeAt(out->data() + *used, ts, writes);
  } else {
    thread_local std::string scratch(kScratchBytes, '\0');
    EncodeAt(scratch.data(), ts, writes);
    CopyPastCaches(out->data() + *used, scratch.data(), n);
  }
  *used += n;
}

namespace {

// Decodes every transaction, calling on_txn(ts, write count) and then
// on_write(w) for each of its writes.
template <typename OnTxn, typename OnWrite>
Status Decode(std::string_view payload, uint32_t count, uint64_t last_ts, OnTxn&& on_txn, OnWrite&& on_write) {
  Reader r(payload);
  uint64_t prev = 0;
  for (uint32_t i = 0; i < count; i++) {
    uint64_t ts = 0;
    uint32_t n = 0;
    if (!r.Get(&ts) || !r.Get(&n)) return Status::InvalidArgument("batch payload truncated (txn header)");
    if (i > 0 && ts <= prev) return Status::InvalidArgument("batch payload: ts not increasing");
    prev = ts;
    if (n > payload.size()) return Status::InvalidArgument("batch payload: write count exceeds the payload");
    on_txn(ts, n);
    for (uint32_t j = 0; j < n; j++) {
      r.PrefetchAhead();
      WriteRecord w{};
      uint8_t flags = 0;
      uint32_t kl = 0, vl = 0;
      if (!r.Get(&w.table) || !r.Get(&flags)) return Status::InvalidArgument("batch payload truncated (write)");
      if (flags > kFlagPatch) return Status::InvalidArgument("batch payload: bad write flags");
      w.is_delete = flags == kFlagDelete;
      w.is_patch = flags == kFlagPatch;
      if ((w.is_patch && !r.Get(&w.base_ts)) || !r.Get(&kl) || !r.Bytes(kl, &w.key) || !r.Get(&vl) ||
          !r.Bytes(vl, &w.value)) {
        return Status::InvalidArgument("batch payload truncated (write)");
      }
      if (kl == 0) return Status::InvalidArgument("batch payload: empty key");
      if (w.is_delete && vl != 0) return Status::InvalidArgument("batch payload: delete with a value");
      if (w.is_patch && !PatchWellFormed(w.value)) return Status::InvalidArgument("batch payload: malformed patch");
      on_write(w);
    }
  }
  if (!r.done()) return Status::InvalidArgument("batch payload: trailing bytes");
  if (count > 0 && last_ts != 0 && prev != last_ts) {
    return Status::InvalidArgument("batch payload: last ts does not match the batch key");
  }
  return Status::OK();
}

}  // namespace

Status DecodeTxns(std::string_view payload, uint32_t count, uint64_t last_ts, std::vector<DecodedTxn>* out) {
  out->clear();
  return Decode(
      payload, count, last_ts,
      [out](uint64_t ts, uint32_t n) {
        out->emplace_back().ts = ts;
        out->back().writes.reserve(n);
      },
      [out](const WriteRecord& w) { out->back().writes.push_back(w); });
}

Status DecodeBatch(std::string_view payload, uint32_t count, uint64_t last_ts, DecodedBatch* out) {
  out->clear();
  Status s = Decode(
      payload, count, last_ts,
      [out](uint64_t ts, uint32_t n) {
        out->txns_.push_back({ts, static_cast<uint32_t>(out->writes_.size()), n});
      },
      [out](const WriteRecord& w) { out->writes_.push_back(w); });
  if (!s.ok()) out->clear();
  return s;
}

Status CheckPayload(std::string_view payload, uint32_t count, uint64_t last_ts, uint32_t crc) {
  if (Crc32c(payload) != crc) return Status::InvalidArgument("batch payload: CRC mismatch");
  // Only the checks: nothing decoded is kept.
  return Decode(payload, count, last_ts, [](uint64_t, uint32_t) {}, [](const WriteRecord&) {});
}

}  // namespace rolis::replication
