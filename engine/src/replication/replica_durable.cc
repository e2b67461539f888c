// Replica: what it does with a data directory (docs/replication.md,
// "Durability"). Kept apart from replica.cc: the start from disk, the
// durable replies and the leader's own durable vote, checkpoints, and the
// data-loss report of a member that came back empty.

#include "replica.h"
#include "rolis/log.h"

namespace rolis::replication {

namespace {

// How long a connection thread waits for a group of accepts to become
// durable before it replies anyway (the leader then learns of them with a
// later reply; a disk this slow is reported by the journal's health).
constexpr std::chrono::milliseconds kSettleWait{500};

// Passes a snapshot on to `out`, noting its position, how many writes went
// through and whether it was begun (for the log, and to tell a refusal
// from a failure), and checking each write's header first when asked.
class ObservingSink final : public SnapshotSink {
 public:
  explicit ObservingSink(SnapshotSink* out, std::function<Status(const SnapshotReply&)> check = nullptr)
      : out_(out), check_(std::move(check)) {}
  Status Begin(const SnapshotReply& header) override {
    if (check_) {
      if (Status s = check_(header); !s.ok()) return s;
    }
    at_ = header.at;
    begun_ = true;
    return out_->Begin(header);
  }
  Status Add(uint32_t table, std::string_view key, std::string_view value) override {
    writes_++;
    return out_->Add(table, key, value);
  }
  Status End() override { return out_->End(); }

  bool begun() const { return begun_; }
  LogKey at() const { return at_; }
  uint64_t writes() const { return writes_; }

