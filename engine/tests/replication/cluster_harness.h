// In-process clusters for the replication tests: N members, each a real
// engine (rolis_core) with a Replica, connected by a LocalNetwork that
// injects faults. Workers are driven by the test through Commit/Read.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <thread>
#include <vector>

#include "fault_transport.h"
#include "replica.h"
#include "rolis/db.h"

namespace rolis::replication::testing {

using namespace std::chrono_literals;

class FutureWaiter final : public WatermarkWaiter {
 public:
  void Done(bool ok, const std::string& why) override { p_.set_value(ok); }
  std::future<bool> future() { return p_.get_future(); }

 private:
  std::promise<bool> p_;
};

// The member's commit hook: counts the writes that go as patches, then
// hands the transaction to the replica.
class PatchCountingHook final : public CommitHook {
 public:
  void OnCommit(WorkerId worker, uint64_t ts, const CommittedWrites& writes) override {
    for (const WriteRecord& w : writes.records()) {
      if (w.is_patch) patches.fetch_add(1, std::memory_order_relaxed);
    }
    next->OnCommit(worker, ts, writes);
  }
  CommitHook* next = nullptr;
  std::atomic<uint64_t> patches{0};
};

struct Member {
  uint32_t id = 0;
  uint64_t before = 0, after = 0;
  std::unique_ptr<Transport> transport;
  std::unique_ptr<Replica> replica;
  std::unique_ptr<PatchCountingHook> hook = std::make_unique<PatchCountingHook>();
  std::unique_ptr<Database> db;
  std::vector<std::unique_ptr<std::mutex>> mu;
  std::vector<std::unique_ptr<Worker>> workers;
  std::unique_ptr<std::mutex> read_mu = std::make_unique<std::mutex>();
  std::unique_ptr<Worker> reader;
  Table* table = nullptr;
  bool up = false;
};

struct ClusterOptions {
  uint32_t members = 3;
  uint32_t streams = 2;
  uint32_t batch_size = 8;
  std::chrono::microseconds batch_timeout{1000};
  uint64_t seed = 1;
  uint32_t max_inflight = 64;
  std::chrono::milliseconds rpc_timeout{500};
  std::chrono::milliseconds open_timeout{3000};
  std::chrono::milliseconds retransmit{30};
  uint64_t max_log_slots = 20000;
  uint64_t min_retained_bytes = uint64_t{16} << 20;
  uint64_t max_log_bytes = uint64_t{256} << 20;
  std::chrono::milliseconds live_window{3000};
  // If set: only members 1..initial form the cluster; the others are booted
  // later by Join (knowing every member) and added by membership changes.
  uint32_t initial = 0;
  // Who decides epoch records; Failover drives DecideEpoch (the control
  // stream), so an operator-decided cluster is driven by the test itself.
  Decider decider = Decider::kControlStream;
};

class Cluster {
 public:
  explicit Cluster(ClusterOptions o) : o_(o), net_(o.seed) {
    for (uint32_t i = 1; i <= o_.members; i++) ids_.push_back(i);
    members_.resize(o_.members + 1);
    for (uint32_t id = 0; id <= o_.members; id++) life_.push_back(std::make_unique<std::shared_mutex>());
    const uint32_t first = o_.initial > 0 ? o_.initial : o_.members;
    for (uint32_t id = 1; id <= first; id++) Boot(id);
    // A new cluster: every member probes the others and starts voting.
    WaitUntil([&] {
      for (uint32_t id = 1; id <= first; id++) {
        if (members_[id]->replica->role() == Role::kCatchingUp) return false;
      }
      return true;
    }, 10s);
  }
  ~Cluster() {
    for (uint32_t id : ids_) Crash(id);
  }

  LocalNetwork& net() { return net_; }
  Member& m(uint32_t id) { return *members_[id]; }
  Replica& r(uint32_t id) { return *members_[id]->replica; }
  const std::vector<uint32_t>& ids() const { return ids_; }

