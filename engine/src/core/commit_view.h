// The CommittedWrites the engine hands its commit hook: the committed
// transaction's write set (sorted, installed), shown as records or encoded
// straight from the write set into the worker's scratch, each built when
// first asked for. With Options::patch_updates the encoding is made before
// the install instead (EncodeWithPatches), while the values it replaces can
// still be read.
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
  // The worker's patch refs are this commit's from here on (none yet).
  CommitView(WorkerImpl* w, const std::vector<WriteEntry>& writes, uint64_t ts) : w_(w), writes_(writes), ts_(ts) {
    w_->patch_refs_.clear();
  }

  // Encodes the transaction now, under its write set's locks and before
  // the install: an update of a value this worker wrote in this
  // replication epoch goes as a patch against it (rolis/value_patch.h),
  // its runs written straight into the encoding. Its followers replay the
  // worker's stream in order, so they hold that value when the patch
  // comes; any other writer's value may still be in flight on another
  // stream.
  void EncodeWithPatches(uint64_t repl_epoch);

  size_t size() const override { return writes_.size(); }
  std::span<const WriteRecord> records() const override;
  std::string_view encoded() const override;

 private:
  // Encodes every write; with kPatches, those that qualify as patches.
  template <bool kPatches>
  size_t Encode(uint64_t repl_epoch) const;

  WorkerImpl* w_;
  const std::vector<WriteEntry>& writes_;
  uint64_t ts_;
  mutable bool records_built_ = false;
  mutable size_t encoded_len_ = 0;  // 0: not encoded yet
};

}  // namespace rolis::core
