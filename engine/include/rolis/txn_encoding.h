// The encoding of one committed transaction in the replication log (a
// batch's payload is a sequence of these):
//   u64 ts | u32 writes | per write: u32 table | u8 flags (0 = put,
//   1 = delete, 2 = patch) | [patch: u64 ts of the base version] |
//   u32 key length | key | u32 value length | value (a patch: its runs,
//   rolis/value_patch.h)
// little endian (x86-64's own order). The engine writes it on the commit
// path (CommittedWrites::encoded) and the replication codec decodes it:
// the format is defined here once, for both.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>

#include "rolis/copy_bytes.h"
#include "rolis/db.h"

namespace rolis::txn_encoding {

constexpr uint8_t kFlagPut = 0, kFlagDelete = 1, kFlagPatch = 2;

constexpr size_t kTxnHeaderBytes = sizeof(uint64_t) + sizeof(uint32_t);

// The bytes of one write with a key of klen and a value (or patch) of vlen.
constexpr size_t WriteBytes(size_t klen, size_t vlen, bool is_patch) {
  return 3 * sizeof(uint32_t) + 1 + klen + vlen + (is_patch ? sizeof(uint64_t) : 0);
}

template <typename T>
inline char* PutScalar(char* p, T v) {
  std::memcpy(p, &v, sizeof v);
  return p + sizeof v;
}

// Writes the transaction's header at p; returns the end.
inline char* PutTxnHeader(char* p, uint64_t ts, uint32_t writes) { return PutScalar(PutScalar(p, ts), writes); }

// Writes one write's frame up to its key at p; returns where its value's
// length goes.
inline char* PutWriteHead(char* p, TableId table, uint8_t flags, uint64_t base_ts, std::string_view key) {
  p = PutScalar(p, table);
  p = PutScalar(p, flags);
  if (flags == kFlagPatch) p = PutScalar(p, base_ts);
  p = PutScalar(p, static_cast<uint32_t>(key.size()));
  rolis::CopyBytes(p, key.data(), key.size());
  return p + key.size();
}

// Writes one write at p (room for WriteBytes made by the caller); returns
// the end. `value` is empty for a delete and the runs for a patch.
inline char* PutWrite(char* p, TableId table, uint8_t flags, uint64_t base_ts, std::string_view key,
                      std::string_view value) {
  p = PutScalar(PutWriteHead(p, table, flags, base_ts, key), static_cast<uint32_t>(value.size()));
  rolis::CopyBytes(p, value.data(), value.size());
  return p + value.size();
}

// Appends the transaction to *out.
void AppendTxn(std::string* out, uint64_t ts, std::span<const WriteRecord> writes);

// CommittedWrites over records a caller already has (a commit hook that
// forwards, a test's fake engine): encoded() encodes them when asked.
class RecordsView final : public CommittedWrites {
 public:
  RecordsView(uint64_t ts, std::span<const WriteRecord> records) : ts_(ts), records_(records) {}
  size_t size() const override { return records_.size(); }
  std::span<const WriteRecord> records() const override { return records_; }
  std::string_view encoded() const override;

 private:
  uint64_t ts_;
  std::span<const WriteRecord> records_;
  mutable std::string encoded_;
};

}  // namespace rolis::txn_encoding