  void Boot(uint32_t id) {
    std::unique_lock<std::shared_mutex> booting(*life_[id]);
    auto mem = std::make_unique<Member>();
    Member* p = mem.get();
    p->id = id;
    ReplicaOptions ro;
    ro.id = id;
    ro.decider = o_.decider;
    ro.members = ids_;
    if (o_.initial > 0 && id <= o_.initial) ro.members.resize(o_.initial);
    ro.streams = o_.streams;
    ro.batch_size = o_.batch_size;
    ro.batch_timeout = o_.batch_timeout;
    ro.max_inflight = o_.max_inflight;
    ro.peer_window = o_.max_inflight;
    ro.rpc_timeout = o_.rpc_timeout;
    ro.open_timeout = o_.open_timeout;
    ro.retransmit = o_.retransmit;
    ro.max_log_slots = o_.max_log_slots;
    ro.min_retained_bytes = o_.min_retained_bytes;
    ro.max_log_bytes = o_.max_log_bytes;
    ro.live_window = o_.live_window;
    ro.client_address = "member-" + std::to_string(id);
    TsClock clock;
    clock.floor = [p] {
      uint64_t now = MonotonicNanos();
      return now > p->after ? (now - p->after) << 8 : 0;
    };
    clock.ceiling = [p] { return ((MonotonicNanos() - p->before + 2) << 8) | 0xFF; };
    p->transport = net_.Connect(id);
    p->replica = std::make_unique<Replica>(ro, p->transport.get(), clock);
    Options opts;
    p->hook->next = p->replica.get();
    // The count spans the member's restarts: a crashed leader's patched
    // writes were logged all the same.
    if (members_[id]) p->hook->patches.store(members_[id]->hook->patches.load());
    opts.commit_hook = p->hook.get();
    opts.patch_updates = true;  // as rolisd's replicated members
    opts.epoch_period_ms = 5;
    p->before = MonotonicNanos();
    p->db = Database::Open(opts);
    p->after = MonotonicNanos();
    EXPECT_TRUE(p->db->CreateTable("kv", &p->table).ok());
    std::vector<std::mutex*> mus;
    for (uint32_t t = 0; t < o_.streams; t++) {
      p->mu.push_back(std::make_unique<std::mutex>());
      p->workers.push_back(p->db->RegisterWorker());
      p->replica->RegisterStream(p->workers.back()->id(), t);
      mus.push_back(p->mu.back().get());
    }
    p->reader = p->db->RegisterWorker();
    p->replica->Attach(p->db.get(), mus);
    p->replica->Start();
    p->up = true;
    members_[id] = std::move(mem);
  }

  // kill -9: the member vanishes from the network at once, then stops.
  // It waits for the Commits that run a transaction on the member, since
  // it frees the objects they use (briefly: a Commit's wait for
  // replication holds nothing, and the stop fails that wait).
  void Crash(uint32_t id) {
    std::unique_lock<std::shared_mutex> crashing(*life_[id]);
    if (!members_[id] || !members_[id]->up) return;
    Member& p = *members_[id];
    p.up = false;
    p.replica->Stop();
    for (auto& w : p.workers) w.reset();
    p.reader.reset();
    p.replica.reset();
    p.db.reset();
    p.transport.reset();
  }
  void Restart(uint32_t id) {
    Crash(id);
    Boot(id);
  }
  // Starts a member left out of the initial cluster (it catches up).
  void Join(uint32_t id) { Boot(id); }
  bool Up(uint32_t id) const { return members_[id] && members_[id]->up; }

  // Runs one transaction on stream t of member id under its worker mutex.
  // Returns the commit ts (0 if it did not commit).
  uint64_t Run(uint32_t id, uint32_t t, const std::function<Status(Transaction*)>& body) {
    Member& p = m(id);
    std::lock_guard<std::mutex> g(*p.mu[t]);
    uint64_t ts = 0;
    {
      auto txn = p.workers[t]->Begin();
      Status s = body(txn.get());
      if (!s.ok()) {
        txn->Abort();
      } else if (txn->Commit().ok()) {
        ts = txn->commit_ts();
      }
    }
    p.workers[t]->Quiesce();  // an idle worker must not hold the engine's snapshot back
    return ts;
  }
  // Commits and waits for the acknowledgement (bounded). Safe from any
  // thread while others crash and restart members: a member that is down
  // refuses.
  enum class Ack { kAcked, kRefused, kTimeout, kAborted };
  Ack Commit(uint32_t id, uint32_t t, const std::function<Status(Transaction*)>& body,
             std::chrono::milliseconds timeout = 3000ms) {
    FutureWaiter* w = nullptr;
    std::future<bool> f;
    {
      std::shared_lock<std::shared_mutex> alive(*life_[id]);
      if (!Up(id) || m(id).replica->role() != Role::kLeader) return Ack::kRefused;
      uint64_t ts = Run(id, t, body);
      if (ts == 0) return Ack::kAborted;
      w = new FutureWaiter();
      f = w->future();
      if (m(id).replica->AwaitWatermark(ts, w)) {
        delete w;
        return Ack::kAcked;
      }
    }
    // The wait holds nothing of the member: a crash's stop fails the waiter.
    if (f.wait_for(timeout) != std::future_status::ready) return Ack::kTimeout;  // leaks w: the replica still holds it
    bool ok = f.get();
    delete w;
    return ok ? Ack::kAcked : Ack::kRefused;
  }
  Ack Put(uint32_t id, uint32_t t, const std::string& k, const std::string& v,
          std::chrono::milliseconds timeout = 3000ms) {
    Table* table = m(id).table;
    return Commit(id, t, [&](Transaction* x) { return x->Put(table, k, v); }, timeout);
  }

