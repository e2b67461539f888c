#include "recovery.h"

#include <chrono>
#include <cstdio>
#include <map>

#include "checkpoint.h"
#include "frame.h"
#include "record_codec.h"

namespace rolis::durability {

using replication::Slot;

namespace {

Status At(const std::string& file, uint64_t off, const std::string& what) {
  return Status::InvalidArgument(file + " at byte " + std::to_string(off) + ": " + what);
}

Status LoadCheckpoint(Env* env, const std::string& dir, const RecoveryOptions& opts, RecoveredState* out) {
  std::string path;
  if (Status s = FindNewestCheckpoint(env, dir, &path, opts.truncate); !s.ok()) return s;
  if (path.empty()) return Status::OK();
  std::unique_ptr<CheckpointReader> r;
  if (Status s = CheckpointReader::Open(env, path, &r); !s.ok()) return s;
  const replication::SnapshotReply& h = r->header();
  if (h.next_slot.size() != opts.streams) {
    return Status::InvalidArgument(path + ": the checkpoint has " + std::to_string(h.next_slot.size()) +
                                   " streams, this member runs " + std::to_string(opts.streams));
  }
  out->checkpoint_path = path;
  out->checkpoint = h;
  std::vector<replication::SnapshotWrite> chunk;
  for (bool done = false; !done;) {
    if (Status s = r->Next(&chunk, &done); !s.ok()) return s;
    out->stats.checkpoint_writes += chunk.size();
    if (opts.on_writes && !chunk.empty()) {
      if (Status s = opts.on_writes(chunk); !s.ok()) return s;
    }
  }
  for (uint32_t t = 0; t < opts.streams; t++) {
    out->streams[t].first_slot = h.next_slot[t];
    out->streams[t].base_key = h.stream_key[t];
    out->streams[t].base_barrier = h.stream_barrier[t];
  }
  return Status::OK();
}

Status LoadStream(Env* env, const std::string& dir, uint32_t t, const RecoveryOptions& opts, RecoveredState* out) {
  const std::string sdir = StreamLogSet::StreamDir(dir, t);
  std::vector<std::string> names;
  Status ls = env->ListDir(sdir, &names);
  if (ls.IsNotFound()) return Status::OK();
  if (!ls.ok()) return ls;
  std::vector<SegmentInfo> segs;
  for (const std::string& n : names) {
    SegmentInfo seg;
    if (!StreamLogSet::ParseSegmentFileName(n, &seg.name)) continue;
    seg.path = JoinPath(sdir, n);
    segs.push_back(seg);
  }
  replication::StreamSlots& ss = out->streams[t];
  std::map<uint64_t, Slot> slots;
  std::string data;
  for (size_t i = 0; i < segs.size(); i++) {
    SegmentInfo& seg = segs[i];
    const bool newest = i + 1 == segs.size();
    if (Status s = ReadWholeFile(env, seg.path, &data); !s.ok()) return s;
    out->stats.segments++;
    bool first = true;
    FrameScan scan;
    Status s = ScanFrames(data, [&](const Frame& f, size_t off) -> Status {
      if (first) {
        first = false;
        FileHeader h;
        if (f.type != FrameType::kFileHeader) return At(seg.path, off, "no file header");
        if (Status e = DecodeFileHeader(f.payload, &h); !e.ok()) return At(seg.path, off, e.message());
        if (h.kind != FileKind::kSegment || h.stream != t || h.key != seg.name) {
          return At(seg.path, off, "header names another file (stream " + std::to_string(h.stream) + ", segment " +
                                       std::to_string(h.key) + ")");
        }
        return Status::OK();
      }
      if (f.type != FrameType::kSlot) {
        return At(seg.path, off, "unexpected frame type " + std::to_string(static_cast<int>(f.type)));
      }
      uint32_t stream = 0;
      Slot slot;
      if (Status e = DecodeSlot(f.payload, &stream, &slot); !e.ok()) return At(seg.path, off, e.message());
      if (stream != t) return At(seg.path, off, "slot of stream " + std::to_string(stream));
      out->stats.slot_frames++;
      seg.max_slot = seg.has_slots ? std::max(seg.max_slot, slot.index) : slot.index;
      seg.has_slots = true;
      out->promised = std::max(out->promised, slot.ballot);
      if (slot.index < ss.first_slot) {
        out->stats.superseded++;
        return Status::OK();
      }
      auto [it, fresh] = slots.try_emplace(slot.index, slot);
      if (!fresh) {
        out->stats.superseded++;
        if (slot.ballot >= it->second.ballot) {
          it->second = std::move(slot);
        } else {
          out->stats.ballot_regressions++;
        }
      }
      return Status::OK();
    }, &scan);
    if (!s.ok()) return s;
    seg.bytes = scan.valid_end;
    out->stats.log_bytes += scan.valid_end;
    if (scan.fault == FrameFault::kNone) continue;
    if (!newest || !scan.tail) {
      return At(seg.path, scan.valid_end,
                std::string(FrameFaultName(scan.fault)) +
                    (newest ? " (corrupt: well-formed frames follow)" : " (corrupt: not the newest segment)"));
    }
    out->stats.cut.push_back(CutTail{seg.path, scan.valid_end, data.size() - scan.valid_end, FrameFaultName(scan.fault)});
    if (opts.truncate) {
      if (Status tr = env->TruncateFile(seg.path, scan.valid_end); !tr.ok()) return tr;
    }
  }
  ss.slots.reserve(slots.size());
  for (auto& [i, slot] : slots) ss.slots.push_back(std::move(slot));
  out->stats.slots += ss.slots.size();
  out->segments[t] = std::move(segs);
  return Status::OK();
}

}  // namespace

Status Recover(Env* env, const std::string& dir, const RecoveryOptions& opts, RecoveredState* out) {
  const auto start = std::chrono::steady_clock::now();
  *out = RecoveredState{};
  out->streams.resize(opts.streams);
  out->segments.resize(opts.streams);
  std::vector<std::string> names;
  Status ls = env->ListDir(dir, &names);
  if (ls.IsNotFound()) return Status::OK();  // no directory yet: empty
  if (!ls.ok()) return ls;
  for (const std::string& n : names) {
    if (n.rfind("stream-", 0) != 0) continue;
    const std::string num = n.substr(7);
    if (num.empty() || num.size() > 9 || num.find_first_not_of("0123456789") != std::string::npos) continue;
    if (std::stoul(num) >= opts.streams) {
      return Status::InvalidArgument(JoinPath(dir, n) + ": this member runs " + std::to_string(opts.streams) +
                                     " streams; the data directory was written with more");
    }
  }
  if (Status s = LoadCheckpoint(env, dir, opts, out); !s.ok()) return s;
  JournalLoad jl;
  if (Status s = StateJournal::Load(env, dir, opts.truncate, &out->acceptor, &jl); !s.ok()) return s;
  out->stats.journal_frames = jl.frames;
  if (jl.cut) {
    out->stats.cut.push_back(CutTail{JoinPath(dir, StateJournal::FileName()), jl.cut_offset, jl.cut_bytes, jl.cut_reason});
  }
  out->promised = out->acceptor.promised;
  for (uint32_t t = 0; t < opts.streams; t++) {
    if (Status s = LoadStream(env, dir, t, opts, out); !s.ok()) return s;
  }
  out->empty = out->checkpoint_path.empty() && out->acceptor.empty() && out->stats.slot_frames == 0;
  out->stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return Status::OK();
}

std::string RecoveredState::Summary() const {
  if (empty) return "data directory empty (no checkpoint, no journal state, no log)";
  std::string s = checkpoint_path.empty() ? "no checkpoint"
                                          : "checkpoint " + checkpoint_path + " (" +
                                                std::to_string(stats.checkpoint_writes) + " writes)";
  s += ", promised " + std::to_string(promised);
  if (acceptor.decided) s += ", decided epoch " + std::to_string(acceptor.decided->record.epoch);
  s += ", " + std::to_string(stats.slots) + " slots from " + std::to_string(stats.slot_frames) + " frames in " +
       std::to_string(stats.segments) + " segments (" + std::to_string(stats.log_bytes) + " bytes)";
  for (const CutTail& c : stats.cut) {
    s += "; cut a torn tail of " + std::to_string(c.bytes) + " bytes at byte " + std::to_string(c.offset) + " of " +
         c.file + " (" + c.reason + ")";
  }
  char buf[48];
  std::snprintf(buf, sizeof buf, ", in %.3f s", stats.seconds);
  return s + buf;
}

}  // namespace rolis::durability
