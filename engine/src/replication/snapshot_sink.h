// Where a snapshot goes as it is produced (docs/replication.md, "Members
// that lose their memory", "Durability"): the gRPC Snapshot stream
// (rolisd/snapshot_chunks.h), a checkpoint file
// (MemberDurability::CheckpointSink), or the member that catches up
// (ReceivedSnapshot, packed_writes.h; the in-process transport hands it
// the producer's calls directly).
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

}  // namespace rolis::replication