  std::optional<std::string> Read(uint32_t id, const std::string& k) {
    Member& p = m(id);
    std::lock_guard<std::mutex> g(*p.read_mu);
    auto txn = p.reader->Begin();
    std::string v;
    Status s = txn->Get(p.table, k, &v);
    txn->Abort();
    p.reader->Quiesce();
    if (s.ok()) return v;
    return std::nullopt;
  }
  std::map<std::string, std::string> Dump(uint32_t id) {
    Member& p = m(id);
    std::lock_guard<std::mutex> g(*p.read_mu);
    std::map<std::string, std::string> out;
    auto txn = p.reader->Begin();
    (void)txn->Scan(p.table, "", "", 0, [&](std::string_view k, std::string_view v) {
      out.emplace(std::string(k), std::string(v));
      return true;
    });
    txn->Abort();
    p.reader->Quiesce();
    return out;
  }

  // The failover of docs/replication.md driven as rolisctl does it.
  Status Failover(uint32_t candidate, uint64_t* new_epoch = nullptr) {
    DecidedPtr last;
    uint64_t max_epoch = 0;
    for (uint32_t id : ids_) {
      if (!Up(id)) continue;
      ReplicaStatus st = r(id).GetStatus();
      max_epoch = std::max({max_epoch, st.epoch, st.promised_epoch});
      if (st.decided) {
        max_epoch = std::max(max_epoch, st.decided->record.epoch);
        if (!last || st.decided->record.epoch > last->record.epoch) last = st.decided;
      }
    }
    Decided prev = last ? *last : Decided{};
    uint64_t e = max_epoch + 1;
    if (new_epoch) *new_epoch = e;
    PrepareResult pr;
    Status s = r(candidate).PrepareFailover(e, prev, &pr);
    if (!s.ok()) return s;
    bool decided = false;
    DecidedPtr current;
    s = r(candidate).DecideEpoch(pr.proposed, prev.record.epoch, &decided, &current);
    if (!s.ok()) return s;
    if (!decided) return Status::Aborted("another record was decided");
    LogKey g;
    s = r(candidate).OpenEpoch(pr.proposed, &g);
    if (!s.ok()) return s;
    for (uint32_t id : ids_) {
      if (Up(id)) (void)r(id).AnnounceLeader(pr.proposed, "member-" + std::to_string(candidate));
    }
    return Status::OK();
  }

  // As a driver does: a failover that found no majority (its messages
  // dropped) is tried again, up to `attempts` times 50 ms apart.
  Status FailoverRetrying(uint32_t candidate, int attempts = 10) {
    Status s;
    for (int i = 0; i < attempts; i++) {
      s = Failover(candidate);
      if (s.ok()) return s;
      std::this_thread::sleep_for(50ms);
    }
    return s;
  }

  std::string Describe() {
    std::string out;
    for (uint32_t id : ids_) {
      if (!Up(id)) {
        out += "member " + std::to_string(id) + ": down\n";
        continue;
      }
      ReplicaStatus st = r(id).GetStatus();
      out += "member " + std::to_string(id) + ": " + RoleName(st.role) + " epoch " + std::to_string(st.epoch) +
             " promised " + std::to_string(st.promised_epoch) + " G " + std::to_string(st.watermark.epoch) + "." +
             std::to_string(st.watermark.ts) + " replayed " + std::to_string(st.replayed.epoch) + "." +
             std::to_string(st.replayed.ts) + " keys " + std::to_string(Dump(id).size()) +
             (st.dirty ? " dirty" : "") + "\n";
      for (size_t t = 0; t < st.streams.size(); t++) {
        const auto& s = st.streams[t];
        out += "  stream " + std::to_string(t) + ": slots [" + std::to_string(s.first_slot) + "," +
               std::to_string(s.next_slot) + ") committed/cursor " + std::to_string(s.committed_slot) + " replayed " +
               std::to_string(s.replayed_key.epoch) + "." + std::to_string(s.replayed_key.ts) + "\n";
      }
    }
    return out;
  }

  template <typename F>
  static bool WaitUntil(F f, std::chrono::milliseconds limit) {
    auto end = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < end) {
      if (f()) return true;
      std::this_thread::sleep_for(2ms);
    }
    return f();
  }

  // Waits until every live follower's store equals the leader's on the
  // given keys (or all keys when empty).
  bool WaitReplicated(uint32_t leader, std::chrono::milliseconds limit = 5000ms) {
    return WaitUntil([&] {
      auto want = Dump(leader);
      for (uint32_t id : ids_) {
        if (id == leader || !Up(id) || r(id).role() != Role::kFollower) continue;
        if (Dump(id) != want) return false;
      }
      return true;
    }, limit);
  }

 private:
  ClusterOptions o_;
  LocalNetwork net_;
  std::vector<uint32_t> ids_;
  std::vector<std::unique_ptr<Member>> members_;
  // Per member: Commit holds it shared, Boot and Crash exclusively.
  std::vector<std::unique_ptr<std::shared_mutex>> life_;
};

}  // namespace rolis::replication::testing
