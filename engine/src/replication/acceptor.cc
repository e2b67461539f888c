#include "acceptor.h"

#include <algorithm>
#include <iterator>

namespace rolis::replication {

bool AdvanceReach(const Slot& slot, const EpochRecord& decided, LogKey* reach, uint64_t* barrier) {
  if (slot.ballot < *barrier) return false;  // stale: that barrier's leader never wrote it
  const Batch& v = *slot.value;
  if (v.kind == BatchKind::kNoop) return true;
  if (v.kind == BatchKind::kBarrier) {
    *barrier = v.epoch;
    return true;
  }
  LogKey key{v.epoch, v.last_ts};
  if (IsValid(decided, key)) {
    *reach = std::max(*reach, key);
  } else if (auto it = decided.cut.find(v.epoch); v.epoch < decided.epoch && it != decided.cut.end()) {
    *reach = std::max(*reach, LogKey{v.epoch, it->second});
  }
  return true;
}

Acceptor::Acceptor(uint32_t streams) {
  for (uint32_t i = 0; i < streams; i++) streams_.push_back(std::make_unique<StreamLog>());
}

bool Acceptor::RaisePromiseLocked(uint64_t epoch) {
  uint64_t cur = promised_.load(std::memory_order_acquire);
  while (epoch > cur) {
    if (promised_.compare_exchange_weak(cur, epoch, std::memory_order_acq_rel)) return true;
  }
  return false;
}

void Acceptor::RaisePromise(uint64_t epoch) {
  std::lock_guard<std::mutex> g(promise_mu_);
  std::vector<std::unique_lock<std::mutex>> locks;
  for (auto& s : streams_) locks.emplace_back(s->mu);
  // Not raised if it cannot be made durable (the journal failed).
  if (!RecordPromiseLocked(epoch).ok()) return;
  RaisePromiseLocked(epoch);
}

bool Acceptor::AcceptLocked(StreamLog& s, uint32_t t, const Slot& slot, uint64_t epoch, uint64_t log_start,
                            uint64_t* need_from, std::string* error) {
  if (epoch < promised_.load(std::memory_order_acquire)) return false;
  if (journal_) {
    // A failed journal stops this member from acknowledging anything.
    if (Status h = journal_->Health(); !h.ok()) {
      *error = "durability: " + h.message();
      return false;
    }
  }
  if (slot.index >= s.first_slot) {
    auto it = s.slots.find(slot.index);
    if (it == s.slots.end() || it->second.ballot < epoch || it->second.value == nullptr) {
      Slot stored{slot.index, epoch, slot.value};
      uint64_t pos = 0;
      // Written before anything changes: a refused write changes nothing.
      if (journal_) {
        if (Status st = journal_->AppendSlot(t, stored, &pos); !st.ok()) {
          *error = "durability: " + st.message();
          return false;
        }
        s.pending[slot.index] = pos;
        s.pending_order.emplace_back(pos, slot.index);
      }
      if (it == s.slots.end()) {
        it = s.slots.emplace(slot.index, std::move(stored)).first;
      } else {
        if (it->second.value) bytes_.fetch_sub(it->second.value->bytes(), std::memory_order_relaxed);
        it->second = std::move(stored);
      }
      bytes_.fetch_add(slot.value->bytes(), std::memory_order_relaxed);
    }
    // Same ballot again: a duplicate (one proposer per ballot, one value).
  }
  // The ballot is in the slot's frame: recovery's promise covers it.
  RaisePromiseLocked(epoch);
  // Below first_slot: compacted, hence chosen; the proposer of a higher
  // ballot proposes the chosen value there, so the vote stands.
  if (s.contig_epoch != epoch) {
    s.contig_epoch = epoch;
    s.contig = 0;
  }
  s.contig = std::max({s.contig, s.first_slot, log_start});
  for (;;) {
    auto it = s.slots.find(s.contig);
    if (it == s.slots.end() || it->second.ballot != epoch) break;
    s.contig++;
  }
  *need_from = s.contig;
  return true;
}

Status Acceptor::RecordPromiseLocked(uint64_t epoch) {
  if (!journal_ || epoch <= promised_.load(std::memory_order_acquire)) return Status::OK();
  return journal_->RecordPromise(epoch);
}

uint64_t Acceptor::DurableNeedFromLocked(StreamLog& s, uint32_t t, uint64_t epoch, uint64_t log_start) {
  if (journal_) {
    const uint64_t durable = journal_->DurableThrough(t);
    while (!s.pending_order.empty() && s.pending_order.front().first <= durable) {
      auto [pos, index] = s.pending_order.front();
      if (auto it = s.pending.find(index); it != s.pending.end() && it->second == pos) s.pending.erase(it);
      s.pending_order.pop_front();
    }
  }
  if (s.dcontig_epoch != epoch) {
    s.dcontig_epoch = epoch;
    s.dcontig = 0;
  }
  s.dcontig = std::max({s.dcontig, s.first_slot, log_start});
  for (;;) {
    auto it = s.slots.find(s.dcontig);
    if (it == s.slots.end() || it->second.ballot != epoch || s.pending.count(s.dcontig)) break;
    s.dcontig++;
  }
  return s.dcontig;
}

uint64_t Acceptor::DurableNeedFrom(uint32_t t, uint64_t epoch, uint64_t log_start) {
  StreamLog& s = *streams_[t];
  std::lock_guard<std::mutex> g(s.mu);
  return DurableNeedFromLocked(s, t, epoch, log_start);
}

Status Acceptor::AwaitDurable(uint32_t t, SteadyClock::time_point deadline) {
  if (!journal_) return Status::OK();
  uint64_t position = 0;
  {
    StreamLog& s = *streams_[t];
    std::lock_guard<std::mutex> g(s.mu);
    if (!s.pending_order.empty()) position = s.pending_order.back().first;
  }
  if (position == 0) return Status::OK();
  return journal_->WaitDurable(t, position, deadline);
}

AcceptReply Acceptor::Accept(const AcceptMsg& m) {
  AcceptReply r;
  r.stream = m.stream;
  r.slot_index = m.slot.index;
  StreamLog& s = *streams_[m.stream];
  std::lock_guard<std::mutex> g(s.mu);
  r.ok = AcceptLocked(s, m.stream, m.slot, m.epoch, m.log_start, &r.need_from, &r.error);
  r.promised_epoch = promised_.load(std::memory_order_acquire);
  r.first_slot = s.first_slot;
  if (r.ok && journal_) {
    r.held_from = r.need_from;
    r.need_from = DurableNeedFromLocked(s, m.stream, m.epoch, m.log_start);
  }
  return r;
}

bool Acceptor::AcceptLocal(uint32_t t, const Slot& slot, uint64_t epoch, uint64_t log_start, uint64_t* need_from) {
  StreamLog& s = *streams_[t];
  std::lock_guard<std::mutex> g(s.mu);
  std::string error;
  if (!AcceptLocked(s, t, slot, epoch, log_start, need_from, &error)) return false;
  if (journal_) *need_from = DurableNeedFromLocked(s, t, epoch, log_start);
  return true;
}

PromiseReply Acceptor::Promise(const PromiseMsg& m) {
  PromiseReply r;
  std::lock_guard<std::mutex> g(promise_mu_);
  std::vector<std::unique_lock<std::mutex>> locks;
  for (auto& s : streams_) locks.emplace_back(s->mu);
  uint64_t p = promised_.load(std::memory_order_acquire);
  // from_slot trims a peek's answer; a Prepare's proposer needs every slot
  // it could have to re-propose, so a real Promise that carries it is a
  // proposer's bug and is refused rather than answered in part.
  if (!m.from_slot.empty() && (!m.peek || m.from_slot.size() != streams_.size())) {
    r.ok = false;
    r.promised_epoch = p;
    r.error = !m.peek ? "from_slot is for a peek only; a promise returns every slot"
                      : "from_slot lists " + std::to_string(m.from_slot.size()) + " streams, this member has " +
                            std::to_string(streams_.size());
    return r;
  }
  if (!m.peek) {
    // Ballots are unique per proposer: an equal epoch only to the proposer
    // it was promised to (docs/replication.md, "Failover to epoch e'").
    if (m.epoch < p || (m.epoch == p && (granted_epoch_ != p || granted_to_ != m.from))) {
      r.ok = false;
      r.promised_epoch = p;
      if (m.epoch == p) {
        r.error = granted_epoch_ == p ? "epoch " + std::to_string(p) + " was promised to member " +
                                            std::to_string(granted_to_)
                                      : "epoch " + std::to_string(p) + " was promised to another proposer";
      }
      return r;
    }
    if (journal_) {
      // Durable before the reply; a failed journal refuses even an epoch it holds.
      Status st = journal_->Health();
      if (st.ok()) st = RecordPromiseLocked(m.epoch);
      if (!st.ok()) {
        r.ok = false;
        r.promised_epoch = p;
        r.error = "durability: " + st.message();
        return r;
      }
    }
    RaisePromiseLocked(m.epoch);
    granted_epoch_ = m.epoch;
    granted_to_ = m.from;
  }
  r.ok = true;
  r.promised_epoch = promised_.load(std::memory_order_acquire);
  r.streams.resize(streams_.size());
  for (size_t t = 0; t < streams_.size(); t++) {
    const StreamLog& s = *streams_[t];
    StreamSlots& out = r.streams[t];
    out.first_slot = s.first_slot;
    out.base_key = s.base_key;
    out.base_barrier = s.base_barrier;
    auto from = m.from_slot.empty() ? s.slots.begin() : s.slots.lower_bound(m.from_slot[t]);
    out.slots.reserve(static_cast<size_t>(std::distance(from, s.slots.end())));
    for (auto it = from; it != s.slots.end(); ++it) out.slots.push_back(it->second);
  }
  return r;
}

bool Acceptor::Get(uint32_t t, uint64_t index, Slot* out) const {
  const StreamLog& s = *streams_[t];
  std::lock_guard<std::mutex> g(s.mu);
  auto it = s.slots.find(index);
  if (it == s.slots.end()) return false;
  *out = it->second;
  return true;
}

uint64_t Acceptor::first_slot(uint32_t t) const {
  const StreamLog& s = *streams_[t];
  std::lock_guard<std::mutex> g(s.mu);
  return s.first_slot;
}

uint64_t Acceptor::next_slot(uint32_t t) const {
  const StreamLog& s = *streams_[t];
  std::lock_guard<std::mutex> g(s.mu);
  return s.slots.empty() ? s.first_slot : std::max(s.first_slot, s.slots.rbegin()->first + 1);
}

size_t Acceptor::slot_count(uint32_t t) const {
  const StreamLog& s = *streams_[t];
  std::lock_guard<std::mutex> g(s.mu);
  return s.slots.size();
}

void Acceptor::Compact(uint32_t t, uint64_t below, const EpochRecord& decided) {
  StreamLog& s = *streams_[t];
  std::lock_guard<std::mutex> g(s.mu);
  if (below <= s.first_slot) return;
  // Only a contiguous prefix is compacted (the caller replayed it).
  uint64_t i = s.first_slot;
  while (i < below) {
    auto it = s.slots.find(i);
    if (it == s.slots.end()) break;
    AdvanceReach(it->second, decided, &s.base_key, &s.base_barrier);
    bytes_.fetch_sub(it->second.value->bytes(), std::memory_order_relaxed);
    s.slots.erase(it);
    i++;
  }
  s.first_slot = i;
  s.pending.erase(s.pending.begin(), s.pending.lower_bound(i));
}

void Acceptor::Reset(const std::vector<StreamSlots>& streams, uint64_t promised) {
  std::lock_guard<std::mutex> g(promise_mu_);
  std::vector<std::unique_lock<std::mutex>> locks;
  for (auto& s : streams_) locks.emplace_back(s->mu);
  // The adopted promise is durable first; if it cannot be, nothing changes
  // (the journal failed: this member no longer answers).
  if (!RecordPromiseLocked(promised).ok()) {
    return;
  }
  size_t bytes = 0;
  for (size_t t = 0; t < streams_.size() && t < streams.size(); t++) {
    StreamLog& s = *streams_[t];
    s.first_slot = streams[t].first_slot;
    s.slots.erase(s.slots.begin(), s.slots.lower_bound(s.first_slot));
    s.pending.erase(s.pending.begin(), s.pending.lower_bound(s.first_slot));
    s.base_key = streams[t].base_key;
    s.base_barrier = streams[t].base_barrier;
    s.contig_epoch = 0;
    s.contig = 0;
    s.dcontig_epoch = 0;
    s.dcontig = 0;
    for (const Slot& slot : streams[t].slots) {
      if (slot.index < s.first_slot || !slot.value) continue;
      auto it = s.slots.find(slot.index);
      if (it != s.slots.end() && slot.ballot <= it->second.ballot) continue;
      // An adopted vote is written like an accepted one; one that cannot
      // be is not adopted (the member then lacks it, as if not sent).
      uint64_t pos = 0;
      if (journal_) {
        if (!journal_->AppendSlot(static_cast<uint32_t>(t), slot, &pos).ok()) continue;
        s.pending[slot.index] = pos;
        s.pending_order.emplace_back(pos, slot.index);
      }
      s.slots[slot.index] = slot;
    }
    for (const auto& [i, slot] : s.slots) bytes += slot.value ? slot.value->bytes() : 0;
  }
  bytes_.store(bytes, std::memory_order_relaxed);
  RaisePromiseLocked(promised);
}

// ---------------------------------------------------------------------------

DecidedPtr ControlAcceptor::latest() const {
  std::lock_guard<std::mutex> g(mu_);
  return latest_;
}

bool ControlAcceptor::LearnLocked(const DecidedPtr& d, std::string* error) {
  if (journal_) {
    if (Status st = journal_->RecordDecided(d); !st.ok()) {
      *error = "durability: " + st.message();
      return false;
    }
  }
  latest_ = d;
  // Instances before the newest record are settled: forget them.
  instances_.erase(instances_.begin(), instances_.lower_bound(InstanceAfter(d.get())));
  return true;
}

bool ControlAcceptor::RecordVoteLocked(uint64_t instance, const Instance& in, std::string* error) {
  if (!journal_) return true;
  Status st = journal_->Health();
  if (st.ok()) st = journal_->RecordControlVote(ControlVote{instance, in.promised, in.accepted_ballot, in.accepted});
  if (!st.ok()) {
    *error = "durability: " + st.message();
    return false;
  }
  return true;
}

bool ControlAcceptor::Learn(const DecidedPtr& d) {
  if (!d) return false;
  std::lock_guard<std::mutex> g(mu_);
  if (latest_ && !NewerRecord(*d, *latest_)) return false;
  std::string error;
  return LearnLocked(d, &error);
}

ControlAcceptor::Vote ControlAcceptor::Current() const {
  std::lock_guard<std::mutex> g(mu_);
  Vote v;
  v.instance = InstanceAfter(latest_.get());
  if (auto it = instances_.find(v.instance); it != instances_.end()) {
    v.promised = it->second.promised;
    v.accepted_ballot = it->second.accepted_ballot;
    v.accepted = it->second.accepted;
  }
  return v;
}

void ControlAcceptor::Adopt(const Vote& v) {
  std::lock_guard<std::mutex> g(mu_);
  if (v.instance < InstanceAfter(latest_.get())) return;  // settled
  Instance in;
  if (auto it = instances_.find(v.instance); it != instances_.end()) in = it->second;
  in.promised = std::max(in.promised, v.promised);
  if (v.accepted && v.accepted_ballot > in.accepted_ballot) {
    in.accepted_ballot = v.accepted_ballot;
    in.accepted = v.accepted;
    in.promised = std::max(in.promised, v.accepted_ballot);
  }
  std::string error;
  if (!RecordVoteLocked(v.instance, in, &error)) return;  // the journal failed: this member no longer votes
  instances_[v.instance] = in;
}

bool ControlAcceptor::HasState() const {
  std::lock_guard<std::mutex> g(mu_);
  return latest_ != nullptr || !instances_.empty();
}

bool ControlAcceptor::HasAccepted() const {
  std::lock_guard<std::mutex> g(mu_);
  if (latest_) return true;
  for (const auto& [p, in] : instances_) {
    if (in.accepted) return true;
  }
  return false;
}

ControlReply ControlAcceptor::Handle(const ControlMsg& m, uint32_t self, const std::function<uint64_t()>& promised) {
  ControlReply r;
  r.from = self;
  std::lock_guard<std::mutex> g(mu_);
  if (m.kind == ControlMsg::Kind::kLearn && m.value) {
    if (!latest_ || NewerRecord(*m.value, *latest_)) {
      if (!LearnLocked(m.value, &r.error)) {
        r.latest = latest_;
        return r;
      }
    }
  }
  // The previous record travels with the proposal: it was decided.
  if (m.prev && InstanceAfter(m.prev.get()) == m.instance && (!latest_ || NewerRecord(*m.prev, *latest_))) {
    if (!LearnLocked(m.prev, &r.error)) {
      r.latest = latest_;
      return r;
    }
  }
  r.latest = latest_;
  if (m.kind == ControlMsg::Kind::kLearn || m.kind == ControlMsg::Kind::kQuery) {
    r.ok = true;
    return r;
  }
  uint64_t known = InstanceAfter(latest_.get());
  if (known > m.instance) {
    r.error = "a newer record is decided";
    return r;  // the compare-and-set fails: a later record exists
  }
  if (known < m.instance) {
    r.error = "instance of a record not known to be decided";
    return r;
  }
  // A membership change (a record of the epoch in force) is fenced like the
  // epoch's accepts: once this member promised a newer epoch, the old
  // leader's change cannot be chosen (read under mu_, so a Promise that
  // reads this instance's vote after raising its epoch sees every accept
  // made before, and none is made after).
  if (m.kind == ControlMsg::Kind::kAccept && m.value && latest_ &&
      m.value->record.epoch == latest_->record.epoch && promised && promised() > m.value->record.epoch) {
    r.error = "epoch " + std::to_string(promised()) + " was promised: the membership change of epoch " +
              std::to_string(m.value->record.epoch) + " is fenced";
    return r;
  }
  Instance& in = instances_[m.instance];
  r.promised = in.promised;
  if (m.kind == ControlMsg::Kind::kPrepare) {
    if (m.ballot <= in.promised) return r;
    Instance next = in;
    next.promised = m.ballot;
    if (!RecordVoteLocked(m.instance, next, &r.error)) return r;
    in.promised = m.ballot;
    r.ok = true;
    r.promised = in.promised;
    r.accepted_ballot = in.accepted_ballot;
    r.accepted = in.accepted;
    return r;
  }
  // kAccept
  if (m.ballot < in.promised || !m.value) return r;
  if (!RecordVoteLocked(m.instance, Instance{m.ballot, m.ballot, m.value}, &r.error)) return r;
  in.promised = m.ballot;
  in.accepted_ballot = m.ballot;
  in.accepted = m.value;
  r.ok = true;
  r.promised = in.promised;
  return r;
}

}  // namespace rolis::replication
