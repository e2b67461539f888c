#include "disk_journal.h"

namespace rolis::durability {

Status DiskAcceptorJournal::Open(Env* env, const std::string& dir, uint32_t streams, const RecoveredState& recovered,
                                 const DiskJournalOptions& opts, std::unique_ptr<DiskAcceptorJournal>* out) {
  std::unique_ptr<DiskAcceptorJournal> j(new DiskAcceptorJournal);
  if (Status s = StateJournal::Open(env, dir, recovered.acceptor, opts.journal_compact_bytes, &j->state_); !s.ok()) {
    return s;
  }
  const auto* segs = recovered.segments.size() == streams ? &recovered.segments : nullptr;
  if (Status s = StreamLogSet::Open(env, dir, streams, opts.log, segs, &j->log_); !s.ok()) return s;
  *out = std::move(j);
  return Status::OK();
}

void RestoreAcceptors(const RecoveredState& recovered, replication::Acceptor* acceptor,
                      replication::ControlAcceptor* control) {
  acceptor->Reset(recovered.streams, recovered.promised);
  if (recovered.acceptor.decided) control->Learn(recovered.acceptor.decided);
  for (const auto& [instance, vote] : recovered.acceptor.votes) control->Adopt(vote);
}

Status DiskAcceptorJournal::Health() const {
  if (Status s = log_->Health(); !s.ok()) return s;
  return state_->Health();
}

}  // namespace rolis::durability
