#include "derived_checkpoint.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "acceptor.h"
#include "checkpoint.h"
#include "codec.h"
#include "frame.h"
#include "record_codec.h"
#include "rolis/value_patch.h"
#include "stream_log.h"

namespace rolis::durability {

using replication::BatchKind;
using replication::LogKey;
using replication::Slot;
using replication::SnapshotReply;
using replication::SnapshotWrite;

namespace {

std::string KeyText(LogKey k) { return std::to_string(k.epoch) + "." + std::to_string(k.ts); }

// One write of the log, kept until the key's writes are folded.
struct Op {
  enum Kind : uint8_t { kPut, kDelete, kPatch };
  LogKey key;
  Kind kind = kPut;
  uint64_t base_ts = 0;  // kPatch: its base is (key.epoch, base_ts)
  std::string data;      // the value, or the patch's runs
};
using RecordId = std::pair<uint32_t, std::string>;
using Delta = std::map<RecordId, std::vector<Op>>;

void AddOp(Delta* delta, const WriteRecord& w, LogKey key) {
  std::vector<Op>& ops = (*delta)[RecordId{w.table, std::string(w.key)}];
  Op op;
  op.key = key;
  op.kind = w.is_delete ? Op::kDelete : w.is_patch ? Op::kPatch : Op::kPut;
  op.base_ts = w.base_ts;
  if (!w.is_delete) op.data.assign(w.value.data(), w.value.size());
  // A put or delete above every write held replaces them (within a stream
  // the writes come in key order, so most keys keep one).
  if (op.kind != Op::kPatch && std::all_of(ops.begin(), ops.end(), [&](const Op& o) { return o.key < key; })) {
    ops.clear();
  }
  ops.push_back(std::move(op));
}

// The record's value after its writes, in key order, over `base` (the
// previous checkpoint's value at `base_key`, if it had one); nullopt: absent.
Status Fold(const RecordId& id, std::vector<Op>& ops, std::optional<std::string> base, LogKey base_key,
            std::optional<std::string>* out) {
  std::stable_sort(ops.begin(), ops.end(), [](const Op& a, const Op& b) { return a.key < b.key; });
  std::optional<std::string> cur = std::move(base);
  LogKey cur_key = base_key;
  for (Op& op : ops) {
    if (op.kind == Op::kPut) {
      cur = std::move(op.data);
    } else if (op.kind == Op::kDelete) {
      cur.reset();
    } else {
      const LogKey base_of{op.key.epoch, op.base_ts};
      if (!cur || cur_key < base_of || !PatchFits(op.data, cur->size()) ||
          !ApplyPatch(op.data, cur->data(), cur->size())) {
        return Status::FailedPrecondition("the patch at " + KeyText(op.key) + " of a key of " +
                                          std::to_string(id.second.size()) + " bytes in table " +
                                          std::to_string(id.first) + " does not apply to its record (" +
                                          (cur ? "value at " + KeyText(cur_key) : std::string("absent")) +
                                          ", base " + KeyText(base_of) + ")");
      }
    }
    cur_key = op.key;
  }
  *out = std::move(cur);
  return Status::OK();
}

// The slots of stream t in [from, end) on disk, the latest frame of each.
// A bad frame stops the read of its file (the newest segment is being
// written); a slot that is then missing is reported by the caller.
Status ReadSlots(Env* env, const std::string& dir, uint32_t t, uint64_t from, uint64_t end,
                 std::map<uint64_t, Slot>* out, uint64_t* bytes) {
  const std::string sdir = StreamLogSet::StreamDir(dir, t);
  std::vector<std::string> names;
  Status ls = env->ListDir(sdir, &names);
  if (ls.IsNotFound()) return Status::OK();
  if (!ls.ok()) return ls;
  std::string data;
  for (const std::string& n : names) {
    uint64_t name = 0;
    if (!StreamLogSet::ParseSegmentFileName(n, &name)) continue;
    const std::string path = JoinPath(sdir, n);
    Status rs = ReadWholeFile(env, path, &data);
    if (rs.IsNotFound()) continue;  // removed behind an older checkpoint meanwhile
    if (!rs.ok()) return rs;
    *bytes += data.size();
    FrameScan scan;
    Status s = ScanFrames(data, [&](const Frame& f, size_t off) -> Status {
      if (f.type != FrameType::kSlot) return Status::OK();  // the file header
      uint32_t stream = 0;
      Slot slot;
      if (Status e = DecodeSlot(f.payload, &stream, &slot); !e.ok()) {
        return Status::InvalidArgument(path + " at byte " + std::to_string(off) + ": " + e.message());
      }
      if (stream != t || slot.index < from || slot.index >= end) return Status::OK();
      auto [it, fresh] = out->try_emplace(slot.index, slot);
      if (!fresh && slot.ballot >= it->second.ballot) it->second = std::move(slot);
      return Status::OK();
    }, &scan);
    if (!s.ok()) return s;
  }
  return Status::OK();
}

}  // namespace

Status DeriveCheckpoint(Env* env, const std::string& data_dir, uint32_t streams,
                        const replication::LogCheckpointPosition& pos, SnapshotReply* header,
                        DerivedCheckpointStats* stats) {
  const auto start = std::chrono::steady_clock::now();
  *stats = DerivedCheckpointStats{};
  if (!pos.decided || pos.end.size() != streams) {
    return Status::InvalidArgument("a derived checkpoint needs the decided record and an end per stream");
  }
  // The previous checkpoint (an empty store before slot 0 without one).
  std::unique_ptr<CheckpointReader> prev_reader;
  SnapshotReply prev;
  if (Status s = FindNewestCheckpoint(env, data_dir, &stats->previous); !s.ok()) return s;
  if (!stats->previous.empty()) {
    if (Status s = CheckpointReader::Open(env, stats->previous, &prev_reader); !s.ok()) return s;
    prev = prev_reader->header();
    if (prev.next_slot.size() != streams) {
      return Status::InvalidArgument(stats->previous + ": a checkpoint of " + std::to_string(prev.next_slot.size()) +
                                     " streams, this member runs " + std::to_string(streams));
    }
  } else {
    prev.next_slot.assign(streams, 0);
    prev.skip.assign(streams, 0);
    prev.stream_key.assign(streams, LogKey{});
    prev.stream_barrier.assign(streams, 0);
  }
  const LogKey W = pos.watermark;
  if (W <= prev.at) {
    return Status::NotFound("the watermark " + KeyText(W) + " is not past the newest checkpoint's " + KeyText(prev.at));
  }
  const replication::EpochRecord& rec = pos.decided->record;

  SnapshotReply next;
  next.at = W;
  next.decided = pos.decided;
  next.leader_epoch = pos.epoch;
  Delta delta;
  replication::DecodedBatch txns;
  for (uint32_t t = 0; t < streams; t++) {
    const uint64_t from = prev.next_slot[t];
    LogKey reach = prev.stream_key[t];
    uint64_t barrier = prev.stream_barrier[t];
    uint64_t stop = std::max(from, pos.end[t]);
    uint64_t skip = from >= pos.end[t] ? prev.skip[t] : 0;
    std::map<uint64_t, Slot> slots;
    if (Status s = ReadSlots(env, data_dir, t, from, pos.end[t], &slots, &stats->log_bytes); !s.ok()) return s;
    for (uint64_t i = from; i < pos.end[t]; i++) {
      auto it = slots.find(i);
      if (it == slots.end() || it->second.ballot != pos.epoch) {
        return Status::FailedPrecondition(
            "stream " + std::to_string(t) + " slot " + std::to_string(i) +
            (it == slots.end() ? " is not in the log" : " is at ballot " + std::to_string(it->second.ballot)) +
            ", not " + std::to_string(pos.epoch));
      }
      const Slot& slot = it->second;
      const replication::Batch& b = *slot.value;
      stats->slots++;
      if (b.kind == BatchKind::kNoop) {
        replication::AdvanceReach(slot, rec, &reach, &barrier);
        continue;
      }
      const LogKey key = b.key();
      if (b.kind == BatchKind::kBarrier || b.txn_count == 0) {
        if (key > W) {
          stop = i;
          break;
        }
        replication::AdvanceReach(slot, rec, &reach, &barrier);
        continue;
      }
      if (Status s = replication::DecodeBatch(b.payload, b.txn_count, b.last_ts, &txns); !s.ok()) {
        return Status(s.code(), "stream " + std::to_string(t) + " slot " + std::to_string(i) + ": " + s.message());
      }
      bool above = false;
      for (size_t j = i == from ? std::min<size_t>(prev.skip[t], txns.size()) : 0; j < txns.size(); j++) {
        const LogKey k{b.epoch, txns.ts(j)};
        if (k > W) {
          stop = i;
          skip = j;
          above = true;
          break;
        }
        if (k <= prev.at || !replication::IsValid(rec, k)) continue;
        for (const WriteRecord& w : txns.writes(j)) AddOp(&delta, w, k);
        stats->txns++;
      }
      if (above) break;
      replication::AdvanceReach(slot, rec, &reach, &barrier);
    }
    next.next_slot.push_back(stop);
    next.skip.push_back(skip);
    next.stream_key.push_back(reach);
    next.stream_barrier.push_back(barrier);
  }
  stats->delta_keys = delta.size();
  stats->log_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  // The previous checkpoint streamed through, each of its records folded
  // with the delta's writes of it; then the records only the delta has.
  std::unique_ptr<CheckpointWriter> w;
  if (Status s = CheckpointWriter::Begin(env, data_dir, next, &w); !s.ok()) return s;
  if (prev_reader) {
    // Most records pass through untouched, as views into the chunk read.
    RecordId probe;
    auto merge = [&](uint32_t table, std::string_view key, std::string_view value) -> Status {
      stats->base_writes++;
      probe.first = table;
      probe.second.assign(key);
      auto it = delta.find(probe);
      if (it == delta.end()) return w->Add(table, key, value);
      std::optional<std::string> v;
      if (Status s = Fold(it->first, it->second, std::string(value), prev.at, &v); !s.ok()) return s;
      delta.erase(it);
      return v ? w->Add(table, key, *v) : Status::OK();
    };
    for (bool done = false; !done;) {
      if (Status s = prev_reader->NextViews(merge, &done); !s.ok()) return s;
    }
    prev_reader.reset();
  }
  for (auto& [id, ops] : delta) {
    std::optional<std::string> v;
    if (Status s = Fold(id, ops, std::nullopt, prev.at, &v); !s.ok()) return s;
    if (v) {
      if (Status s = w->Add(id.first, id.second, *v); !s.ok()) return s;
    }
  }
  delta.clear();
  stats->writes = w->writes();
  const auto commit_start = std::chrono::steady_clock::now();
  if (Status s = w->Commit(&stats->path); !s.ok()) return s;
  stats->commit_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - commit_start).count();
  *header = std::move(next);
  stats->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return Status::OK();
}

}  // namespace rolis::durability
