#include "stream_log.h"

#include <algorithm>
#include <cstdio>

#include "frame.h"
#include "record_codec.h"

namespace rolis::durability {

using replication::Slot;

std::string StreamLogSet::StreamDir(const std::string& dir, uint32_t t) {
  return JoinPath(dir, "stream-" + std::to_string(t));
}

std::string StreamLogSet::SegmentFileName(uint64_t name) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%020llu.log", static_cast<unsigned long long>(name));
  return buf;
}

bool StreamLogSet::ParseSegmentFileName(const std::string& file, uint64_t* name) {
  if (file.size() != 24 || file.compare(20, 4, ".log") != 0) return false;
  uint64_t v = 0;
  for (size_t i = 0; i < 20; i++) {
    char c = file[i];
    if (c < '0' || c > '9') return false;
    uint64_t d = static_cast<uint64_t>(c - '0');
    if (v > (UINT64_MAX - d) / 10) return false;
    v = v * 10 + d;
  }
  *name = v;
  return true;
}

Status StreamLogSet::Open(Env* env, const std::string& dir, uint32_t streams, const StreamLogOptions& opts,
                          const std::vector<std::vector<SegmentInfo>>* existing,
                          std::unique_ptr<StreamLogSet>* out) {
  std::unique_ptr<StreamLogSet> log(new StreamLogSet(env, dir, opts));
  if (Status s = env->CreateDir(dir); !s.ok()) return s;
  for (uint32_t t = 0; t < streams; t++) {
    auto st = std::make_unique<Stream>();
    st->dir = StreamDir(dir, t);
    if (Status s = env->CreateDir(st->dir); !s.ok()) return s;
    if (existing && t < existing->size()) {
      st->segments = (*existing)[t];
    } else {
      std::vector<std::string> names;
      if (Status s = env->ListDir(st->dir, &names); !s.ok()) return s;
      for (const std::string& n : names) {
        SegmentInfo seg;
        if (!ParseSegmentFileName(n, &seg.name)) continue;
        seg.path = JoinPath(st->dir, n);
        seg.has_slots = true;
        seg.max_slot = UINT64_MAX;  // unknown: never removed
        st->segments.push_back(seg);
      }
    }
    if (!st->segments.empty()) st->next_name = st->segments.back().name + 1;
    log->streams_.push_back(std::move(st));
  }
  if (Status s = env->SyncDir(dir); !s.ok()) return s;
  log->syncer_ = std::thread([l = log.get()] { l->SyncLoop(); });
  *out = std::move(log);
  return Status::OK();
}

StreamLogSet::~StreamLogSet() {
  {
    std::lock_guard<std::mutex> g(sync_mu_);
    stop_ = true;
  }
  sync_cv_.notify_all();
  if (syncer_.joinable()) syncer_.join();
}

Status StreamLogSet::Roll(uint32_t t, Stream& s, uint64_t first_slot) {
  if (s.cur) {
    // The full segment is on disk before the next one gets a frame.
    Status st = s.cur->Sync();
    fdatasyncs_.fetch_add(1, std::memory_order_relaxed);
    if (!st.ok()) {
      Fail(st);
      return st;
    }
  }
  uint64_t name = std::max(first_slot, s.next_name);
  SegmentInfo seg;
  seg.name = name;
  seg.path = JoinPath(s.dir, SegmentFileName(name));
  std::unique_ptr<WritableFile> f;
  if (Status st = env_->OpenAppendable(seg.path, &f); !st.ok()) return st;
  std::string head;
  AppendFrame(&head, FrameType::kFileHeader, EncodeFileHeader(FileHeader{FileKind::kSegment, t, name}));
  if (Status st = WriteAll(*f, head); !st.ok()) {
    f.reset();
    (void)env_->Remove(seg.path);  // nothing in it counts; a leftover would be an empty newest segment
    return st;
  }
  seg.bytes = head.size();
  s.segments.push_back(seg);
  s.cur = std::move(f);
  s.cur_size = head.size();
  s.next_name = name + 1;
  s.dir_dirty = true;
  created_.fetch_add(1, std::memory_order_relaxed);
  return Status::OK();
}

