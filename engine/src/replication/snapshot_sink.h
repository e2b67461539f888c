// Where a snapshot goes as it is produced (docs/replication.md, "Members
// that lose their memory", "Durability"): the gRPC Snapshot stream, a
// checkpoint file, or (tests, the in-process transport) a SnapshotReply.
// A member that serves or checkpoints its store hands each write on as its
// scan reaches it, so the store is never copied whole into memory.
//
// Order of calls: Begin once (the position, with no writes), Add for every
// write in the order the producer has them (a store scan: table, then key),
// End once. A producer that fails returns its error without calling End;
// whether Begin was called tells a consumer if anything went out. An error
// returned by the sink stops the producer (a peer that went away ends the
// scan), which then returns that error.
#pragma once

#include <cstdint>
#include <string_view>
#include <utility>

#include "rolis/status.h"
#include "types.h"

namespace rolis::replication {

class SnapshotSink {
 public:
  virtual ~SnapshotSink() = default;
  // `header`: every field but `writes` (empty); ok is true.
  virtual Status Begin(const SnapshotReply& header) = 0;
  // The views are valid only during the call.
  virtual Status Add(uint32_t table, std::string_view key, std::string_view value) = 0;
  virtual Status End() = 0;
};

// Collects the snapshot whole (small stores, tests, the in-process transport).
class CollectingSnapshotSink final : public SnapshotSink {
 public:
  Status Begin(const SnapshotReply& header) override {
    reply_ = header;
    reply_.writes.clear();
    begun_ = true;
    return Status::OK();
  }
  Status Add(uint32_t table, std::string_view key, std::string_view value) override {
    reply_.writes.push_back(SnapshotWrite{table, std::string(key), std::string(value)});
    return Status::OK();
  }
  Status End() override { return Status::OK(); }

  bool begun() const { return begun_; }
  // What was collected, as a reply: ok only if the producer's status `s` is.
  SnapshotReply Take(const Status& s) {
    if (!s.ok()) {
      SnapshotReply r;
      r.error = s.message();
      return r;
    }
    reply_.ok = true;
    reply_.error.clear();
    return std::move(reply_);
  }

 private:
  SnapshotReply reply_;
  bool begun_ = false;
};

}  // namespace rolis::replication
