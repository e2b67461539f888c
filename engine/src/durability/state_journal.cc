#include "state_journal.h"

#include "frame.h"
#include "membership.h"
#include "record_codec.h"

namespace rolis::durability {

using replication::ControlVote;
using replication::DecidedPtr;

void AcceptorState::ApplyPromise(uint64_t epoch) { promised = std::max(promised, epoch); }

void AcceptorState::ApplyDecided(const DecidedPtr& d) {
  if (!d || (decided && !replication::NewerRecord(*d, *decided))) return;
  decided = d;
  votes.erase(votes.begin(), votes.lower_bound(replication::InstanceAfter(d.get())));
}

void AcceptorState::ApplyVote(const ControlVote& v) {
  if (v.instance < replication::InstanceAfter(decided.get())) return;  // settled
  votes[v.instance] = v;
}

namespace {

std::string OneFrame(FrameType type, const std::string& payload) {
  std::string f;
  AppendFrame(&f, type, payload);
  return f;
}

std::string HeaderFrame() {
  return OneFrame(FrameType::kFileHeader, EncodeFileHeader(FileHeader{FileKind::kJournal, 0, 0}));
}

std::string StateFrames(const AcceptorState& st) {
  std::string out = HeaderFrame();
  if (st.promised) AppendFrame(&out, FrameType::kPromise, EncodePromise(st.promised));
  if (st.decided) AppendFrame(&out, FrameType::kDecided, EncodeDecided(*st.decided));
  for (const auto& [i, v] : st.votes) AppendFrame(&out, FrameType::kControlVote, EncodeControlVote(v));
  return out;
}

}  // namespace

Status StateJournal::Load(Env* env, const std::string& dir, bool truncate, AcceptorState* state, JournalLoad* load) {
  *state = AcceptorState{};
  *load = JournalLoad{};
  const std::string path = JoinPath(dir, FileName());
  if (!env->Exists(path)) return Status::OK();
  load->found = true;
  std::string data;
  if (Status s = ReadWholeFile(env, path, &data); !s.ok()) return s;
  bool first = true;
  FrameScan scan;
  Status s = ScanFrames(data, [&](const Frame& f, size_t off) -> Status {
    auto where = [&] { return path + " at byte " + std::to_string(off) + ": "; };
    if (first) {
      first = false;
      FileHeader h;
      if (f.type != FrameType::kFileHeader) return Status::InvalidArgument(where() + "no file header");
      if (Status e = DecodeFileHeader(f.payload, &h); !e.ok()) return Status::InvalidArgument(where() + e.message());
      if (h.kind != FileKind::kJournal) return Status::InvalidArgument(where() + "not an acceptor journal");
      return Status::OK();
    }
    load->frames++;
    switch (f.type) {
      case FrameType::kPromise: {
        uint64_t e = 0;
        if (Status d = DecodePromise(f.payload, &e); !d.ok()) return Status::InvalidArgument(where() + d.message());
        state->ApplyPromise(e);
        return Status::OK();
      }
      case FrameType::kDecided: {
        DecidedPtr d;
        if (Status e = DecodeDecided(f.payload, &d); !e.ok()) return Status::InvalidArgument(where() + e.message());
        state->ApplyDecided(d);
        return Status::OK();
      }
      case FrameType::kControlVote: {
        ControlVote v;
        if (Status e = DecodeControlVote(f.payload, &v); !e.ok()) return Status::InvalidArgument(where() + e.message());
        state->ApplyVote(v);
        return Status::OK();
      }
      default:
        return Status::InvalidArgument(where() + "unexpected frame type " + std::to_string(static_cast<int>(f.type)));
    }
  }, &scan);
  if (!s.ok()) return s;
  load->bytes = scan.valid_end;
  if (scan.fault != FrameFault::kNone) {
    if (!scan.tail) {
      return Status::InvalidArgument(path + " at byte " + std::to_string(scan.valid_end) + ": " +
                                     FrameFaultName(scan.fault) + " (corrupt: well-formed frames follow)");
    }
    load->cut = true;
    load->cut_offset = scan.valid_end;
    load->cut_bytes = data.size() - scan.valid_end;
    load->cut_reason = FrameFaultName(scan.fault);
    if (truncate) {
      if (Status t = env->TruncateFile(path, scan.valid_end); !t.ok()) return t;
    }
  }
  return Status::OK();
}

Status StateJournal::Open(Env* env, const std::string& dir, const AcceptorState& state, uint64_t compact_bytes,
                          std::unique_ptr<StateJournal>* out) {
  std::unique_ptr<StateJournal> j(new StateJournal(env, dir, compact_bytes));
  if (Status s = env->CreateDir(dir); !s.ok()) return s;
  j->state_ = state;
  std::lock_guard<std::mutex> g(j->mu_);
  // Start from a file of the current state: it drops what Load cut or
  // settled, and a missing file gets its header.
  if (Status s = j->RewriteLocked(); !s.ok()) return s;
  *out = std::move(j);
  return Status::OK();
}

Status StateJournal::RewriteLocked() {
  const std::string path = JoinPath(dir_, FileName());
  const std::string tmp = path + ".tmp";
  file_.reset();
  if (env_->Exists(tmp)) {
    if (Status s = env_->Remove(tmp); !s.ok()) return s;
  }
  std::string data = StateFrames(state_);
  std::unique_ptr<WritableFile> f;
  if (Status s = env_->OpenAppendable(tmp, &f); !s.ok()) return s;
  Status s = WriteAll(*f, data);
  if (s.ok()) s = f->Sync();
  if (s.ok()) s = env_->Rename(tmp, path);
  if (s.ok()) s = env_->SyncDir(dir_);
  if (!s.ok()) {
    failed_ = s;
    return s;
  }
  f.reset();
  if (Status o = env_->OpenAppendable(path, &file_); !o.ok()) {
    failed_ = o;
    return o;
  }
  size_ = data.size();
  compactions_++;
  return Status::OK();
}

Status StateJournal::AppendLocked(const std::string& frame) {
  if (!failed_.ok()) return failed_;
  if (size_ + frame.size() > compact_bytes_) return RewriteLocked();  // the state already holds the change
  Status s = WriteAll(*file_, frame);
  if (s.ok()) s = file_->Sync();
  if (!s.ok()) {
    failed_ = Status(s.code(), "the acceptor journal failed: " + s.message());
    return failed_;
  }
  size_ += frame.size();
  return Status::OK();
}

Status StateJournal::ApplyAndAppendLocked(const std::function<void(AcceptorState&)>& apply,
                                          const std::string& frame) {
  AcceptorState before = state_;
  apply(state_);
  Status s = AppendLocked(frame);
  if (!s.ok()) state_ = before;  // the state stays what the file holds
  return s;
}

Status StateJournal::RecordPromise(uint64_t epoch) {
  std::lock_guard<std::mutex> g(mu_);
  if (!failed_.ok()) return failed_;
  if (epoch <= state_.promised) return Status::OK();
  return ApplyAndAppendLocked([&](AcceptorState& st) { st.ApplyPromise(epoch); },
                              OneFrame(FrameType::kPromise, EncodePromise(epoch)));
}

Status StateJournal::RecordControlVote(const ControlVote& v) {
  std::lock_guard<std::mutex> g(mu_);
  if (!failed_.ok()) return failed_;
  return ApplyAndAppendLocked([&](AcceptorState& st) { st.ApplyVote(v); },
                              OneFrame(FrameType::kControlVote, EncodeControlVote(v)));
}

Status StateJournal::RecordDecided(const DecidedPtr& d) {
  if (!d) return Status::InvalidArgument("no decided record");
  std::lock_guard<std::mutex> g(mu_);
  if (!failed_.ok()) return failed_;
  if (state_.decided && !replication::NewerRecord(*d, *state_.decided)) return Status::OK();
  return ApplyAndAppendLocked([&](AcceptorState& st) { st.ApplyDecided(d); },
                              OneFrame(FrameType::kDecided, EncodeDecided(*d)));
}

Status StateJournal::Health() const {
  std::lock_guard<std::mutex> g(mu_);
  return failed_;
}

AcceptorState StateJournal::state() const {
  std::lock_guard<std::mutex> g(mu_);
  return state_;
}

uint64_t StateJournal::compactions() const {
  std::lock_guard<std::mutex> g(mu_);
  return compactions_;
}

}  // namespace rolis::durability
