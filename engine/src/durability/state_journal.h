// The acceptor-state journal: what a member promised and voted outside the
// streams (docs/replication.md, "Durability"), in <dir>/acceptor.journal:
//   - promises (the epoch),
//   - the control stream's votes (per instance: promised, accepted ballot
//     and value),
//   - decided records learned (with their configuration).
// Every change is a frame appended and fdatasync'ed before the call returns:
// they are rare (failovers, membership changes). When the file passes
// `compact_bytes` it is rewritten with only the current state (temporary
// file, fdatasync, rename, fsync of the directory).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "acceptor_journal.h"
#include "file_env.h"
#include "rolis/status.h"
#include "types.h"

namespace rolis::durability {

// The state the journal holds.
struct AcceptorState {
  uint64_t promised = 0;
  replication::DecidedPtr decided;                    // the newest learned
  std::map<uint64_t, replication::ControlVote> votes;  // by instance, after `decided`
  bool empty() const { return promised == 0 && !decided && votes.empty(); }
  // Applies one change as recovery does: promises only grow, the newest
  // record wins (instances it settles are dropped), a vote replaces the
  // instance's previous one.
  void ApplyPromise(uint64_t epoch);
  void ApplyDecided(const replication::DecidedPtr& d);
  void ApplyVote(const replication::ControlVote& v);
};

struct JournalLoad {
  bool found = false;          // the file exists
  uint64_t frames = 0;
  uint64_t bytes = 0;          // the good prefix
  bool cut = false;            // a torn tail was cut (or would be)
  uint64_t cut_offset = 0;
  uint64_t cut_bytes = 0;
  std::string cut_reason;
};

class StateJournal {
 public:
  static std::string FileName() { return "acceptor.journal"; }

  // Reads <dir>/acceptor.journal into *state. A bad frame with nothing well
  // formed after it is a torn tail: cut off (truncated, if `truncate`) and
  // reported in *load; anything else wrong is an error naming the file and
  // the byte offset.
  static Status Load(Env* env, const std::string& dir, bool truncate, AcceptorState* state, JournalLoad* load);

  // Opens the journal for appending, holding `state` (what Load returned).
  static Status Open(Env* env, const std::string& dir, const AcceptorState& state, uint64_t compact_bytes,
                     std::unique_ptr<StateJournal>* out);

  Status RecordPromise(uint64_t epoch);
  Status RecordControlVote(const replication::ControlVote& v);
  Status RecordDecided(const replication::DecidedPtr& d);
  Status Health() const;
  AcceptorState state() const;
  uint64_t compactions() const;

 private:
  StateJournal(Env* env, std::string dir, uint64_t compact_bytes)
      : env_(env), dir_(std::move(dir)), compact_bytes_(compact_bytes) {}
  Status AppendLocked(const std::string& frame);
  // `apply` to the state, then `frame` appended; the state as before when
  // the append fails.
  Status ApplyAndAppendLocked(const std::function<void(AcceptorState&)>& apply, const std::string& frame);
  Status RewriteLocked();  // compaction: the current state into a new file

  Env* env_;
  std::string dir_;
  uint64_t compact_bytes_;
  mutable std::mutex mu_;
  std::unique_ptr<WritableFile> file_;
  uint64_t size_ = 0;
  AcceptorState state_;
  Status failed_;
  uint64_t compactions_ = 0;
};

}  // namespace rolis::durability
