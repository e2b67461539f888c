// Follower replay of a group of replicated writes in one call
// (Database::ApplyReplicatedBatch), and the step of one write that it shares
// with ApplyReplicated (worker.cc). Same result, write for write, as
// ApplyReplicated of each in order, with less work per write:
//   - the worker enters the epoch once for the group;
//   - the keys are looked up as groups of BTree::kLookupGroup
//     (BTree::LookupGroup overlaps their misses) and a found record is
//     written through the pointer: one descent per overwrite;
//   - a key absent from the index is inserted into the leaf the lookup
//     ended at, if no earlier write of the group changed that leaf since
//     (BTree::InsertIntoLeaf), else by one FindOrInsert descent.
// Every version the group installs is stamped with one snapshot epoch, read
// after the worker published its epoch: no snapshot can reach it before the
// worker enters again, so a read-only snapshot sees the whole group or none
// of it (one write at a time, a transaction could straddle two epochs).
#include <algorithm>
#include <string>

#include "rolis/value_patch.h"

#include "worker_impl.h"

namespace rolis::core {

Status WorkerImpl::ApplyReplicatedBatch(std::span<const ReplicatedWrite> writes) {
  // The Silo argument for commits, with the publication in place of the
  // locks: an advancer that missed our published epoch bumped E before we
  // read it here, so every snapshot it makes stays below `stamp`.
  const uint64_t stamp = db_->epoch_.load(std::memory_order_seq_cst);
  const uint64_t min_snap = db_->min_snap_.load(std::memory_order_acquire);
  // With no reader around, an overwrite keeps no old version (a version
  // copy per write was a quarter of a follower's replay: docs/benchmarks.md,
  // "Followers keep no old versions when nobody reads").
  const bool keep_old = !db_->ReplayMayDropOldVersions(slot_, stamp);
  Status first;
  BTree::GroupProbe probes[BTree::kLookupGroup];
  const ReplicatedWrite* group[BTree::kLookupGroup];
  TableImpl* tables[BTree::kLookupGroup];
  size_t next = 0;
  while (next < writes.size()) {
    int n = 0;
    for (; next < writes.size() && n < BTree::kLookupGroup; ++next) {
      const ReplicatedWrite& rw = writes[next];
      TableImpl* t = nullptr;
      Status s = db_->CheckReplicated(rw.write, rw.order_epoch, &t);
      if (!s.ok()) {
        if (first.ok()) first = std::move(s);
        continue;
      }
      probes[n].tree = &t->tree;
      probes[n].key = KeyRef(rw.write.key);
      group[n] = &rw;
      tables[n] = t;
      ++n;
    }
    BTree::LookupGroup(probes, n);
    for (int i = 0; i < n; ++i) {
      // An unresolved key is found or inserted on its own; an absent one
      // goes into its leaf if no other insert moved the leaf since. TPC-C's
      // inserts come in runs of neighbouring keys (an order's lines), so
      // the later probes into the same leaf follow an insert's version.
      const uint64_t seen = probes[i].version;
      Status s = ApplyOneReplicated(tables[i], probes[i].key, *group[i], probes[i].resolved ? &probes[i] : nullptr,
                                    stamp, min_snap, keep_old);
      if (!s.ok() && first.ok()) first = std::move(s);
      if (probes[i].version != seen) BTree::FollowInsert(probes[i], seen, probes + i + 1, n - i - 1);
    }
  }
  return first;
}

Record* WorkerImpl::FindOrInsertReplicated(TableImpl* t, const KeyRef& k, std::string_view key, uint32_t vlen,
                                           BTree::GroupProbe* found, bool* created) {
  Record* made = nullptr;
  Record* r;
  if (found != nullptr && found->rec == nullptr) {
    // Absent at the lookup: inserted straight into the leaf it ended at,
    // unless that leaf moved or is full.
    made = NewRecord(key, vlen);
    r = t->tree.InsertIntoLeaf(found->leaf, &found->version, k, made)
            ? made
            : t->tree.FindOrInsert(k, [] { return static_cast<Record*>(nullptr); }, &made);
  } else {
    r = t->tree.FindOrInsert(k, [&] { return NewRecord(key, vlen); }, &made);
  }
  if (made != nullptr && made != r) FreeRecord(made);  // another thread inserted the key first
  *created = made != nullptr && made == r;
  if (*created) Bump(slot_->records, 1);
  return r;
}

Status WorkerImpl::ApplyOneReplicated(TableImpl* t, const KeyRef& k, const ReplicatedWrite& rw,
                                      BTree::GroupProbe* found, uint64_t stamp, uint64_t min_snap,
                                      bool keep_old) {
  const WriteRecord& write = rw.write;
  uint32_t vlen = static_cast<uint32_t>(write.is_delete ? 0 : write.value.size());
  const char* value = write.value.data();
  Record* r = found != nullptr ? found->rec : nullptr;
  for (;;) {
    bool created = false;
    if (r == nullptr) {
      r = FindOrInsertReplicated(t, k, write.key, vlen, found, &created);
    }
    const uint64_t w = LockRecord(r);
    if (!(w & tid::kLatest)) {  // unlinked since we found it: look again
      UnlockRecord(r, w);
      r = nullptr;
      found = nullptr;  // the lookup's leaf and record are stale: a second try descends
      continue;
    }
    const bool newer =
        rw.order_epoch > r->repl_epoch || (rw.order_epoch == r->repl_epoch && rw.order_ts > r->ts);
    if (!newer) {
      // An older or duplicate write: last writer wins, nothing to do.
      if (created) QueueAbsentLocked(t, r);
      UnlockRecord(r, w);
      return Status::OK();
    }
    if (write.is_patch) {
      // The new value is the previous one with the patch's runs (written in
      // place by the install): only if this record holds the version the
      // patch was made against. Its key is (this epoch, base_ts), the write
      // is the next version of the key on the leader, and the record is
      // below the write (checked above): a record at or above the base
      // holds it, replayed as it was or installed by a state transfer under
      // the snapshot's key (docs/replication.md, "Patches").
      const bool below_base = r->repl_epoch < rw.order_epoch ||
                              (r->repl_epoch == rw.order_epoch && r->ts < write.base_ts);
      if ((w & tid::kAbsent) || below_base || !PatchFits(write.value, r->vlen)) {
        if (created) QueueAbsentLocked(t, r);
        UnlockRecord(r, w);
        return Status::FailedPrecondition("a replicated patch of table " + std::to_string(write.table) +
                                          " does not apply: the record does not hold the value it was made "
                                          "against (this member's store diverged; it needs a state transfer)");
      }
      value = nullptr;
      vlen = r->vlen;
    }
    // What the install unlinks is stamped with the epoch now (as a commit
    // does); the version keeps the group's stamp unless a local commit wrote
    // the record at a later epoch meanwhile (versions stay newest first).
    const uint64_t now = db_->epoch_.load(std::memory_order_seq_cst);
    const uint64_t epoch = std::max(stamp == kStampAtLock ? now : stamp, r->epoch);
    if (write.is_delete) {
      St(r->flags, r->flags | kFlagReplTombstone);
    } else {
      St(r->flags, r->flags & ~kFlagReplTombstone);
    }
    InstallAndUnlock(this, t, r, write.is_delete, value, vlen, rw.order_ts, epoch, rw.order_epoch, min_snap,
                     std::max(now, epoch), keep_old, write.is_patch ? &write.value : nullptr);
    return Status::OK();
  }
}

}  // namespace rolis::core
