// The few file operations the durability layer needs, behind an interface
// (after LevelDB's Env), so that tests can inject faults (fault_env.h):
// short writes, a full disk, failing syncs, a crash that loses what was not
// synced. The POSIX implementation is Env::Posix().
//
// Errors name the path and the operation ("fdatasync /d/stream-0/...: EIO").
// A full disk is RESOURCE_EXHAUSTED, every other I/O error INTERNAL.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "rolis/status.h"

namespace rolis::durability {

// A file open for appending. Not thread-safe: one owner writes it (Sync may
// run on another thread, as fdatasync may).
class WritableFile {
 public:
  virtual ~WritableFile() = default;
  // As POSIX write(): may write fewer bytes than asked (*written says how
  // many) without an error; on an error *written bytes may still have gone.
  virtual Status Write(std::string_view data, size_t* written) = 0;
  virtual Status Sync() = 0;                    // fdatasync
  virtual Status Truncate(uint64_t size) = 0;   // the next write goes at `size`
  virtual const std::string& path() const = 0;
};

// A file read from its start.
class SequentialFile {
 public:
  virtual ~SequentialFile() = default;
  // Reads up to n bytes into *out (replacing it); empty at the end.
  virtual Status Read(size_t n, std::string* out) = 0;
};

class Env {
 public:
  virtual ~Env() = default;
  // Opens for appending at the end, creating the file if absent.
  virtual Status OpenAppendable(const std::string& path, std::unique_ptr<WritableFile>* out) = 0;
  virtual Status OpenSequential(const std::string& path, std::unique_ptr<SequentialFile>* out) = 0;
  virtual Status FileSize(const std::string& path, uint64_t* size) = 0;
  virtual Status Rename(const std::string& from, const std::string& to) = 0;
  virtual Status SyncDir(const std::string& dir) = 0;  // makes entries created/renamed in dir durable
  // The names in dir (not . and ..), sorted. NOT_FOUND if dir does not exist.
  virtual Status ListDir(const std::string& dir, std::vector<std::string>* names) = 0;
  virtual Status Remove(const std::string& path) = 0;
  virtual Status TruncateFile(const std::string& path, uint64_t size) = 0;
  virtual Status CreateDir(const std::string& dir) = 0;  // OK if it exists
  virtual bool Exists(const std::string& path) = 0;

  static Env* Posix();
};

// Writes all of data, going on after short writes.
Status WriteAll(WritableFile& f, std::string_view data);
// Reads a whole file.
Status ReadWholeFile(Env* env, const std::string& path, std::string* out);
// A SequentialFile over bytes held in memory (decoders under test and fuzz).
std::unique_ptr<SequentialFile> StringSource(std::string data);

inline std::string JoinPath(const std::string& dir, const std::string& name) {
  return dir.empty() || dir.back() == '/' ? dir + name : dir + "/" + name;
}

}  // namespace rolis::durability
