// The sending side of the Snapshot call (replication.proto, SnapshotChunk):
// a SnapshotSink that cuts a snapshot into chunks of about 1 MiB of writes
// as its producer hands them over, and writes each chunk to the stream at
// once (docs/replication.md, "Members that lose their memory"). The first
// chunk carries the position (ok, at, per-stream slots, decided); the last
// has `last` set. A refusal before anything was sent is one chunk with ok
// false and the reason, as the last.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

#include "replication/snapshot_sink.h"
#include "rolis/v1/replication.pb.h"

namespace rolis::replication {

class SnapshotChunkSink final : public SnapshotSink {
 public:
  // `write` sends one chunk; false: the reader went away (the producer
  // stops with an error).
  using WriteFn = std::function<bool(const v1::SnapshotChunk&)>;
  explicit SnapshotChunkSink(WriteFn write, size_t chunk_bytes = size_t{1} << 20)
      : write_(std::move(write)), chunk_bytes_(chunk_bytes) {}

  Status Begin(const SnapshotReply& header) override;
  Status Add(uint32_t table, std::string_view key, std::string_view value) override;
  Status End() override;

  bool begun() const { return begun_; }
  // Sends the refusal chunk (only before Begin); false if it could not.
  bool Refuse(const std::string& why);
  uint64_t chunks() const { return chunks_; }

 private:
  Status Flush();

  WriteFn write_;
  const size_t chunk_bytes_;
  v1::SnapshotChunk chunk_;
  size_t bytes_ = 0;  // of the writes in chunk_ (with a per-write allowance)
  bool begun_ = false;
  uint64_t chunks_ = 0;
};

}  // namespace rolis::replication
