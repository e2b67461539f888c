// Checkpoints: a member's store at a key, on disk (docs/replication.md,
// "Durability"). The content is what a SnapshotReply (types.h) carries, so
// that a checkpoint can also serve a state transfer:
//
//   <dir>/checkpoints/checkpoint-<at.epoch>-<at.ts>.ckpt   (20 digits each)
//
//   file header frame, header frame (at, per stream next_slot / skip /
//   stream_key / stream_barrier, decided, leader_epoch), chunks of writes
//   (about 1 MiB each), an end frame counting writes and chunks.
//
// Written atomically: a temporary (".tmp") file, fdatasync, rename, fsync of
// the directory; then older checkpoints and leftover temporaries are
// removed, so the newest complete checkpoint is the only one kept. Writer
// and reader stream: a large store is never held twice in memory.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "file_env.h"
#include "rolis/status.h"
#include "types.h"

namespace rolis::durability {

class CheckpointWriter {
 public:
  static std::string DirOf(const std::string& data_dir) { return JoinPath(data_dir, "checkpoints"); }
  static std::string FileName(replication::LogKey at);

  // Starts a checkpoint of `header` (its writes are ignored: Add them).
  static Status Begin(Env* env, const std::string& data_dir, const replication::SnapshotReply& header,
                      std::unique_ptr<CheckpointWriter>* out, size_t chunk_bytes = 1 << 20);
  ~CheckpointWriter();  // without Commit: the temporary is removed

  Status Add(uint32_t table, std::string_view key, std::string_view value);
  // Makes it the newest complete checkpoint and removes the older ones.
  Status Commit(std::string* path = nullptr);
  uint64_t writes() const { return writes_; }

 private:
  CheckpointWriter(Env* env, std::string data_dir, std::string path, size_t chunk_bytes)
      : env_(env), data_dir_(data_dir), dir_(DirOf(data_dir)), path_(std::move(path)), chunk_bytes_(chunk_bytes) {}
  Status FlushChunk();

  Env* env_;
  std::string data_dir_, dir_, path_;
  size_t chunk_bytes_;
  std::unique_ptr<WritableFile> file_;
  std::string chunk_;
  uint32_t chunk_count_ = 0;
  uint64_t writes_ = 0, chunks_ = 0;
  bool done_ = false;
  Status failed_;
};

class CheckpointReader {
 public:
  static Status Open(Env* env, const std::string& path, std::unique_ptr<CheckpointReader>* out);
  // Over bytes from any source (tests, fuzz): `size` is how many there are.
  static Status Open(std::unique_ptr<SequentialFile> source, uint64_t size, const std::string& name,
                     std::unique_ptr<CheckpointReader>* out);

  const replication::SnapshotReply& header() const { return header_; }  // writes empty
  // The next chunk of writes into *out; *done once the end frame was read
  // and checked (every count matches). Errors name the file and offset.
  Status Next(std::vector<replication::SnapshotWrite>* out, bool* done);
  // The same, each write of the chunk handed to `fn` as views valid during
  // the call (no copy of the records).
  Status NextViews(const std::function<Status(uint32_t table, std::string_view key, std::string_view value)>& fn,
                   bool* done);

 private:
  Status Error(const std::string& what) const;
  std::unique_ptr<SequentialFile> file_;
  std::string name_;
  uint64_t size_ = 0, offset_ = 0;
  std::string buf_;  // the frame being read
  replication::SnapshotReply header_;
  uint64_t writes_ = 0, chunks_ = 0;
  bool done_ = false;
};

// The newest checkpoint in <data_dir>/checkpoints (empty if none); with
// `cleanup`, older checkpoints and temporaries are removed.
Status FindNewestCheckpoint(Env* env, const std::string& data_dir, std::string* path, bool cleanup = false);

// Test hook (docs/operations.md, "Durability", test hooks): every commit
// sleeps this long between the temporary file's fdatasync and its rename,
// so that a test can kill a member inside that window. 0 (the default): no
// pause. rolisd sets it from ROLIS_TEST_CHECKPOINT_COMMIT_PAUSE_MS.
void SetCheckpointCommitPauseForTest(uint32_t ms);

// Whole-snapshot helpers (tests, small stores).
Status WriteCheckpoint(Env* env, const std::string& data_dir, const replication::SnapshotReply& snap,
                       std::string* path = nullptr);
Status ReadCheckpoint(Env* env, const std::string& path, replication::SnapshotReply* snap);

}  // namespace rolis::durability
