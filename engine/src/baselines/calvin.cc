#include "baselines/calvin.h"

#include <algorithm>
#include <cstring>

#include "rolis/thread_name.h"

namespace rolis::baselines {

using workloads::TxnOutcome;

namespace {

void Nap(uint32_t round) {
  if (round < 100) {
    std::this_thread::yield();
  } else {
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

}  // namespace

Calvin::Calvin(CalvinOptions options, Replicate replicate) : o_(std::move(options)), replicate_(std::move(replicate)) {
  for (uint32_t t = 0; t < o_.threads; ++t) {
    auto p = std::make_unique<PerThread>();
    for (uint32_t i = 0; i < o_.outstanding_per_thread; ++i) {
      p->txns.push_back(std::make_unique<Txn>());
      p->txns.back()->owner = t;
      p->free.push_back(p->txns.back().get());
    }
    per_.push_back(std::move(p));
  }
}

Calvin::~Calvin() { Stop(); }

void Calvin::Start() {
  sequencer_ = std::thread([this] { SequencerLoop(); });
}

void Calvin::Stop() {
  stop_.store(true);
  if (sequencer_.joinable()) sequencer_.join();
}

Status Calvin::WaitError() const {
  std::lock_guard<std::mutex> g(error_mu_);
  return error_;
}

// Per transaction: type, the number of parameters, the parameters
// (little-endian, as in memory), and the number of declared keys. The sets
// follow from the parameters, except after a reconnaissance: then the keys
// follow (hash, then 1 for a write), so that every member schedules the
// transaction with the set its reconnaissance found.
void Calvin::Encode(const std::vector<Txn*>& batch, std::string* out) {
  out->clear();
  for (const Txn* t : batch) {
    const uint32_t nkeys = t->req.reconnoitred ? static_cast<uint32_t>(t->req.keys.size()) : 0;
    const uint32_t head[3] = {t->req.type, t->req.nparams, nkeys};
    out->append(reinterpret_cast<const char*>(head), sizeof head);
    out->append(reinterpret_cast<const char*>(t->req.params), sizeof(uint64_t) * t->req.nparams);
    for (uint32_t i = 0; i < nkeys; ++i) {
      const workloads::LockKey& k = t->req.keys[i];
      out->append(reinterpret_cast<const char*>(&k.hash), sizeof k.hash);
      out->push_back(k.write ? 1 : 0);
    }
  }
}

void Calvin::Resubmit(workloads::WorkerContext& ctx, workloads::Workload* workload, Txn* t) {
  t->restarts++;
  restarts_.fetch_add(1, std::memory_order_relaxed);
  workload->Reconnoiter(ctx, &t->req);
  t->req.Normalize();
  std::lock_guard<std::mutex> g(pending_mu_);
  pending_.push_back(t);
}

void Calvin::SequencerLoop() {
  NameThisThread("calvin-sequencer");
  std::vector<Txn*> batch;
  std::string encoded;
  auto next = std::chrono::steady_clock::now() + o_.epoch;
  for (uint64_t epoch = 1;; ++epoch) {
    std::this_thread::sleep_until(next);
    next += o_.epoch;
    const bool stopping = stop_.load();
    {
      std::lock_guard<std::mutex> g(pending_mu_);
      batch.swap(pending_);
    }
    if (batch.empty()) {
      if (stopping) return;
      continue;
    }
    if (replicate_) {
      Encode(batch, &encoded);
      Status s = replicate_(epoch, encoded);
      if (!s.ok()) {
        std::lock_guard<std::mutex> g(error_mu_);
        error_ = s;
        failed_.store(true);
        return;
      }
    }
    Schedule(batch);
    epochs_.fetch_add(1);
    sequenced_.fetch_add(batch.size());
    batch.clear();
  }
}

void Calvin::Schedule(const std::vector<Txn*>& batch) {
  std::lock_guard<std::mutex> g(locks_mu_);
  if (locks_.bucket_count() < 2 * batch.size()) locks_.reserve(2 * batch.size());
  for (Txn* t : batch) {
    t->missing = 0;
    for (const workloads::LockKey& k : t->req.keys) {
      KeyQueue& kq = locks_[k.hash];
      const bool grant = kq.granted == kq.q.size() && (kq.q.empty() || (!k.write && !kq.writer_granted));
      kq.q.push_back({t, k.write});
      if (grant) {
        kq.granted++;
        kq.writer_granted = kq.writer_granted || k.write;
      } else {
        t->missing++;
      }
    }
    if (t->missing == 0) Grant(t);
  }
}

void Calvin::GrantMore(KeyQueue& kq) {
  while (kq.granted < kq.q.size()) {
    Entry& e = kq.q[kq.granted];
    if (!(kq.granted == 0 || (!e.write && !kq.writer_granted))) break;
    kq.granted++;
    kq.writer_granted = kq.writer_granted || e.write;
    if (--e.txn->missing == 0) Grant(e.txn);
  }
}

void Calvin::Release(Txn* txn) {
  std::lock_guard<std::mutex> g(locks_mu_);
  for (const workloads::LockKey& k : txn->req.keys) {
    auto it = locks_.find(k.hash);
    KeyQueue& kq = it->second;
    for (uint32_t i = 0; i < kq.granted; ++i) {
      if (kq.q[i].txn == txn) {
        if (kq.q[i].write) kq.writer_granted = false;
        kq.q.erase(kq.q.begin() + i);
        kq.granted--;
        break;
      }
    }
    if (kq.q.empty()) {
      locks_.erase(it);
    } else {
      GrantMore(kq);
    }
  }
}

void Calvin::Grant(Txn* txn) {
  PerThread& owner = *per_[txn->owner];
  std::lock_guard<std::mutex> g(owner.mu);
  owner.granted.push_back(txn);
  owner.granted_count.fetch_add(1, std::memory_order_release);
}

Calvin::Txn* Calvin::PopGranted(PerThread& me) {
  if (me.granted_count.load(std::memory_order_acquire) == 0) return nullptr;
  std::lock_guard<std::mutex> g(me.mu);
  Txn* t = me.granted.back();
  me.granted.pop_back();
  me.granted_count.fetch_sub(1, std::memory_order_relaxed);
  return t;
}

TxnOutcome Calvin::RunOne(workloads::WorkerContext& ctx, workloads::Workload* workload) {
  PerThread& me = *per_[ctx.index];
  const auto wall = std::chrono::steady_clock::now();
  if (wall - me.window_start >= o_.epoch) {
    me.limit = std::clamp<uint32_t>(2 * me.done_in_window, 16, o_.outstanding_per_thread);
    me.done_in_window = 0;
    me.window_start = wall;
  }
  const size_t in_flight = me.txns.size() - me.free.size();
  if (in_flight < me.limit && !me.free.empty()) {
    const size_t n = std::min<size_t>(me.limit - in_flight, me.free.size());
    const uint64_t now = o_.now ? o_.now() : 0;
    const size_t first = me.free.size() - n;
    for (size_t i = first; i < me.free.size(); ++i) {
      Txn* t = me.free[i];
      workload->Generate(ctx, &t->req);
      t->req.Normalize();
      t->submitted_at = now;
    }
    {
      std::lock_guard<std::mutex> g(pending_mu_);
      pending_.insert(pending_.end(), me.free.begin() + static_cast<std::ptrdiff_t>(first), me.free.end());
    }
    me.free.resize(first);
  }
  for (uint32_t round = 0;; ++round) {
    if (Txn* t = PopGranted(me)) {
      TxnOutcome out = workload->Execute(ctx, t->req);
      Release(t);
      if (out.error.ok() && out.set_changed) {
        Resubmit(ctx, workload, t);
        continue;
      }
      out.submitted_at = t->submitted_at;
      out.conflict_aborts += t->restarts;
      t->restarts = 0;
      me.free.push_back(t);
      me.done_in_window++;
      return out;
    }
    if (failed_.load()) {
      TxnOutcome out;
      out.error = WaitError();
      return out;
    }
    Nap(round);
  }
}

Status Calvin::ThreadEnd(workloads::WorkerContext& ctx, workloads::Workload* workload) {
  PerThread& me = *per_[ctx.index];
  for (uint32_t round = 0; me.free.size() < me.txns.size(); ++round) {
    if (Txn* t = PopGranted(me)) {
      TxnOutcome out = workload->Execute(ctx, t->req);
      Release(t);
      if (out.error.ok() && out.set_changed) {
        Resubmit(ctx, workload, t);
        continue;
      }
      t->restarts = 0;
      me.free.push_back(t);
      if (!out.error.ok()) return out.error;
      round = 0;
      continue;
    }
    if (failed_.load()) return WaitError();
    Nap(round);
  }
  return Status::OK();
}

}  // namespace rolis::baselines
