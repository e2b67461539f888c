// What a Replica keeps on its data directory (docs/replication.md,
// "Durability"): the acceptors' journal, and checkpoints of the store that
// the log is truncated behind. rolis_durability implements it
// (engine/src/durability/durable_member.h); without one a member keeps
// everything in memory, as the paper's members do.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "acceptor_journal.h"
#include "rolis/status.h"
#include "snapshot_sink.h"
#include "types.h"

namespace rolis::replication {

// Where a checkpoint derived from the log stands (docs/replication.md,
// "Durability", "Checkpoints"): every transaction at or below `watermark`
// that is valid under `decided` and held in a slot below `end` of its
// stream, those slots chosen at ballot `epoch` and durable on this disk.
struct LogCheckpointPosition {
  uint64_t epoch = 0;
  DecidedPtr decided;
  LogKey watermark{};
  std::vector<uint64_t> end;  // per stream
};

class MemberDurability {
 public:
  virtual ~MemberDurability() = default;

  // Where the acceptors make their votes durable (set on them before any
  // Accept or Promise).
  virtual AcceptorJournal* journal() = 0;

  // Writes a snapshot (a follower's, the leader's, or the one a state
  // transfer installed) as its writes arrive: Begin starts the checkpoint,
  // End makes it the newest complete checkpoint and removes the log
  // segments whose slots are all below its next slots; dropped without End,
  // nothing changes. One checkpoint is written at a time: the sink holds
  // that turn from Begin until End or its end.
  virtual std::unique_ptr<SnapshotSink> CheckpointSink() = 0;

  // Derives the next checkpoint from the disk alone: the newest complete
  // checkpoint merged with the log's transactions up to `pos` (no worker
  // stops, no store scan), then removes the log behind it. NOT_FOUND when
  // there is nothing new to cover. *summary: one line for the log.
  virtual Status CheckpointFromLog(const LogCheckpointPosition& pos, std::string* summary) = 0;
  // The newest complete checkpoint into `sink`, one chunk of the file at a
  // time (a state transfer served from it); NOT_FOUND, before any call of
  // the sink, if there is none. An error of the sink's Begin is returned
  // before anything else is read.
  virtual Status ReadNewestCheckpoint(SnapshotSink* sink) = 0;
  // Its header only (writes empty); NOT_FOUND if there is none.
  virtual Status NewestCheckpointHeader(SnapshotReply* header) = 0;

  // Bytes appended to the log since the newest checkpoint (or the start):
  // a member takes the next checkpoint once this passes a bound.
  virtual uint64_t LogBytesSinceCheckpoint() const = 0;
  virtual uint64_t checkpoint_every_bytes() const = 0;

  // One line for the status: the start-up recovery and the newest checkpoint.
  virtual std::string Describe() const = 0;
};

}  // namespace rolis::replication
