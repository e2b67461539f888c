#include "rolis/txn_encoding.h"

namespace rolis::txn_encoding {
namespace {

uint8_t FlagsOf(const WriteRecord& w) { return w.is_delete ? kFlagDelete : w.is_patch ? kFlagPatch : kFlagPut; }

size_t EncodedSize(std::span<const WriteRecord> writes) {
  size_t n = kTxnHeaderBytes;
  for (const WriteRecord& w : writes) n += WriteBytes(w.key.size(), w.is_delete ? 0 : w.value.size(), w.is_patch);
  return n;
}

void EncodeAt(char* p, uint64_t ts, std::span<const WriteRecord> writes) {
  p = PutTxnHeader(p, ts, static_cast<uint32_t>(writes.size()));
  for (const WriteRecord& w : writes) {
    p = PutWrite(p, w.table, FlagsOf(w), w.base_ts, w.key, w.is_delete ? std::string_view() : w.value);
  }
}

}  // namespace

void AppendTxn(std::string* out, uint64_t ts, std::span<const WriteRecord> writes) {
  const size_t at = out->size();
  out->resize(at + EncodedSize(writes));
  EncodeAt(out->data() + at, ts, writes);
}

std::string_view RecordsView::encoded() const {
  if (encoded_.empty()) AppendTxn(&encoded_, ts_, records_);
  return encoded_;
}

}  // namespace rolis::txn_encoding
