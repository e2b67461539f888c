// The recovery reader: what a member's data directory holds, read at start
// (docs/replication.md, "Durability", "Recovery"):
//   - the newest complete checkpoint (its writes streamed to a callback),
//   - the acceptor-state journal (promise, control votes, decided record),
//   - every stream's log: per slot the latest frame (ballots only grow),
//     from the checkpoint's next slot on.
// A torn or corrupt frame at the tail of the newest segment of a stream (or
// of the journal) is cut off and reported; corruption anywhere else is an
// error naming the file and the byte offset, and the member must refuse to
// start. A directory with none of it is reported as empty (a member that
// never held state), distinct from one that has state.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "file_env.h"
#include "rolis/status.h"
#include "state_journal.h"
#include "stream_log.h"
#include "types.h"

namespace rolis::durability {

struct CutTail {
  std::string file;
  uint64_t offset = 0;  // where the file now ends
  uint64_t bytes = 0;   // how many were cut
  std::string reason;
};

struct RecoveryStats {
  uint64_t segments = 0;
  uint64_t slot_frames = 0;     // slot frames read
  uint64_t log_bytes = 0;       // bytes of good frames in the logs
  uint64_t slots = 0;           // slots recovered (latest frame per slot, at or after the checkpoint)
  uint64_t superseded = 0;      // frames replaced by a later one of the same slot, or below the checkpoint
  uint64_t ballot_regressions = 0;  // a later frame of a slot with a lower ballot (kept the higher)
  uint64_t checkpoint_writes = 0;
  uint64_t journal_frames = 0;
  std::vector<CutTail> cut;
  double seconds = 0;
};

struct RecoveryOptions {
  uint32_t streams = 0;          // streams the member runs
  bool truncate = true;          // cut torn tails and remove temporaries (false: only report)
  // Receives the checkpoint's writes, chunk by chunk (it may move them out).
  // Without it they are read, checked and dropped.
  std::function<Status(std::vector<replication::SnapshotWrite>&)> on_writes;
};

struct RecoveredState {
  bool empty = true;                    // no checkpoint, no journal state, no slot
  std::string checkpoint_path;          // empty: no checkpoint
  replication::SnapshotReply checkpoint;  // its header (writes go to on_writes)
  AcceptorState acceptor;               // from the journal
  uint64_t promised = 0;                // the journal's promise and every slot's ballot
  // Per stream: first_slot, base_key and base_barrier from the checkpoint
  // (0 without one), and the slots at or after first_slot, by index.
  std::vector<replication::StreamSlots> streams;
  std::vector<std::vector<SegmentInfo>> segments;  // for StreamLogSet::Open
  RecoveryStats stats;
  std::string Summary() const;  // one line for the log
};

Status Recover(Env* env, const std::string& dir, const RecoveryOptions& opts, RecoveredState* out);

}  // namespace rolis::durability
