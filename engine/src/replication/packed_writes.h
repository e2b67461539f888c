// The writes of a snapshot a member received, packed one after another in
// blocks of about 1 MiB (docs/replication.md, "Members that lose their
// memory"): a state transfer holds the snapshot until its votes are read
// and it is installed, and a record costs here its bytes plus 12, not two
// strings and a vector slot (~72 bytes plus two allocations).
//
// ReceivedSnapshot is the SnapshotSink a state transfer receives into: the
// position, then the writes packed.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "snapshot_sink.h"
#include "types.h"

namespace rolis::replication {

class PackedWrites {
 public:
  struct Record {
    uint32_t table = 0;
    std::string_view key, value;  // valid while the PackedWrites lives, unchanged
  };
  // Where a record is (for an index of them).
  struct Ref {
    uint32_t block = 0;
    uint32_t offset = 0;
  };

  void Add(uint32_t table, std::string_view key, std::string_view value);
  void Clear();
  size_t size() const { return count_; }
  uint64_t bytes() const;  // held, blocks' capacity included
  // Every record added after one before it in (table, key) order.
  bool in_scan_order() const { return ordered_; }

  // Each record in the order added, until fn returns false.
  void ForEach(const std::function<bool(const Record&)>& fn) const;
  std::vector<Ref> Refs() const;
  Record At(Ref r) const;

 private:
  std::vector<std::string> blocks_;
  size_t count_ = 0;
  bool ordered_ = true;
  uint32_t last_table_ = 0;
  std::string last_key_;
};

// (table, key) order, the order of a store's scan.
inline bool InScanOrder(uint32_t ta, std::string_view ka, uint32_t tb, std::string_view kb) {
  return ta != tb ? ta < tb : ka < kb;
}

class ReceivedSnapshot final : public SnapshotSink {
 public:
  // `check` may refuse the position before any write is taken (then the
  // sender is told to stop).
  explicit ReceivedSnapshot(std::function<Status(const SnapshotReply&)> check = nullptr) : check_(std::move(check)) {}

  Status Begin(const SnapshotReply& header) override;
  Status Add(uint32_t table, std::string_view key, std::string_view value) override;
  Status End() override;

  bool complete() const { return ended_; }
  const SnapshotReply& header() const { return header_; }  // writes empty
  const PackedWrites& writes() const { return writes_; }

 private:
  std::function<Status(const SnapshotReply&)> check_;
  SnapshotReply header_;
  PackedWrites writes_;
  bool begun_ = false, ended_ = false;
};

}  // namespace rolis::replication
