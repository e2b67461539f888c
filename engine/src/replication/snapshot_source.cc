#include "snapshot_source.h"

#include <string_view>
#include <thread>

#include "replica_common.h"
#include "stale_keys.h"
#include "rolis/log.h"

namespace rolis::replication {

void SnapshotSource::Attach(Database* db) {
  db_ = db;
  worker_ = db_->RegisterWorker();
}

void SnapshotSource::ReleaseWorker() {
  std::lock_guard<std::mutex> g(mu_);
  worker_.reset();
}

Status SnapshotSource::Serve(SnapshotSink* sink) {
  if (member_->role.load() == Role::kLeader) return LeaderSnapshot(sink);
  return FollowerSnapshot(sink);
}

bool SnapshotSource::AwaitEngineSnapshot(std::chrono::milliseconds limit) {
  const uint64_t e0 = db_->Stats().current_epoch;
  const auto deadline = SteadyClock::now() + limit;
  while (db_->Stats().snapshot_epoch < e0) {
    if (SteadyClock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

Status SnapshotSource::ScanInto(std::unique_ptr<Transaction> txn, const SnapshotReply& header, SnapshotSink* sink,
                                uint64_t* writes) {
  *writes = 0;
  Status s = sink->Begin(header);
  Status refused;  // the sink's error, told from the scan's
  for (TableId id = 0; s.ok(); id++) {
    Table* table = nullptr;
    if (!db_->GetTable(id, &table).ok()) break;
    s = txn->Scan(table, "", "", 0, [&](std::string_view k, std::string_view v) {
      refused = sink->Add(id, k, v);
      if (!refused.ok()) return false;
      ++*writes;
      return true;
    });
    if (!refused.ok()) s = refused;
    else if (!s.ok()) s = Status(s.code(), "scan: " + s.message());
  }
  // The transaction ends before the sink's End (a checkpoint's fsync and
  // rename): the scan is what needs the engine's snapshot.
  (void)txn->Commit();
  txn.reset();
  worker_->Quiesce();
  if (!s.ok()) return s;
  return sink->End();
}

Status SnapshotSource::FollowerSnapshot(SnapshotSink* sink) {
  if (!member_->voting.load() || member_->dirty.load() || member_->needs_transfer.load() ||
      member_->role.load() != Role::kFollower || !db_) {
    return Status::FailedPrecondition("not a caught-up follower");
  }
  std::lock_guard<std::mutex> sg(mu_);
  SnapshotReply header;
  std::unique_ptr<Transaction> txn;
  {
    // Replay pauses while the snapshot is fixed: the store then holds exactly
    // the transactions replay applied (a prefix of the key order).
    auto hold = replayer_->Hold();
    if (!replayer_->FollowingLocked()) return Status::FailedPrecondition("not following an open leader");
    replayer_->SnapshotPositionLocked(&header);
    header.decided = control_->latest();
    // A read-only transaction sees the engine's snapshot epoch: wait until
    // it covers every write replay made.
    replayer_->QuiesceLocked();
    if (!AwaitEngineSnapshot(std::chrono::seconds(2))) {
      return Status::FailedPrecondition("the engine's snapshot epoch does not advance");
    }
    txn = worker_->BeginReadOnly();
  }
  header.ok = true;
  uint64_t writes = 0;
  return ScanInto(std::move(txn), header, sink, &writes);
}

Status SnapshotSource::LeaderSnapshot(SnapshotSink* sink) {
  // Only when no caught-up follower can give one (a member asks the leader
  // last): in a cluster of three, one member down and the other leading.
  // Its writes pause while the position is fixed (LeaderStreams::HoldForSnapshot).
  if (!db_) return Status::FailedPrecondition("no engine attached");
  std::lock_guard<std::mutex> sg(mu_);
  SnapshotReply header;
  std::unique_ptr<HeldWorkers> held;
  if (std::string err = leader_->HoldForSnapshot(&header, &held); !err.empty()) {
    return Status::FailedPrecondition(err);
  }
  if (!header.decided) header.decided = control_->latest();
  // An open client transaction holds the engine's snapshot epoch back, and
  // with its worker held it cannot end: under interactive load there is
  // nearly always one (a deposed leader waited 15 s to 30 s+ for a moment
  // without). They are aborted, as a failover would (clients retry), and the
  // held workers quiesced (an idle one still publishes its last epoch).
  const size_t aborted = unpin_snapshot_epoch_ ? unpin_snapshot_epoch_() : 0;
  if (!AwaitEngineSnapshot(std::chrono::milliseconds(250))) {
    held->Release();
    return Status::FailedPrecondition("the leader's snapshot: the engine's snapshot epoch does not advance");
  }
  std::unique_ptr<Transaction> txn = worker_->BeginReadOnly();
  held->Release();  // later commits are in later engine epochs: the snapshot does not see them
  header.ok = true;
  uint64_t writes = 0;
  if (Status s = ScanInto(std::move(txn), header, sink, &writes); !s.ok()) {
    return Status(s.code(), "the leader's snapshot: " + s.message());
  }
  leader_snapshots_.fetch_add(1);
  log::Printf(log::Level::kInfo, "replication",
              "rolis-repl %u: served a snapshot of %llu keys at %s (no caught-up follower could; %zu open "
              "transactions aborted)",
              member_->self(), static_cast<unsigned long long>(writes), KeyStr(header.at).c_str(), aborted);
  return Status::OK();
}

bool SnapshotSource::KeysNotInLocked(const PackedWrites& snapshot,
                                     std::vector<std::pair<TableId, std::string>>* stale) {
  if (!AwaitEngineSnapshot(std::chrono::seconds(2))) return false;
  auto txn = worker_->BeginReadOnly();
  bool sorted = false;
  const Status s = KeysNotInSnapshot(db_, txn.get(), snapshot, stale, &sorted);
  (void)txn->Commit();
  txn.reset();
  worker_->Quiesce();
  // A store scan and a checkpoint both give (table, key) order.
  if (sorted) {
    log::Printf(log::Level::kWarn, "replication",
                "rolis-repl %u: the snapshot's %zu writes were not in (table, key) order: walked a sorted index",
                member_->self(), snapshot.size());
  }
  if (!s.ok()) {
    log::Printf(log::Level::kWarn, "replication", "rolis-repl %u: scan for the keys the snapshot lacks: %s",
                member_->self(), s.message().c_str());
  }
  return true;
}

}  // namespace rolis::replication
