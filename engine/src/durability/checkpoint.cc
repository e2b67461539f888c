#include "checkpoint.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>

#include "frame.h"
#include "record_codec.h"
#include "rolis/log.h"

namespace rolis::durability {

using replication::LogKey;
using replication::SnapshotReply;
using replication::SnapshotWrite;

namespace {

constexpr std::string_view kPrefix = "checkpoint-";
constexpr std::string_view kSuffix = ".ckpt";

std::atomic<uint32_t> commit_pause_ms{0};

bool IsCheckpointName(const std::string& n) {
  return n.size() == kPrefix.size() + 41 + kSuffix.size() && n.compare(0, kPrefix.size(), kPrefix) == 0 &&
         n.compare(n.size() - kSuffix.size(), kSuffix.size(), kSuffix) == 0;
}

bool IsTemporaryName(const std::string& n) {
  return n.compare(0, kPrefix.size(), kPrefix) == 0 && n.size() > 4 && n.compare(n.size() - 4, 4, ".tmp") == 0;
}

}  // namespace

std::string CheckpointWriter::FileName(LogKey at) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "checkpoint-%020llu-%020llu.ckpt", static_cast<unsigned long long>(at.epoch),
                static_cast<unsigned long long>(at.ts));
  return buf;
}

Status CheckpointWriter::Begin(Env* env, const std::string& data_dir, const SnapshotReply& header,
                               std::unique_ptr<CheckpointWriter>* out, size_t chunk_bytes) {
  if (Status s = env->CreateDir(data_dir); !s.ok()) return s;
  const std::string dir = DirOf(data_dir);
  if (Status s = env->CreateDir(dir); !s.ok()) return s;
  const std::string path = JoinPath(dir, FileName(header.at));
  std::unique_ptr<CheckpointWriter> w(new CheckpointWriter(env, data_dir, path, chunk_bytes));
  const std::string tmp = path + ".tmp";
  if (env->Exists(tmp)) {
    if (Status s = env->Remove(tmp); !s.ok()) return s;
  }
  if (Status s = env->OpenAppendable(tmp, &w->file_); !s.ok()) return s;
  std::string head;
  AppendFrame(&head, FrameType::kFileHeader, EncodeFileHeader(FileHeader{FileKind::kCheckpoint, 0, 0}));
  AppendFrame(&head, FrameType::kCheckpointHeader, EncodeCheckpointHeader(header));
  if (Status s = WriteAll(*w->file_, head); !s.ok()) return s;  // the destructor removes the temporary
  BeginWritesChunk(&w->chunk_);
  *out = std::move(w);
  return Status::OK();
}

CheckpointWriter::~CheckpointWriter() {
  if (done_) return;
  file_.reset();
  (void)env_->Remove(path_ + ".tmp");
}

Status CheckpointWriter::FlushChunk() {
  if (chunk_count_ == 0) return Status::OK();
  FinishWritesChunk(&chunk_, chunk_count_);
  Status s = WriteAll(*file_, FrameHeader(FrameType::kCheckpointWrites, chunk_));
  if (s.ok()) s = WriteAll(*file_, chunk_);
  if (!s.ok()) {
    failed_ = s;
    return s;
  }
  chunks_++;
  chunk_count_ = 0;
  BeginWritesChunk(&chunk_);
  return Status::OK();
}

Status CheckpointWriter::Add(uint32_t table, std::string_view key, std::string_view value) {
  if (!failed_.ok()) return failed_;
  if (done_) return Status::FailedPrecondition("checkpoint already committed");
  AddToWritesChunk(&chunk_, table, key, value);
  chunk_count_++;
  writes_++;
  if (chunk_.size() >= chunk_bytes_) return FlushChunk();
  return Status::OK();
}

Status CheckpointWriter::Commit(std::string* path) {
  if (!failed_.ok()) return failed_;
  if (done_) return Status::FailedPrecondition("checkpoint already committed");
  if (Status s = FlushChunk(); !s.ok()) return s;
  std::string end;
  AppendFrame(&end, FrameType::kCheckpointEnd, EncodeCheckpointEnd(CheckpointEnd{writes_, chunks_}));
  Status s = WriteAll(*file_, end);
  if (s.ok()) s = file_->Sync();
  if (const uint32_t pause = commit_pause_ms.load(); s.ok() && pause > 0) {
    log::Printf(log::Level::kInfo, "durability",
                "rolis-durability: test hook: %s.tmp is written and synced, %u ms before its rename",
                path_.c_str(), pause);
    std::this_thread::sleep_for(std::chrono::milliseconds(pause));
  }
  if (s.ok()) {
    file_.reset();
    s = env_->Rename(path_ + ".tmp", path_);
  }
  if (s.ok()) s = env_->SyncDir(dir_);
  if (!s.ok()) {
    failed_ = s;
    return s;
  }
  done_ = true;
  if (path) *path = path_;
  std::string newest;
  // Older checkpoints and temporaries go; the new one is durable already.
  return FindNewestCheckpoint(env_, data_dir_, &newest, /*cleanup=*/true);
}

void SetCheckpointCommitPauseForTest(uint32_t ms) { commit_pause_ms.store(ms); }

// ---------------------------------------------------------------------------

Status CheckpointReader::Open(Env* env, const std::string& path, std::unique_ptr<CheckpointReader>* out) {
  uint64_t size = 0;
  if (Status s = env->FileSize(path, &size); !s.ok()) return s;
  std::unique_ptr<SequentialFile> f;
  if (Status s = env->OpenSequential(path, &f); !s.ok()) return s;
  return Open(std::move(f), size, path, out);
}

Status CheckpointReader::Error(const std::string& what) const {
  return Status::InvalidArgument(name_ + " at byte " + std::to_string(offset_) + ": " + what);
}

