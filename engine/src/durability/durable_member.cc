#include "durable_member.h"

#include <algorithm>
#include <cstdio>

#include "checkpoint.h"
#include "derived_checkpoint.h"

namespace rolis::durability {

namespace {

// What to do about a directory that cannot be used (docs/operations.md,
// "Durability": "A data directory that does not recover").
Status Refuse(const std::string& dir, const Status& why) {
  return Status(why.code(), "data directory " + dir + ": " + why.message() +
                                ". The member refuses to start rather than serve wrong data; to discard this "
                                "member's data and let it rejoin by state transfer, move the directory away "
                                "(docs/operations.md, \"Durability\")");
}

}  // namespace

std::string DescribeRecovery(const RecoveredState& rec) {
  std::string s = rec.Summary();
  if (rec.empty) return s;
  s += "; slots per stream:";
  for (size_t t = 0; t < rec.streams.size(); t++) {
    const auto& ss = rec.streams[t];
    s += " " + std::to_string(t) + "=" + std::to_string(ss.slots.size());
    if (ss.first_slot > 0) s += "@" + std::to_string(ss.first_slot);
  }
  return s;
}

Status DurableMember::Open(const DurableMemberOptions& opts, Database* db, replication::Replica* replica,
                           std::unique_ptr<DurableMember>* out) {
  std::unique_ptr<DurableMember> m(new DurableMember(opts));
  DurableMemberOptions& o = m->o_;
  if (!o.env) o.env = Env::Posix();
  // Truncation removes whole segments: a segment is at most a quarter of one
  // stream's share of the checkpoint interval, so each checkpoint frees some.
  const uint64_t share = o.checkpoint_every_bytes / (4 * std::max<uint32_t>(1, o.streams));
  o.journal.log.segment_bytes = std::min(o.journal.log.segment_bytes, std::max<uint64_t>(share, 64 << 10));
  if (Status s = o.env->CreateDir(o.dir); !s.ok()) return Refuse(o.dir, s);

  // The checkpoint's writes go into the store chunk by chunk, at its key:
  // below everything replayed after it, as after a state transfer.
  std::unique_ptr<Worker> worker = db->RegisterWorker();
  if (!worker) return Status::Internal("no engine worker for the recovery");
  RecoveryOptions ro;
  ro.streams = o.streams;
  ro.truncate = true;
  replication::LogKey at{};
  bool header_known = false;
  RecoveredState rec;
  ro.on_writes = [&](std::vector<replication::SnapshotWrite>& chunk) -> Status {
    if (!header_known) {
      at = rec.checkpoint.at;  // the reader fills the header before the first chunk
      header_known = true;
    }
    for (const replication::SnapshotWrite& w : chunk) {
      WriteRecord r{w.table, w.key, w.value, false};
      if (Status s = db->ApplyReplicated(worker.get(), r, at.epoch, at.ts); !s.ok()) {
        return Status(s.code(), "checkpoint write to table " + std::to_string(w.table) + ": " + s.message());
      }
    }
    return Status::OK();
  };
  if (Status s = Recover(o.env, o.dir, ro, &rec); !s.ok()) return Refuse(o.dir, s);
  worker->Quiesce();
  worker.reset();

  if (Status s = DiskAcceptorJournal::Open(o.env, o.dir, o.streams, rec, o.journal, &m->journal_); !s.ok()) {
    return Refuse(o.dir, s);
  }
  m->had_state_ = !rec.empty;
  m->summary_ = DescribeRecovery(rec);
  m->checkpoint_ = rec.checkpoint_path;
  m->log_bytes_at_checkpoint_.store(0);

  replication::Replica::DiskStart start;
  start.had_state = !rec.empty;
  start.checkpoint = rec.checkpoint_path.empty() ? nullptr : &rec.checkpoint;
  start.restore = [&rec](replication::Acceptor* a, replication::ControlAcceptor* c) { RestoreAcceptors(rec, a, c); };
  replica->StartFromDisk(m.get(), start);
  *out = std::move(m);
  return Status::OK();
}

DurableMember::~DurableMember() = default;

Status DurableMember::CheckpointFromLog(const replication::LogCheckpointPosition& pos, std::string* summary) {
  std::lock_guard<std::mutex> wg(write_mu_);
  const uint64_t appended = journal_->log().stats().bytes;
  replication::SnapshotReply header;
  DerivedCheckpointStats st;
  if (Status s = DeriveCheckpoint(o_.env, o_.dir, o_.streams, pos, &header, &st); !s.ok()) return s;
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "%llu keys at %llu.%llu from the previous checkpoint's %llu and %llu transactions of %llu slots "
                "(%llu keys; %llu log bytes read) in %.3f s",
                static_cast<unsigned long long>(st.writes), static_cast<unsigned long long>(header.at.epoch),
                static_cast<unsigned long long>(header.at.ts), static_cast<unsigned long long>(st.base_writes),
                static_cast<unsigned long long>(st.txns), static_cast<unsigned long long>(st.slots),
                static_cast<unsigned long long>(st.delta_keys), static_cast<unsigned long long>(st.log_bytes),
                st.seconds);
  if (summary) *summary = buf;
  return CheckpointWritten(st.path, header.next_slot, appended);
}