Status StreamLogSet::Append(uint32_t t, const Slot& slot, uint64_t* position) {
  if (t >= streams_.size()) return Status::InvalidArgument("stream " + std::to_string(t) + " out of range");
  if (!slot.value) return Status::InvalidArgument("slot without a value");
  if (failed_flag_.load(std::memory_order_acquire)) return Health();
  Stream& s = *streams_[t];
  std::string meta = EncodeSlotMeta(t, slot);
  const std::string& payload = slot.value->payload;
  const uint64_t frame_bytes = kFrameHeaderBytes + meta.size() + payload.size();
  if (frame_bytes - kFrameHeaderBytes > kMaxFramePayload) return Status::InvalidArgument("slot too large for a frame");
  std::string head = FrameHeader(FrameType::kSlot, meta, payload);
  head.append(meta);
  {
    std::lock_guard<std::mutex> g(s.mu);
    if (!s.cur || (s.cur_size + frame_bytes > opts_.segment_bytes && s.segments.back().has_slots)) {
      if (Status st = Roll(t, s, slot.index); !st.ok()) return st;
    }
    Status st = WriteAll(*s.cur, head);
    if (st.ok()) st = WriteAll(*s.cur, payload);
    if (!st.ok()) {
      // Undo the partial frame so that later frames do not follow garbage.
      if (Status un = s.cur->Truncate(s.cur_size); !un.ok()) {
        Fail(Status(st.code(), st.message() + "; undoing it failed: " + un.message()));
      }
      return st;
    }
    s.cur_size += frame_bytes;
    SegmentInfo& seg = s.segments.back();
    seg.max_slot = seg.has_slots ? std::max(seg.max_slot, slot.index) : slot.index;
    seg.has_slots = true;
    seg.bytes = s.cur_size;
    *position = ++s.appended;
  }
  appends_.fetch_add(1, std::memory_order_relaxed);
  bytes_.fetch_add(frame_bytes, std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> g(sync_mu_);
    work_ = true;
  }
  sync_cv_.notify_one();
  return Status::OK();
}

uint64_t StreamLogSet::DurableThrough(uint32_t t) const {
  return t < streams_.size() ? streams_[t]->durable.load(std::memory_order_acquire) : 0;
}

uint64_t StreamLogSet::Appended(uint32_t t) const {
  if (t >= streams_.size()) return 0;
  std::lock_guard<std::mutex> g(streams_[t]->mu);
  return streams_[t]->appended;
}

Status StreamLogSet::WaitDurable(uint32_t t, uint64_t position, replication::SteadyClock::time_point deadline) {
  if (t >= streams_.size()) return Status::InvalidArgument("stream " + std::to_string(t) + " out of range");
  const Stream& s = *streams_[t];
  std::unique_lock<std::mutex> l(sync_mu_);
  for (;;) {
    if (!failed_.ok()) return failed_;
    if (s.durable.load(std::memory_order_acquire) >= position) return Status::OK();
    if (durable_cv_.wait_until(l, deadline) == std::cv_status::timeout) {
      if (!failed_.ok()) return failed_;
      if (s.durable.load(std::memory_order_acquire) >= position) return Status::OK();
      return Status::Aborted("stream " + std::to_string(t) + " position " + std::to_string(position) +
                             " not durable by the deadline");
    }
  }
}

void StreamLogSet::SetListener(std::function<void(uint32_t)> fn) {
  std::lock_guard<std::mutex> g(sync_mu_);
  listener_ = fn ? std::make_shared<std::function<void(uint32_t)>>(std::move(fn)) : nullptr;
}

Status StreamLogSet::Health() const {
  std::lock_guard<std::mutex> g(sync_mu_);
  return failed_;
}

void StreamLogSet::Fail(const Status& st) {
  {
    std::lock_guard<std::mutex> g(sync_mu_);
    if (failed_.ok()) failed_ = Status(st.code(), "the replicated log failed: " + st.message());
    failed_flag_.store(true, std::memory_order_release);
    work_ = true;  // the syncer tells the listener
  }
  durable_cv_.notify_all();
  sync_cv_.notify_all();
}