Status CheckpointReader::Open(std::unique_ptr<SequentialFile> source, uint64_t size, const std::string& name,
                              std::unique_ptr<CheckpointReader>* out) {
  std::unique_ptr<CheckpointReader> r(new CheckpointReader);
  r->file_ = std::move(source);
  r->size_ = size;
  r->name_ = name;
  for (int i = 0; i < 2; i++) {
    std::string buf;
    Frame f;
    FrameFault fault;
    size_t n = 0;
    if (Status s = ReadFrame(*r->file_, r->size_ - r->offset_, &buf, &f, &fault, &n); !s.ok()) return s;
    if (fault != FrameFault::kNone) return r->Error(FrameFaultName(fault));
    if (i == 0) {
      FileHeader h;
      if (f.type != FrameType::kFileHeader) return r->Error("no file header");
      if (Status s = DecodeFileHeader(f.payload, &h); !s.ok()) return r->Error(s.message());
      if (h.kind != FileKind::kCheckpoint) return r->Error("not a checkpoint");
    } else {
      if (f.type != FrameType::kCheckpointHeader) return r->Error("no checkpoint header");
      if (Status s = DecodeCheckpointHeader(f.payload, &r->header_); !s.ok()) return r->Error(s.message());
    }
    r->offset_ += n;
  }
  *out = std::move(r);
  return Status::OK();
}

Status CheckpointReader::Next(std::vector<SnapshotWrite>* out, bool* done) {
  out->clear();
  Status s = NextViews(
      [out](uint32_t table, std::string_view k, std::string_view v) {
        out->push_back(SnapshotWrite{table, std::string(k), std::string(v)});
        return Status::OK();
      },
      done);
  if (!s.ok()) out->clear();
  return s;
}

Status CheckpointReader::NextViews(
    const std::function<Status(uint32_t table, std::string_view key, std::string_view value)>& fn, bool* done) {
  *done = done_;
  if (done_) return Status::OK();
  Frame f;
  FrameFault fault;
  size_t n = 0;
  if (Status s = ReadFrame(*file_, size_ - offset_, &buf_, &f, &fault, &n); !s.ok()) return s;
  if (fault != FrameFault::kNone) return Error(std::string(FrameFaultName(fault)) + " (incomplete or corrupt checkpoint)");
  if (f.type == FrameType::kCheckpointWrites) {
    uint64_t count = 0;
    Status refused;  // the visitor's error, told from the decoder's
    Status s = ForEachInWritesChunk(f.payload, [&](uint32_t table, std::string_view k, std::string_view v) {
      count++;
      refused = fn(table, k, v);
      return refused;
    });
    if (!refused.ok()) return refused;
    if (!s.ok()) return Error(s.message());
    writes_ += count;
    chunks_++;
    offset_ += n;
    return Status::OK();
  }
  if (f.type != FrameType::kCheckpointEnd) return Error("unexpected frame type " + std::to_string(static_cast<int>(f.type)));
  CheckpointEnd end;
  if (Status s = DecodeCheckpointEnd(f.payload, &end); !s.ok()) return Error(s.message());
  if (end.writes != writes_ || end.chunks != chunks_) {
    return Error("end frame counts " + std::to_string(end.writes) + " writes in " + std::to_string(end.chunks) +
                 " chunks, read " + std::to_string(writes_) + " in " + std::to_string(chunks_));
  }
  offset_ += n;
  if (offset_ != size_) return Error(std::to_string(size_ - offset_) + " bytes after the end frame");
  done_ = true;
  *done = true;
  return Status::OK();
}

// ---------------------------------------------------------------------------

Status FindNewestCheckpoint(Env* env, const std::string& data_dir, std::string* path, bool cleanup) {
  path->clear();
  const std::string dir = CheckpointWriter::DirOf(data_dir);
  std::vector<std::string> names;
  Status s = env->ListDir(dir, &names);
  if (s.IsNotFound()) return Status::OK();
  if (!s.ok()) return s;
  std::string newest;
  for (const std::string& n : names) {
    if (IsCheckpointName(n)) newest = n;  // sorted: the last is the highest key
  }
  if (!newest.empty()) *path = JoinPath(dir, newest);
  if (!cleanup) return Status::OK();
  bool removed = false;
  for (const std::string& n : names) {
    if ((IsCheckpointName(n) && n != newest) || IsTemporaryName(n)) {
      if (Status r = env->Remove(JoinPath(dir, n)); !r.ok() && !r.IsNotFound()) return r;
      removed = true;
    }
  }
  return removed ? env->SyncDir(dir) : Status::OK();
}

Status WriteCheckpoint(Env* env, const std::string& data_dir, const SnapshotReply& snap, std::string* path) {
  std::unique_ptr<CheckpointWriter> w;
  if (Status s = CheckpointWriter::Begin(env, data_dir, snap, &w); !s.ok()) return s;
  for (const SnapshotWrite& x : snap.writes) {
    if (Status s = w->Add(x.table, x.key, x.value); !s.ok()) return s;
  }
  return w->Commit(path);
}

Status ReadCheckpoint(Env* env, const std::string& path, SnapshotReply* snap) {
  std::unique_ptr<CheckpointReader> r;
  if (Status s = CheckpointReader::Open(env, path, &r); !s.ok()) return s;
  *snap = r->header();
  snap->ok = true;
  std::vector<SnapshotWrite> chunk;
  for (bool done = false; !done;) {
    if (Status s = r->Next(&chunk, &done); !s.ok()) return s;
    for (auto& w : chunk) snap->writes.push_back(std::move(w));
  }
  return Status::OK();
}

}  // namespace rolis::durability
