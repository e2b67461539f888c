#include "commit_view.h"

#include <algorithm>

#include "database_impl.h"
#include "rolis/txn_encoding.h"
#include "rolis/value_patch.h"

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
  const auto& refs = w_->patch_refs_;
  size_t next_ref = 0;  // refs are in write order
  for (size_t i = 0; i < n; ++i) {
    const WriteEntry& e = writes_[i];
    WriteRecord& wr = hb[i];
    wr.table = e.table->id();
    wr.key = e.rec->key();
    wr.is_delete = e.kind == WriteKind::kDelete;
    wr.value = wr.is_delete ? std::string_view() : std::string_view(e.val, e.len);
    if (next_ref < refs.size() && refs[next_ref].write == i) {
      // The runs sit in the encoding, made before the install.
      const WorkerImpl::PatchRef& ref = refs[next_ref++];
      wr.is_patch = true;
      wr.base_ts = ref.base_ts;
      wr.value = std::string_view(w_->encoded_buf_).substr(ref.at, ref.len);
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
  if (encoded_len_ == 0) encoded_len_ = Encode<false>(0);
  return {w_->encoded_buf_.data(), encoded_len_};
}

void CommitView::EncodeWithPatches(uint64_t repl_epoch) { encoded_len_ = Encode<true>(repl_epoch); }

template <bool kPatches>
size_t CommitView::Encode(uint64_t repl_epoch) const {
  using namespace txn_encoding;
  std::string& out = w_->encoded_buf_;
  constexpr size_t kFirstSize = 4096;
  if (out.size() < kFirstSize) out.resize(kFirstSize);
  // Everything the loop reads is in locals: its stores go through a char*,
  // which may alias any field, so the compiler reloaded the vectors' and
  // the string's fields on every write.
  const WriteEntry* const entries = writes_.data();
  const size_t n = writes_.size();
  const uint64_t worker = w_->id();
  constexpr uint64_t kWorkerMask = (uint64_t{1} << kWorkerIdBits) - 1;
  char* base = out.data();
  size_t room = out.size();
  size_t at = kTxnHeaderBytes;
  for (size_t i = 0; i < n; ++i) {
    const WriteEntry& e = entries[i];
    const std::string_view key = e.rec->key();
    const bool is_delete = e.kind == WriteKind::kDelete;
    const std::string_view value = is_delete ? std::string_view() : std::string_view(e.val, e.len);
    // A patch is never longer than the value it stands for.
    const size_t need = WriteBytes(key.size(), value.size(), kPatches);
    if (room - at < need) {  // grown only, so rarely
      out.resize(std::max(2 * room, at + need));
      base = out.data();
      room = out.size();
    }
    if constexpr (kPatches) {
      Record* r = e.rec;
      const size_t budget = PatchBudget(e.len);
      if (budget > 0 && !is_delete && !e.created && r->vlen == e.len && r->repl_epoch == repl_epoch &&
          (r->ts & kWorkerMask) == worker && !(r->word.load(std::memory_order_relaxed) & tid::kAbsent)) {
        // The write's frame, then the runs where its value goes; kept
        // only if they fit the budget and say something (no runs: the
        // value is unchanged, sent whole as a put).
        char* p = PutWriteHead(base + at, e.table->id(), kFlagPatch, r->ts, key);
        char* const runs_out = p + sizeof(uint32_t);
        size_t runs = 0;
        // An Update named the words it changed: they are the patch. Else
        // (or if they are too many) the runs come from comparing the values.
        const bool named = e.changed_to != 0 &&
                           WriteRun(value, size_t{e.changed_from} * 8, std::min<size_t>(size_t{e.changed_to} * 8, e.len),
                                    budget, runs_out, &runs);
        if ((named || WritePatch(std::string_view(r->ValuePtrLocked(), r->vlen), value, budget, runs_out, &runs)) &&
            runs > 0) {
          PutScalar(p, static_cast<uint32_t>(runs));
          const size_t runs_at = static_cast<size_t>(p - base) + sizeof(uint32_t);
          w_->patch_refs_.push_back(
              {static_cast<uint32_t>(i), static_cast<uint32_t>(runs_at), static_cast<uint32_t>(runs), r->ts});
          at = runs_at + runs;
          continue;
        }
      }
    }
    const uint8_t flags = is_delete ? kFlagDelete : kFlagPut;
    at = PutWrite(base + at, e.table->id(), flags, 0, key, value) - base;
  }
  PutTxnHeader(base, ts_, static_cast<uint32_t>(n));
  return at;
}

}  // namespace rolis::core
