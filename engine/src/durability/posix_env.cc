#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "file_env.h"

namespace rolis::durability {
namespace {

Status IoError(const std::string& op, const std::string& path, int err) {
  std::string msg = op + " " + path + ": " + std::strerror(err);
  if (err == ENOSPC || err == EDQUOT) return Status::ResourceExhausted(msg);
  if (err == ENOENT) return Status::NotFound(msg);
  return Status::Internal(msg);
}

class PosixWritable : public WritableFile {
 public:
  PosixWritable(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  ~PosixWritable() override { ::close(fd_); }

  Status Write(std::string_view data, size_t* written) override {
    *written = 0;
    for (;;) {
      ssize_t n = ::write(fd_, data.data(), data.size());
      if (n >= 0) {
        *written = static_cast<size_t>(n);
        return Status::OK();
      }
      if (errno != EINTR) return IoError("write", path_, errno);
    }
  }
  Status Sync() override {
    if (::fdatasync(fd_) != 0) return IoError("fdatasync", path_, errno);
    return Status::OK();
  }
  Status Truncate(uint64_t size) override {
    if (::ftruncate(fd_, static_cast<off_t>(size)) != 0) return IoError("ftruncate", path_, errno);
    if (::lseek(fd_, static_cast<off_t>(size), SEEK_SET) < 0) return IoError("lseek", path_, errno);
    return Status::OK();
  }
  const std::string& path() const override { return path_; }

 private:
  std::string path_;
  int fd_;
};

class PosixSequential : public SequentialFile {
 public:
  PosixSequential(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  ~PosixSequential() override { ::close(fd_); }
  Status Read(size_t n, std::string* out) override {
    out->resize(n);
    size_t got = 0;
    while (got < n) {
      ssize_t r = ::read(fd_, out->data() + got, n - got);
      if (r == 0) break;
      if (r < 0) {
        if (errno == EINTR) continue;
        out->clear();
        return IoError("read", path_, errno);
      }
      got += static_cast<size_t>(r);
    }
    out->resize(got);
    return Status::OK();
  }

 private:
  std::string path_;
  int fd_;
};

class PosixEnv : public Env {
 public:
  Status OpenAppendable(const std::string& path, std::unique_ptr<WritableFile>* out) override {
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) return IoError("open", path, errno);
    *out = std::make_unique<PosixWritable>(path, fd);
    return Status::OK();
  }
  Status OpenSequential(const std::string& path, std::unique_ptr<SequentialFile>* out) override {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return IoError("open", path, errno);
    *out = std::make_unique<PosixSequential>(path, fd);
    return Status::OK();
  }
  Status FileSize(const std::string& path, uint64_t* size) override {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return IoError("stat", path, errno);
    *size = static_cast<uint64_t>(st.st_size);
    return Status::OK();
  }
  Status Rename(const std::string& from, const std::string& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0) return IoError("rename to " + to, from, errno);
    return Status::OK();
  }
  Status SyncDir(const std::string& dir) override {
    int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return IoError("open", dir, errno);
    int rc = ::fsync(fd);
    int err = errno;
    ::close(fd);
    if (rc != 0) return IoError("fsync", dir, err);
    return Status::OK();
  }
  Status ListDir(const std::string& dir, std::vector<std::string>* names) override {
    names->clear();
    DIR* d = ::opendir(dir.c_str());
    if (!d) return IoError("opendir", dir, errno);
    while (struct dirent* e = ::readdir(d)) {
      std::string n = e->d_name;
      if (n != "." && n != "..") names->push_back(std::move(n));
    }
    ::closedir(d);
    std::sort(names->begin(), names->end());
    return Status::OK();
  }
  Status Remove(const std::string& path) override {
    if (::unlink(path.c_str()) != 0) return IoError("unlink", path, errno);
    return Status::OK();
  }
  Status TruncateFile(const std::string& path, uint64_t size) override {
    if (::truncate(path.c_str(), static_cast<off_t>(size)) != 0) return IoError("truncate", path, errno);
    return Status::OK();
  }
  Status CreateDir(const std::string& dir) override {
    if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) return IoError("mkdir", dir, errno);
    return Status::OK();
  }
  bool Exists(const std::string& path) override {
    struct stat st;
    return ::stat(path.c_str(), &st) == 0;
  }
};

class StringSequential : public SequentialFile {
 public:
  explicit StringSequential(std::string data) : data_(std::move(data)) {}
  Status Read(size_t n, std::string* out) override {
    size_t k = std::min(n, data_.size() - pos_);
    out->assign(data_, pos_, k);
    pos_ += k;
    return Status::OK();
  }

 private:
  std::string data_;
  size_t pos_ = 0;
};

}  // namespace

Env* Env::Posix() {
  static PosixEnv env;
  return &env;
}

Status WriteAll(WritableFile& f, std::string_view data) {
  while (!data.empty()) {
    size_t n = 0;
    Status s = f.Write(data, &n);
    if (!s.ok()) return s;
    if (n == 0) return Status::Internal("write " + f.path() + ": no progress");
    data.remove_prefix(n);
  }
  return Status::OK();
}

Status ReadWholeFile(Env* env, const std::string& path, std::string* out) {
  out->clear();
  std::unique_ptr<SequentialFile> f;
  if (Status s = env->OpenSequential(path, &f); !s.ok()) return s;
  std::string chunk;
  for (;;) {
    if (Status s = f->Read(1 << 20, &chunk); !s.ok()) return s;
    if (chunk.empty()) return Status::OK();
    out->append(chunk);
  }
}

std::unique_ptr<SequentialFile> StringSource(std::string data) {
  return std::make_unique<StringSequential>(std::move(data));
}

}  // namespace rolis::durability
