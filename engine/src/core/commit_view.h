// The CommittedWrites the engine hands its commit hook: the committed
// transaction's write set (sorted, installed) and its patches
// (Options::patch_updates), shown as records or encoded straight from the
// write set, each built when first asked for, into the worker's scratch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "rolis/db.h"
#include "txn_sets.h"
#include "worker_impl.h"

namespace rolis::core {

class CommitView final : public CommittedWrites {
 public:
  CommitView(WorkerImpl* w, const std::vector<WriteEntry>& writes, uint64_t ts) : w_(w), writes_(writes), ts_(ts) {}

  size_t size() const override { return writes_.size(); }
  std::span<const WriteRecord> records() const override;
  std::string_view encoded() const override;

 private:
  // The patch made for write i, or nullptr when it goes whole.
  const WorkerImpl::PatchRef* PatchOf(size_t i) const {
    const auto& refs = w_->patch_refs_;
    return i < refs.size() && refs[i].len > 0 ? &refs[i] : nullptr;
  }
  std::string_view PatchBytes(const WorkerImpl::PatchRef& p) const {
    return std::string_view(w_->patch_buf_).substr(p.at, p.len);
  }

  WorkerImpl* w_;
  const std::vector<WriteEntry>& writes_;
  uint64_t ts_;
  mutable bool records_built_ = false;
  mutable size_t encoded_len_ = 0;  // 0: not encoded yet
};

}  // namespace rolis::core
