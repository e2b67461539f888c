// The AcceptorJournal (engine/src/replication/acceptor_journal.h) on a data
// directory: accepted slots go to the per-stream segmented log with group
// commit (stream_log.h); promises, control votes and decided records to the
// acceptor-state journal (state_journal.h). Open it after Recover
// (recovery.h) on the same directory.
#pragma once

#include <memory>
#include <string>

#include "acceptor.h"
#include "acceptor_journal.h"
#include "file_env.h"
#include "recovery.h"
#include "state_journal.h"
#include "stream_log.h"

namespace rolis::durability {

struct DiskJournalOptions {
  StreamLogOptions log;
  uint64_t journal_compact_bytes = 1 << 20;
};

// Loads what Recover found into fresh acceptors, before SetJournal (so
// nothing is written again): every stream's slots, base and the promise;
// the newest decided record and the control votes after it.
void RestoreAcceptors(const RecoveredState& recovered, replication::Acceptor* acceptor,
                      replication::ControlAcceptor* control);

class DiskAcceptorJournal : public replication::AcceptorJournal {
 public:
  static Status Open(Env* env, const std::string& dir, uint32_t streams, const RecoveredState& recovered,
                     const DiskJournalOptions& opts, std::unique_ptr<DiskAcceptorJournal>* out);

  Status RecordPromise(uint64_t epoch) override { return state_->RecordPromise(epoch); }
  Status AppendSlot(uint32_t stream, const replication::Slot& slot, uint64_t* position) override {
    return log_->Append(stream, slot, position);
  }
  uint64_t DurableThrough(uint32_t stream) const override { return log_->DurableThrough(stream); }
  Status WaitDurable(uint32_t stream, uint64_t position, replication::SteadyClock::time_point deadline) override {
    return log_->WaitDurable(stream, position, deadline);
  }
  void SetDurableListener(std::function<void(uint32_t stream)> listener) override {
    log_->SetListener(std::move(listener));
  }
  Status RecordControlVote(const replication::ControlVote& vote) override { return state_->RecordControlVote(vote); }
  Status RecordDecided(const replication::DecidedPtr& decided) override { return state_->RecordDecided(decided); }
  Status Health() const override;

  StreamLogSet& log() { return *log_; }
  StateJournal& state() { return *state_; }

 private:
  std::unique_ptr<StreamLogSet> log_;
  std::unique_ptr<StateJournal> state_;
};

}  // namespace rolis::durability
