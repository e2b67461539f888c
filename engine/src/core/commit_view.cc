#include "commit_view.h"

#include <algorithm>

#include "database_impl.h"
#include "rolis/txn_encoding.h"

namespace rolis::core {

std::span<const WriteRecord> CommitView::records() const {
  auto& hb = w_->hook_buf_;
  const size_t n = writes_.size();
  if (records_built_) return {hb.data(), n};
  // Filled in place: a record built on the stack and copied in was read
  // back before its stores had landed (a store-forwarding stall: this
  // loop went from 1.1% to 0.4% of a TPC-C worker's samples).
  // Grown only: every field is set below, and a resize to each
  // transaction's size value-initialized the records a smaller one had dropped.
  if (hb.size() < n) hb.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const WriteEntry& e = writes_[i];
    WriteRecord& wr = hb[i];
    wr.table = e.table->id();
    wr.key = e.rec->key();
    wr.is_delete = e.kind == WriteKind::kDelete;
    wr.value = wr.is_delete ? std::string_view() : std::string_view(e.val, e.len);
    if (const WorkerImpl::PatchRef* p = PatchOf(i)) {
      wr.is_patch = true;
      wr.base_ts = p->base_ts;
      wr.value = PatchBytes(*p);
    } else {
      wr.is_patch = false;
      wr.base_ts = 0;
    }
  }
  records_built_ = true;
  return {hb.data(), n};
}

// The same bytes as encoding records() (tests/core/commit_encoding_test.cc
// checks it), without building them.
std::string_view CommitView::encoded() const {
  using namespace txn_encoding;
  std::string& out = w_->encoded_buf_;
  if (encoded_len_ > 0) return {out.data(), encoded_len_};
  constexpr size_t kFirstSize = 4096;
  if (out.size() < kFirstSize) out.resize(kFirstSize);
  // Everything the loop reads is in locals: its stores go through a char*,
  // which may alias any field, so the compiler reloaded the vectors' and
  // the string's fields on every write.
  const WriteEntry* const entries = writes_.data();
  const size_t n = writes_.size();
  const WorkerImpl::PatchRef* const refs = w_->patch_refs_.data();
  const size_t with_refs = w_->patch_refs_.size();  // 0 when the commit made no patch
  const char* const patch_bytes = w_->patch_buf_.data();
  char* base = out.data();
  size_t room = out.size();
  size_t at = kTxnHeaderBytes;
  for (size_t i = 0; i < n; ++i) {
    const WriteEntry& e = entries[i];
    const std::string_view key = e.rec->key();
    uint8_t flags = kFlagPut;
    uint64_t base_ts = 0;
    std::string_view value(e.val, e.len);
    if (e.kind == WriteKind::kDelete) {
      flags = kFlagDelete;
      value = {};
    } else if (i < with_refs && refs[i].len > 0) {
      flags = kFlagPatch;
      base_ts = refs[i].base_ts;
      value = std::string_view(patch_bytes + refs[i].at, refs[i].len);
    }
    const size_t need = WriteBytes(key.size(), value.size(), flags == kFlagPatch);
    if (room - at < need) {  // grown only, so rarely
      out.resize(std::max(2 * room, at + need));
      base = out.data();
      room = out.size();
    }
    at = PutWrite(base + at, e.table->id(), flags, base_ts, key, value) - base;
  }
  PutTxnHeader(base, ts_, static_cast<uint32_t>(n));
  encoded_len_ = at;
  return {base, at};
}

}  // namespace rolis::core
