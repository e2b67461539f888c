#include "fault_env.h"

#include <algorithm>

namespace rolis::durability {

class FaultWritable : public WritableFile {
 public:
  FaultWritable(FaultEnv* env, std::unique_ptr<WritableFile> base) : env_(env), base_(std::move(base)) {}

  Status Write(std::string_view data, size_t* written) override {
    *written = 0;
    env_->writes_.fetch_add(1);
    size_t n = data.size();
    if (size_t m = env_->max_write_.load(); m > 0) n = std::min(n, m);
    bool full = false;
    for (;;) {
      int64_t space = env_->space_.load();
      if (space < 0) break;
      size_t fits = std::min<size_t>(n, static_cast<size_t>(space));
      if (env_->space_.compare_exchange_weak(space, space - static_cast<int64_t>(fits))) {
        full = fits < n;
        n = fits;
        break;
      }
    }
    if (n > 0) {
      if (Status s = WriteAll(*base_, data.substr(0, n)); !s.ok()) return s;
      *written = n;
    }
    if (full) return Status::ResourceExhausted("write " + path() + ": No space left on device (injected)");
    return Status::OK();
  }
  Status Sync() override {
    {
      std::unique_lock<std::mutex> l(env_->mu_);
      env_->hold_cv_.wait(l, [&] { return !env_->hold_; });
    }
    if (env_->fail_sync_.load()) return Status::Internal("fdatasync " + path() + ": Input/output error (injected)");
    if (Status s = base_->Sync(); !s.ok()) return s;
    uint64_t size = 0;
    if (Status s = env_->base_->FileSize(path(), &size); !s.ok()) return s;
    std::lock_guard<std::mutex> g(env_->mu_);
    env_->synced_[path()] = size;
    env_->syncs_.fetch_add(1);
    return Status::OK();
  }
  Status Truncate(uint64_t size) override {
    if (Status s = base_->Truncate(size); !s.ok()) return s;
    std::lock_guard<std::mutex> g(env_->mu_);
    auto it = env_->synced_.find(path());
    if (it != env_->synced_.end()) it->second = std::min(it->second, size);
    return Status::OK();
  }
  const std::string& path() const override { return base_->path(); }

 private:
  FaultEnv* env_;
  std::unique_ptr<WritableFile> base_;
};

Status FaultEnv::OpenAppendable(const std::string& path, std::unique_ptr<WritableFile>* out) {
  bool existed = base_->Exists(path);
  uint64_t size = 0;
  if (existed) {
    if (Status s = base_->FileSize(path, &size); !s.ok()) return s;
  }
  std::unique_ptr<WritableFile> f;
  if (Status s = base_->OpenAppendable(path, &f); !s.ok()) return s;
  {
    std::lock_guard<std::mutex> g(mu_);
    if (!synced_.count(path)) synced_[path] = size;  // what was there before counts as synced
  }
  *out = std::make_unique<FaultWritable>(this, std::move(f));
  return Status::OK();
}

void FaultEnv::HoldSyncs(bool hold) {
  {
    std::lock_guard<std::mutex> g(mu_);
    hold_ = hold;
  }
  hold_cv_.notify_all();
}

Status FaultEnv::Rename(const std::string& from, const std::string& to) {
  if (Status s = base_->Rename(from, to); !s.ok()) return s;
  std::lock_guard<std::mutex> g(mu_);
  if (auto it = synced_.find(from); it != synced_.end()) {
    synced_[to] = it->second;
    synced_.erase(it);
  } else {
    synced_.erase(to);
  }
  return Status::OK();
}

Status FaultEnv::SyncDir(const std::string& dir) {
  if (fail_sync_.load()) return Status::Internal("fsync " + dir + ": Input/output error (injected)");
  return base_->SyncDir(dir);
}

Status FaultEnv::Remove(const std::string& path) {
  if (Status s = base_->Remove(path); !s.ok()) return s;
  std::lock_guard<std::mutex> g(mu_);
  synced_.erase(path);
  return Status::OK();
}

Status FaultEnv::TruncateFile(const std::string& path, uint64_t size) {
  if (Status s = base_->TruncateFile(path, size); !s.ok()) return s;
  std::lock_guard<std::mutex> g(mu_);
  if (auto it = synced_.find(path); it != synced_.end()) it->second = std::min(it->second, size);
  return Status::OK();
}

Status FaultEnv::Crash(uint64_t keep) {
  std::lock_guard<std::mutex> g(mu_);
  for (auto& [path, synced] : synced_) {
    uint64_t size = 0;
    if (!base_->FileSize(path, &size).ok()) continue;  // removed meanwhile
    uint64_t target = std::min(size, synced + keep);
    if (target < size) {
      if (Status s = base_->TruncateFile(path, target); !s.ok()) return s;
    }
  }
  return Status::OK();
}

Status FaultEnv::FlipByte(const std::string& path, uint64_t offset, uint8_t mask) {
  std::string data;
  if (Status s = ReadWholeFile(base_, path, &data); !s.ok()) return s;
  if (offset >= data.size()) return Status::InvalidArgument("offset past the end of " + path);
  data[offset] = static_cast<char>(data[offset] ^ mask);
  if (Status s = base_->TruncateFile(path, 0); !s.ok()) return s;
  std::unique_ptr<WritableFile> f;
  if (Status s = base_->OpenAppendable(path, &f); !s.ok()) return s;
  if (Status s = WriteAll(*f, data); !s.ok()) return s;
  return f->Sync();
}

}  // namespace rolis::durability