Status DurableMember::CheckpointWritten(const std::string& path, const std::vector<uint64_t>& next_slot,
                                        uint64_t appended) {
  // The log behind it is covered: whole segments below every stream's next
  // slot go (the one being written stays).
  for (uint32_t t = 0; t < o_.streams && t < next_slot.size(); t++) {
    if (Status s = journal_->log().RemoveBelow(t, next_slot[t]); !s.ok()) return s;
  }
  log_bytes_at_checkpoint_.store(appended);
  std::lock_guard<std::mutex> g(mu_);
  checkpoint_ = path;
  checkpoints_written_++;
  return Status::OK();
}

// A checkpoint written as the snapshot's writes arrive (CheckpointSink).
class DurableMember::Sink final : public replication::SnapshotSink {
 public:
  explicit Sink(DurableMember* m) : m_(m) {}

  Status Begin(const replication::SnapshotReply& header) override {
    turn_ = std::unique_lock<std::mutex>(m_->write_mu_);
    appended_ = m_->journal_->log().stats().bytes;
    next_slot_ = header.next_slot;
    return CheckpointWriter::Begin(m_->o_.env, m_->o_.dir, header, &w_);
  }
  Status Add(uint32_t table, std::string_view key, std::string_view value) override {
    if (!w_) return Status::FailedPrecondition("checkpoint not begun");
    return w_->Add(table, key, value);
  }
  Status End() override {
    if (!w_) return Status::FailedPrecondition("checkpoint not begun");
    std::string path;
    if (Status s = w_->Commit(&path); !s.ok()) return s;
    return m_->CheckpointWritten(path, next_slot_, appended_);
  }

 private:
  DurableMember* const m_;
  std::unique_lock<std::mutex> turn_;  // m_->write_mu_, from Begin
  uint64_t appended_ = 0;
  std::vector<uint64_t> next_slot_;
  std::unique_ptr<CheckpointWriter> w_;  // declared after turn_: removed (if not committed) while it is held
};

std::unique_ptr<replication::SnapshotSink> DurableMember::CheckpointSink() { return std::make_unique<Sink>(this); }

Status DurableMember::ReadNewestCheckpoint(replication::SnapshotSink* sink) {
  // Not removed while read: a newer checkpoint waits until the sink has
  // this one (a state transfer's stream to its peer).
  std::lock_guard<std::mutex> wg(write_mu_);
  std::string path;
  if (Status s = FindNewestCheckpoint(o_.env, o_.dir, &path); !s.ok()) return s;
  if (path.empty()) return Status::NotFound("no checkpoint");
  std::unique_ptr<CheckpointReader> r;
  if (Status s = CheckpointReader::Open(o_.env, path, &r); !s.ok()) return s;
  replication::SnapshotReply header = r->header();
  header.ok = true;
  if (Status s = sink->Begin(header); !s.ok()) return s;
  for (bool done = false; !done;) {
    if (Status s = r->NextViews([sink](uint32_t t, std::string_view k, std::string_view v) { return sink->Add(t, k, v); },
                                &done);
        !s.ok()) {
      return s;
    }
  }
  return sink->End();
}

Status DurableMember::NewestCheckpointHeader(replication::SnapshotReply* header) {
  std::lock_guard<std::mutex> wg(write_mu_);
  std::string path;
  if (Status s = FindNewestCheckpoint(o_.env, o_.dir, &path); !s.ok()) return s;
  if (path.empty()) return Status::NotFound("no checkpoint");
  std::unique_ptr<CheckpointReader> r;
  if (Status s = CheckpointReader::Open(o_.env, path, &r); !s.ok()) return s;
  *header = r->header();
  header->ok = true;
  return Status::OK();
}

uint64_t DurableMember::LogBytesSinceCheckpoint() const {
  const uint64_t appended = journal_->log().stats().bytes;
  const uint64_t at = log_bytes_at_checkpoint_.load();
  return appended > at ? appended - at : 0;
}

std::string DurableMember::Describe() const {
  std::lock_guard<std::mutex> g(mu_);
  return "recovered: " + summary_ + "; checkpoints written since: " + std::to_string(checkpoints_written_) +
         (checkpoint_.empty() ? std::string() : ", newest " + checkpoint_);
}

}  // namespace rolis::durability
