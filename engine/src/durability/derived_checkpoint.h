// A checkpoint derived from the disk alone (docs/replication.md,
// "Durability", "Checkpoints"): the newest complete checkpoint merged with
// the log's transactions up to a decided watermark W, streamed into a new
// checkpoint. It reads no store and stops no worker, so a leader, whose
// store holds transactions above W, checkpoints the same way a follower can.
//
// What goes in: per stream, the slots from the previous checkpoint's
// next_slot (skipping its `skip` transactions) below `end`, each held on
// this disk at ballot `epoch` (the latest frame of the slot); of their
// transactions, those above the previous checkpoint's key, at or below W
// and valid under the decided record, as follower replay would apply them
// (replayer.cc: FillHead, ReplayOnce). A stream stops at its first entry
// above W (the new next_slot and skip). Writes of one key fold in key
// order: a put or delete replaces, a patch (rolis/value_patch.h) applies to
// the value before it, which must be at or above its base.
//
// Memory: the delta only (the folded writes of the log since the previous
// checkpoint); the previous checkpoint is streamed chunk by chunk.
#pragma once

#include <cstdint>
#include <string>

#include "file_env.h"
#include "member_durability.h"
#include "rolis/status.h"
#include "types.h"

namespace rolis::durability {

struct DerivedCheckpointStats {
  std::string previous;        // the checkpoint it started from (empty: none)
  std::string path;            // the one written
  uint64_t base_writes = 0;    // writes read from the previous checkpoint
  uint64_t slots = 0;          // slots read from the log below the new position
  uint64_t txns = 0;           // transactions merged
  uint64_t delta_keys = 0;     // distinct keys they wrote
  uint64_t writes = 0;         // writes in the new checkpoint
  uint64_t log_bytes = 0;      // bytes of segment files read
  double seconds = 0;
  double log_seconds = 0;     // of which reading the log and folding the delta
  double commit_seconds = 0;  // ... and the new file's fdatasync, rename and directory sync
};

// Writes the checkpoint (temporary file, fdatasync, rename, fsync of the
// directory; the older one goes) and returns its header in *header.
// NOT_FOUND when W is not past the previous checkpoint's key (nothing to
// do). Any slot missing or not at ballot `epoch`, a batch that does not
// decode or a patch that does not apply is an error, and no checkpoint is
// written: the caller tries again later or takes another way.
Status DeriveCheckpoint(Env* env, const std::string& data_dir, uint32_t streams,
                        const replication::LogCheckpointPosition& pos, replication::SnapshotReply* header,
                        DerivedCheckpointStats* stats);

}  // namespace rolis::durability
