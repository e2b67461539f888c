// An Env that wraps another (the POSIX one, on a test directory) and injects
// the faults a disk can show, for tests (docs/replication.md, "Durability"):
//   - short writes: each write takes at most `max_write` bytes (no error);
//   - a full disk: writes past `space` bytes in all write what fits, then
//     fail with ENOSPC (RESOURCE_EXHAUSTED);
//   - failing syncs: every fdatasync (and directory fsync) fails with EIO;
//   - held syncs: fdatasync waits until released (a slow disk, on cue);
//   - a crash: every file written through it loses what was not synced,
//     except the first `keep` unsynced bytes (a torn last frame).
// Flipped bits are made on the files themselves (FlipByte).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "file_env.h"

namespace rolis::durability {

class FaultEnv : public Env {
 public:
  explicit FaultEnv(Env* base = Env::Posix()) : base_(base) {}

  void set_max_write(size_t n) { max_write_.store(n); }               // 0: no limit
  void set_space(int64_t bytes) { space_.store(bytes); }              // < 0: no limit
  void set_fail_sync(bool fail) { fail_sync_.store(fail); }
  // While held, every fdatasync waits (then does what it would have done).
  void HoldSyncs(bool hold);
  uint64_t syncs() const { return syncs_.load(); }                    // successful fdatasyncs
  uint64_t writes() const { return writes_.load(); }                  // write calls

  // Every file written through this env keeps its synced length plus at
  // most `keep` of its unsynced bytes (as if the machine lost power).
  Status Crash(uint64_t keep = 0);
  // XORs the byte at `offset` of `path` with `mask`.
  Status FlipByte(const std::string& path, uint64_t offset, uint8_t mask = 0x10);

  Status OpenAppendable(const std::string& path, std::unique_ptr<WritableFile>* out) override;
  Status OpenSequential(const std::string& path, std::unique_ptr<SequentialFile>* out) override {
    return base_->OpenSequential(path, out);
  }
  Status FileSize(const std::string& path, uint64_t* size) override { return base_->FileSize(path, size); }
  Status Rename(const std::string& from, const std::string& to) override;
  Status SyncDir(const std::string& dir) override;
  Status ListDir(const std::string& dir, std::vector<std::string>* names) override {
    return base_->ListDir(dir, names);
  }
  Status Remove(const std::string& path) override;
  Status TruncateFile(const std::string& path, uint64_t size) override;
  Status CreateDir(const std::string& dir) override { return base_->CreateDir(dir); }
  bool Exists(const std::string& path) override { return base_->Exists(path); }

 private:
  friend class FaultWritable;
  // Length of each file known synced (absent: nothing synced since open,
  // for a file this env created; existing content counts as synced).
  std::mutex mu_;
  std::map<std::string, uint64_t> synced_;
  std::condition_variable hold_cv_;
  bool hold_ = false;  // under mu_

  Env* base_;
  std::atomic<size_t> max_write_{0};
  std::atomic<int64_t> space_{-1};
  std::atomic<bool> fail_sync_{false};
  std::atomic<uint64_t> syncs_{0};
  std::atomic<uint64_t> writes_{0};
};

}  // namespace rolis::durability