 private:
  SnapshotSink* const out_;
  const std::function<Status(const SnapshotReply&)> check_;
  bool begun_ = false;
  LogKey at_{};
  uint64_t writes_ = 0;
};

}  // namespace

void Replica::StartFromDisk(MemberDurability* durability, const DiskStart& start) {
  durability_ = durability;
  if (start.restore) start.restore(&acceptor_, &control_);
  AcceptorJournal* journal = durability->journal();
  acceptor_.SetJournal(journal);
  control_.SetJournal(journal);
  leader_.SetDurable(true);
  StateTransfer::DurabilityHooks hooks;
  hooks.transferred = [this](const ReceivedSnapshot& snap) {
    CheckpointAfterTransfer(snap);
    SetDataLoss("");
  };
  hooks.idle = [this] { MaybeCheckpoint(); };
  hooks.cannot_catch_up = [this](size_t empty) { NoteCannotCatchUp(empty); };
  transfer_.SetDurabilityHooks(std::move(hooks));
  journal->SetDurableListener([this](uint32_t) { leader_.OnDurable(); });
  if (start.checkpoint) {
    auto hold = replayer_.Hold();
    replayer_.RestartFromCheckpointLocked(*start.checkpoint);
  }
  if (DecidedPtr d = Latest()) member_.Know(member_.ConfigOf(d));
  if (start.had_state) {
    // The same acceptor as before the restart: it votes at once. Its store
    // is the checkpoint; the log after it is replayed once a leader's G
    // covers it (the next failover decides what above the last decided
    // record survives).
    member_.voting.store(true);
    member_.role.store(Role::kFollower);
  }
}

void Replica::SettleAccepts(const std::vector<AcceptedRef>& accepted, std::vector<AcceptReply>* replies) {
  if (!durability_ || accepted.size() != replies->size()) return;
  const auto deadline = SteadyClock::now() + kSettleWait;
  std::vector<bool> waited(opts_.streams, false);
  for (size_t i = 0; i < accepted.size(); i++) {
    const uint32_t t = accepted[i].stream;
    if (!(*replies)[i].ok || t >= opts_.streams || waited[t]) continue;
    waited[t] = true;
    (void)acceptor_.AwaitDurable(t, deadline);
  }
  for (size_t i = 0; i < accepted.size(); i++) {
    AcceptReply& r = (*replies)[i];
    const AcceptedRef& a = accepted[i];
    if (!r.ok || a.stream >= opts_.streams) continue;
    r.need_from = std::max(r.need_from, acceptor_.DurableNeedFrom(a.stream, a.epoch, a.log_start));
  }
}

void Replica::CheckpointAfterTransfer(const ReceivedSnapshot& snap) {
  if (!durability_) return;
  // The log on disk lacks the slots below the snapshot: without a
  // checkpoint of it a restart would find a gap there.
  StreamAndLogCheckpoint(
      [&snap](SnapshotSink* sink) {
        if (Status s = sink->Begin(snap.header()); !s.ok()) return s;
        Status s;
        snap.writes().ForEach([&](const PackedWrites::Record& r) {
          s = sink->Add(r.table, r.key, r.value);
          return s.ok();
        });
        return s.ok() ? sink->End() : s;
      },
      SteadyClock::now(), "checkpoint of the state transfer", "");
}

void Replica::StreamAndLogCheckpoint(const std::function<Status(SnapshotSink*)>& produce,
                                     SteadyClock::time_point t0, const char* what, const char* after) {
  std::unique_ptr<SnapshotSink> file = durability_->CheckpointSink();
  ObservingSink sink(file.get());
  const Status s = produce(&sink);
  file.reset();  // an unfinished checkpoint's temporary goes, and the next one may begin
  if (!sink.begun()) return;  // refused (not caught up, not now): tried again later
  const double secs = std::chrono::duration<double>(SteadyClock::now() - t0).count();
  if (s.ok()) {
    log::Printf(log::Level::kInfo, "durability",
                "rolis-repl %u: %s written: %llu keys at %lu.%lu in %.3f s%s", opts_.id, what,
                static_cast<unsigned long long>(sink.writes()), static_cast<unsigned long>(sink.at().epoch),
                static_cast<unsigned long>(sink.at().ts), secs, after);
  } else {
    log::Printf(log::Level::kError, "durability", "rolis-repl %u: %s failed: %s", opts_.id, what, s.message().c_str());
  }
}

void Replica::MaybeCheckpoint() {
  if (!durability_ || !db_) return;
  if (durability_->LogBytesSinceCheckpoint() < durability_->checkpoint_every_bytes()) return;
  const auto now = SteadyClock::now();
  if (now - last_checkpoint_try_ < std::chrono::seconds(1)) return;
  last_checkpoint_try_ = now;
  const auto t0 = SteadyClock::now();
  if (member_.role.load() == Role::kLeader) {
    // Derived from its disk: no worker stops, no store is scanned.
    const Status s = LeaderCheckpointFromLog("leader checkpoint");
    if (s.ok() || s.code() != StatusCode::kFailedPrecondition) return;
    // The log since the previous checkpoint is not all of this epoch (that
    // checkpoint predates the epoch's log): once per epoch, the leader's
    // snapshot (its writes pause briefly) becomes the base instead.
    StreamAndLogCheckpoint([this](SnapshotSink* sink) { return snapshots_.Serve(sink); }, t0,
                           "leader checkpoint from its snapshot", "; the log behind it removed");
    return;
  }
  // A caught-up follower's snapshot (replay pauses only while it is fixed),
  // written to the file as its scan goes.
  StreamAndLogCheckpoint([this](SnapshotSink* sink) { return snapshots_.ForCheckpoint(sink); }, t0, "checkpoint",
                         "; the log behind it removed");
}

Status Replica::LeaderCheckpointFromLog(const char* what) {
  LogCheckpointPosition pos;
  Status s;
  std::string summary;
  if (std::string why = leader_.CheckpointPosition(&pos); !why.empty()) {
    s = Status::Aborted(why);  // not now: tried again later
  } else {
    s = durability_->CheckpointFromLog(pos, &summary);
    if (s.IsNotFound()) return Status::OK();  // the newest checkpoint is at G already
  }
  std::lock_guard<std::mutex> g(checkpoint_log_mu_);
  if (s.ok()) {
    last_checkpoint_error_.clear();
    log::Printf(log::Level::kInfo, "durability",
                "rolis-repl %u: %s written from the log: %s; the log behind it removed", opts_.id, what,
                summary.c_str());
    return s;
  }
  if (s.message() != last_checkpoint_error_) {
    last_checkpoint_error_ = s.message();
    log::Printf(log::Level::kWarn, "durability",
                "rolis-repl %u: %s not derived from the log: %s", opts_.id, what, s.message().c_str());
  }
  return s;
}

Status Replica::HandleSnapshot(const SnapshotMsg&, SnapshotSink* sink) {
  if (refuse_snapshots_for_test_.load()) {
    return Status::FailedPrecondition("this member refuses snapshots (test hook ROLIS_TEST_REFUSE_SNAPSHOTS)");
  }
  if (durability_ && db_ && member_.role.load() == Role::kLeader) {
    bool begun = false;
    Status s = LeaderCheckpointSnapshot(sink, &begun);
    if (s.ok() || begun) return s;  // once begun, the peer has part of it: it asks again
    log::Printf(log::Level::kWarn, "durability",
                "rolis-repl %u: no checkpoint to serve a state transfer from (%s): the leader's snapshot",
                opts_.id, s.message().c_str());
  }
  return snapshots_.Serve(sink);
}

Status Replica::LeaderCheckpointSnapshot(SnapshotSink* sink, bool* begun) {
  // The leader's newest checkpoint, if it is of this epoch and its log
  // still holds every slot after it (the member adopts them from the votes
  // of a majority, and the leader resends them); else one derived now. It
  // goes to the peer one chunk of the file at a time.
  *begun = false;
  SnapshotReply h;
  Status s = durability_->NewestCheckpointHeader(&h);
  if (!s.ok() || !leader_.LogFollows(h)) {
    if (Status d = LeaderCheckpointFromLog("checkpoint for a state transfer"); !d.ok()) return d;
  }
  const auto t0 = SteadyClock::now();
  ObservingSink observed(sink, [this](const SnapshotReply& header) {
    if (leader_.LogFollows(header)) return Status::OK();
    return Status::FailedPrecondition(
        "the newest checkpoint is not of this epoch, or the log no longer holds what follows it");
  });
  s = durability_->ReadNewestCheckpoint(&observed);
  *begun = observed.begun();
  if (!s.ok()) return s;
  checkpoint_snapshots_.fetch_add(1);
  log::Printf(log::Level::kInfo, "durability",
              "rolis-repl %u: served a state transfer from its checkpoint: %llu keys at %lu.%lu, read and sent in %.3f s (no "
              "write paused)",
              opts_.id, static_cast<unsigned long long>(observed.writes()),
              static_cast<unsigned long>(observed.at().epoch), static_cast<unsigned long>(observed.at().ts),
              std::chrono::duration<double>(SteadyClock::now() - t0).count());
  return Status::OK();
}

void Replica::NoteCannotCatchUp(size_t empty_members) {
  // The probe returned as soon as a member with state answered: ask every
  // member again, waiting for all, before judging (this runs only while
  // the member cannot catch up).
  const size_t majority = opts_.members.size() / 2 + 1;
  if (empty_members < majority) {
    PromiseMsg pm;
    pm.from = opts_.id;
    pm.peek = true;
    pm.from_slot = NoSlots(opts_.streams);  // only `virgin` is read
    empty_members = 1;
    for (const auto& [id, r] : calls_.PromiseAll(pm, false)) {
      if (r.virgin) empty_members++;
    }
  }
  if (empty_members < majority) return;
  SetDataLoss(std::to_string(empty_members) + " of the " + std::to_string(opts_.members.size()) +
              " members came back without state (this one included) while another holds the cluster's data: "
              "no majority holds it, so this member neither votes nor serves until a member's data directory "
              "comes back or an operator decides to start anew (docs/operations.md, \"Durability\")");
}

void Replica::SetDataLoss(const std::string& why) {
  std::lock_guard<std::mutex> g(data_loss_mu_);
  if (why == data_loss_) return;
  if (!why.empty()) {
    log::Printf(log::Level::kError, "durability", "rolis-repl %u: DATA LOSS SUSPECTED: %s", opts_.id, why.c_str());
  } else if (!data_loss_.empty()) {
    log::Printf(log::Level::kInfo, "durability", "rolis-repl %u: data loss no longer suspected", opts_.id);
  }
  data_loss_ = why;
}

void Replica::FillDurabilityStatus(ReplicaStatus* st) const {
  st->durable = durability_ != nullptr;
  if (durability_) st->durability = durability_->Describe();
  std::lock_guard<std::mutex> g(data_loss_mu_);
  st->data_loss_suspected = !data_loss_.empty();
  st->data_loss_reason = data_loss_;
}

}  // namespace rolis::replication