void StreamLogSet::SyncLoop() {
  struct Todo {
    uint32_t t;
    std::shared_ptr<WritableFile> file;
    uint64_t target;
    bool dir;
  };
  std::vector<Todo> todo;
  for (;;) {
    {
      std::unique_lock<std::mutex> l(sync_mu_);
      sync_cv_.wait(l, [&] { return work_ || stop_; });
      if (!work_ && stop_) return;
      work_ = false;
    }
    if (!failed_flag_.load(std::memory_order_acquire)) {
      todo.clear();
      for (uint32_t t = 0; t < streams_.size(); t++) {
        Stream& s = *streams_[t];
        std::lock_guard<std::mutex> g(s.mu);
        if (s.appended > s.durable.load(std::memory_order_relaxed) || s.dir_dirty) {
          todo.push_back(Todo{t, s.cur, s.appended, s.dir_dirty});
          s.dir_dirty = false;
        }
      }
      Status err;
      for (const Todo& d : todo) {
        if (d.file) {
          err = d.file->Sync();
          fdatasyncs_.fetch_add(1, std::memory_order_relaxed);
          if (!err.ok()) break;
        }
        if (d.dir) {
          err = env_->SyncDir(streams_[d.t]->dir);
          if (!err.ok()) break;
        }
      }
      if (!err.ok()) {
        Fail(err);
      } else if (!todo.empty()) {
        rounds_.fetch_add(1, std::memory_order_relaxed);
        for (const Todo& d : todo) {
          Stream& s = *streams_[d.t];
          uint64_t cur = s.durable.load(std::memory_order_relaxed);
          if (d.target > cur) s.durable.store(d.target, std::memory_order_release);
        }
        std::shared_ptr<std::function<void(uint32_t)>> fn;
        {
          std::lock_guard<std::mutex> g(sync_mu_);
          fn = listener_;
        }
        durable_cv_.notify_all();
        if (fn) {
          for (const Todo& d : todo) (*fn)(d.t);
        }
        continue;
      } else {
        continue;
      }
    }
    // Failed: tell every stream once, then only wait for the stop.
    std::shared_ptr<std::function<void(uint32_t)>> fn;
    {
      std::lock_guard<std::mutex> g(sync_mu_);
      fn = listener_;
    }
    durable_cv_.notify_all();
    if (fn) {
      for (uint32_t t = 0; t < streams_.size(); t++) (*fn)(t);
    }
    std::unique_lock<std::mutex> l(sync_mu_);
    sync_cv_.wait(l, [&] { return stop_; });
    return;
  }
}

Status StreamLogSet::RemoveBelow(uint32_t t, uint64_t slot, size_t* removed) {
  if (removed) *removed = 0;
  if (t >= streams_.size()) return Status::InvalidArgument("stream " + std::to_string(t) + " out of range");
  Stream& s = *streams_[t];
  std::lock_guard<std::mutex> g(s.mu);
  size_t keep_from = 0;
  size_t closed = s.cur ? s.segments.size() - 1 : s.segments.size();
  while (keep_from < closed) {
    const SegmentInfo& seg = s.segments[keep_from];
    if (seg.has_slots && seg.max_slot >= slot) break;
    if (Status st = env_->Remove(seg.path); !st.ok() && !st.IsNotFound()) {
      s.segments.erase(s.segments.begin(), s.segments.begin() + static_cast<long>(keep_from));
      return st;
    }
    keep_from++;
  }
  if (keep_from == 0) return Status::OK();
  s.segments.erase(s.segments.begin(), s.segments.begin() + static_cast<long>(keep_from));
  removed_.fetch_add(keep_from, std::memory_order_relaxed);
  if (removed) *removed = keep_from;
  return env_->SyncDir(s.dir);
}

std::vector<SegmentInfo> StreamLogSet::Segments(uint32_t t) const {
  if (t >= streams_.size()) return {};
  std::lock_guard<std::mutex> g(streams_[t]->mu);
  return streams_[t]->segments;
}

StreamLogStats StreamLogSet::stats() const {
  StreamLogStats st;
  st.appends = appends_.load();
  st.bytes = bytes_.load();
  st.sync_rounds = rounds_.load();
  st.fdatasyncs = fdatasyncs_.load();
  st.segments_created = created_.load();
  st.segments_removed = removed_.load();
  return st;
}

}  // namespace rolis::durability
