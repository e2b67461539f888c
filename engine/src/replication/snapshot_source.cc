#include "snapshot_source.h"

#include <thread>

#include "replica_common.h"
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

SnapshotReply SnapshotSource::Serve() {
  if (member_->role.load() == Role::kLeader) return LeaderSnapshot();
  return FollowerSnapshot();
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

Status SnapshotSource::ScanStore(Transaction* txn, std::vector<SnapshotWrite>* out) {
  for (TableId id = 0;; id++) {
    Table* table = nullptr;
    if (!db_->GetTable(id, &table).ok()) break;
    Status s = txn->Scan(table, "", "", 0, [&](std::string_view k, std::string_view v) {
      out->push_back(SnapshotWrite{id, std::string(k), std::string(v)});
      return true;
    });
    if (!s.ok()) {
      out->clear();
      return Status(s.code(), "scan: " + s.message());
    }
  }
  return Status::OK();
}

SnapshotReply SnapshotSource::FollowerSnapshot() {
  SnapshotReply r;
  if (!member_->voting.load() || member_->dirty.load() || member_->needs_transfer.load() ||
      member_->role.load() != Role::kFollower || !db_) {
    r.error = "not a caught-up follower";
    return r;
  }
  std::lock_guard<std::mutex> sg(mu_);
  std::unique_ptr<Transaction> txn;
  {
    // Replay pauses while the snapshot is fixed: the store then holds exactly
    // the transactions replay applied (a prefix of the key order).
    auto hold = replayer_->Hold();
    if (!replayer_->FollowingLocked()) {
      r.error = "not following an open leader";
      return r;
    }
    replayer_->SnapshotPositionLocked(&r);
    r.decided = control_->latest();
    // A read-only transaction sees the engine's snapshot epoch: wait until
    // it covers every write replay made.
    replayer_->QuiesceLocked();
    if (!AwaitEngineSnapshot(std::chrono::seconds(2))) {
      r.error = "the engine's snapshot epoch does not advance";
      return r;
    }
    txn = worker_->BeginReadOnly();
  }
  Status s = ScanStore(txn.get(), &r.writes);
  (void)txn->Commit();
  txn.reset();
  worker_->Quiesce();
  if (!s.ok()) {
    r.error = s.message();
    return r;
  }
  r.ok = true;
  return r;
}

SnapshotReply SnapshotSource::LeaderSnapshot() {
  // Only when no caught-up follower can give one (a member asks the leader
  // last): in a cluster of three, one member down and the other leading.
  // Its writes pause while the position is fixed (LeaderStreams::HoldForSnapshot).
  SnapshotReply r;
  if (!db_) {
    r.error = "no engine attached";
    return r;
  }
  std::lock_guard<std::mutex> sg(mu_);
  std::unique_ptr<HeldWorkers> held;
  if (std::string err = leader_->HoldForSnapshot(&r, &held); !err.empty()) {
    r = SnapshotReply{};
    r.error = err;
    return r;
  }
  if (!r.decided) r.decided = control_->latest();
  auto fail = [&](const std::string& why) {
    held->Release();
    r = SnapshotReply{};
    r.error = "the leader's snapshot: " + why;
    return r;
  };
  // An open client transaction holds the engine's snapshot epoch back, and
  // with its worker held it cannot end: under interactive load there is
  // nearly always one (a deposed leader waited 15 s to 30 s+ for a moment
  // without). They are aborted, as a failover would (clients retry), and the
  // held workers quiesced (an idle one still publishes its last epoch).
  const size_t aborted = unpin_snapshot_epoch_ ? unpin_snapshot_epoch_() : 0;
  if (!AwaitEngineSnapshot(std::chrono::milliseconds(250))) {
    return fail("the engine's snapshot epoch does not advance");
  }
  std::unique_ptr<Transaction> txn = worker_->BeginReadOnly();
  held->Release();  // later commits are in later engine epochs: the snapshot does not see them
  std::vector<SnapshotWrite> writes;
  Status s = ScanStore(txn.get(), &writes);
  (void)txn->Commit();
  txn.reset();
  worker_->Quiesce();
  if (!s.ok()) {
    r = SnapshotReply{};
    r.error = "the leader's snapshot: " + s.message();
    return r;
  }
  r.writes = std::move(writes);
  r.ok = true;
  leader_snapshots_.fetch_add(1);
  log::Printf(log::Level::kInfo, "replication",
              "rolis-repl %u: served a snapshot of %zu keys at %s (no caught-up follower could; %zu open "
              "transactions aborted)",
              member_->self(), r.writes.size(), KeyStr(r.at).c_str(), aborted);
  return r;
}

bool SnapshotSource::KeysNotInLocked(const std::vector<SnapshotWrite>& snapshot,
                                     std::vector<std::pair<TableId, std::string>>* stale) {
  std::set<std::pair<TableId, std::string>> in_snapshot;
  for (const SnapshotWrite& w : snapshot) in_snapshot.insert({w.table, w.key});
  if (!AwaitEngineSnapshot(std::chrono::seconds(2))) return false;
  auto txn = worker_->BeginReadOnly();
  for (TableId id = 0;; id++) {
    Table* table = nullptr;
    if (!db_->GetTable(id, &table).ok()) break;
    Status s = txn->Scan(table, "", "", 0, [&](std::string_view k, std::string_view) {
      if (!in_snapshot.count({id, std::string(k)})) stale->push_back({id, std::string(k)});
      return true;
    });
    (void)s;
  }
  (void)txn->Commit();
  txn.reset();
  worker_->Quiesce();
  return true;
}

}  // namespace rolis::replication
