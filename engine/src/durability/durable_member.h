// A member's data directory wired into its Replica (docs/replication.md,
// "Durability", and docs/operations.md, "Durability"): the start-up
// recovery, the acceptors' journal and the checkpoints.
//
// Start-up (Open, after Replica::Attach and before Replica::Start):
//   1. Recover the directory (torn tails are cut and reported; any other
//      corruption is an error naming the file and the offset: the member
//      must refuse to start);
//   2. the checkpoint's writes go into the store as they are read;
//   3. the acceptor and control state go into the Replica's acceptors, the
//      journal is opened on the directory and set on them, and the replayer
//      stands after the checkpoint (Replica::StartFromDisk). A member that
//      had state votes at once; an empty directory takes the amnesia path
//      (the start-up probe and a state transfer).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "disk_journal.h"
#include "file_env.h"
#include "member_durability.h"
#include "recovery.h"
#include "replica.h"
#include "rolis/db.h"

namespace rolis::durability {

struct DurableMemberOptions {
  std::string dir;
  uint32_t streams = 1;
  // A member checkpoints once the log grew this much since the last
  // checkpoint (then the log behind it is removed). Open caps the
  // log's segment size by it, since truncation removes whole segments.
  uint64_t checkpoint_every_bytes = uint64_t{256} << 20;
  DiskJournalOptions journal;
  Env* env = nullptr;  // default: Env::Posix()
};

class DurableMember final : public replication::MemberDurability {
 public:
  // Recovers `o.dir` (created if missing) into `db` and `replica`. The
  // error of a directory that cannot be used names the file and the offset
  // and says what to do.
  static Status Open(const DurableMemberOptions& o, Database* db, replication::Replica* replica,
                     std::unique_ptr<DurableMember>* out);
  ~DurableMember() override;

  replication::AcceptorJournal* journal() override { return journal_.get(); }
  Status CheckpointFromLog(const replication::LogCheckpointPosition& pos, std::string* summary) override;
  std::unique_ptr<replication::SnapshotSink> CheckpointSink() override;
  Status ReadNewestCheckpoint(replication::SnapshotSink* sink) override;
  Status NewestCheckpointHeader(replication::SnapshotReply* header) override;
  uint64_t LogBytesSinceCheckpoint() const override;
  uint64_t checkpoint_every_bytes() const override { return o_.checkpoint_every_bytes; }
  std::string Describe() const override;

  bool had_state() const { return had_state_; }
  // One line for the start-up log: checkpoint, slots per stream, torn tails
  // cut, the time it took.
  const std::string& recovery_summary() const { return summary_; }

 private:
  class Sink;  // CheckpointSink
  explicit DurableMember(DurableMemberOptions o) : o_(std::move(o)) {}
  // The checkpoint at `path` is the newest: the log behind `next_slot` goes.
  Status CheckpointWritten(const std::string& path, const std::vector<uint64_t>& next_slot, uint64_t appended);

  DurableMemberOptions o_;
  std::unique_ptr<DiskAcceptorJournal> journal_;
  bool had_state_ = false;
  std::string summary_;
  std::atomic<uint64_t> log_bytes_at_checkpoint_{0};
  std::mutex write_mu_;    // one checkpoint written at a time
  mutable std::mutex mu_;  // checkpoint_ and its count
  std::string checkpoint_;
  uint64_t checkpoints_written_ = 0;
};

// The recovery summary with the slots of every stream ("stream 0: 12 slots
// from 40", ...).
std::string DescribeRecovery(const RecoveredState& rec);

}  // namespace rolis::durability
