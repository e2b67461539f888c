#include "rolis/thread_name.h"
#include "replicated_mode.h"

#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <mutex>
#include <random>
#include <thread>

#include "acked_check.h"
#include "cycle_clock.h"
#include "followers.h"
#include "rolisd/paxos_replicator.h"
#include "server/config.h"
#include "server/runtime.h"
#include "spsc.h"

namespace rolis::bench {
namespace {

constexpr uint32_t kLeaderId = 1;

// The first port the kernel hands out for outgoing connections.
int EphemeralLow() {
  int low = 32768, high = 60999;
  if (FILE* f = std::fopen("/proc/sys/net/ipv4/ip_local_port_range", "r")) {
    if (std::fscanf(f, "%d %d", &low, &high) != 2) low = 32768;
    std::fclose(f);
  }
  return low;
}

// n distinct loopback ports that were free a moment ago, for the followers
// to listen on. Taken below the kernel's range for outgoing connections:
// a port from that range (bind to port 0) could be given, before the
// follower bound it, to one of the members' connections to another ("cannot
// listen on 127.0.0.1:34851", one run in a few hundred).
Status FreePorts(size_t n, std::vector<int>* ports) {
  const int high = EphemeralLow(), low = std::max(1024, high - 16384);
  std::mt19937 rng(static_cast<uint32_t>(getpid()) * 2654435761u ^ static_cast<uint32_t>(time(nullptr)));
  for (int tries = 0; ports->size() < n && tries < 1000; tries++) {
    const int port = low + static_cast<int>(rng() % static_cast<uint32_t>(high - low));
    if (std::find(ports->begin(), ports->end(), port) != ports->end()) continue;
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) break;
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<uint16_t>(port));
    if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) ports->push_back(port);
    close(fd);
  }
  if (ports->size() < n) return Status::Internal("cannot find free loopback ports below " + std::to_string(high));
  return Status::OK();
}

// How many of this process's threads may run on one of cpus.
int ThreadsAllowedOn(const std::vector<int>& cpus) {
  int n = 0;
  std::error_code ec;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task", ec)) {
    cpu_set_t set;
    CPU_ZERO(&set);
    const pid_t tid = static_cast<pid_t>(std::strtol(task.path().filename().c_str(), nullptr, 10));
    if (sched_getaffinity(tid, sizeof set, &set) != 0) continue;  // ended meanwhile
    for (int c : cpus) {
      if (CPU_ISSET(c, &set)) {
        n++;
        break;
      }
    }
  }
  return n;
}

std::string CpuList(const std::vector<int>& cpus) {
  std::string out;
  for (int c : cpus) out += (out.empty() ? "" : ",") + std::to_string(c);
  return out;
}

std::string Hp(int port) { return "127.0.0.1:" + std::to_string(port); }

std::string RolisdNextToSelf() {
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? "rolisd" : (self.parent_path() / "rolisd").string();
}

// A committed transaction waiting for the watermark.
struct Unacked {
  uint64_t ts;
  uint64_t start;  // CycleNow() at its first Begin
};

struct alignas(64) PerThread {
  // Room for ~50 ms of YCSB++ commits between the observer's passes (it
  // drains the ring at every advance of G); a full ring counts `unsampled`.
  PerThread() : committed(1 << 14) {}
  // Worker side.
  // Held while the worker runs transactions: the replicator closes idle
  // batches under it. A busy worker keeps it for kTxnsPerHold transactions
  // (it closes its own batches meanwhile) rather than locking it around each:
  // the two atomic read-modify-writes per transaction were 3% of a
  // replicated YCSB++ worker, a cost rolisd's workers do not pay per
  // transaction. It is let go before the worker waits (open loop) or ends.
  std::mutex mu;
  bool held = false;
  uint32_t run = 0;        // transactions since it was taken
  uint64_t commit_ts = 0;  // set by the commit hook on this thread
  replication::SpscRing<Unacked> committed;  // to the observer
  uint64_t unsampled = 0;  // the ring was full
  // Observer side.
  std::deque<Unacked> waiting;
};

thread_local PerThread* tls_thread = nullptr;

constexpr uint32_t kTxnsPerHold = 256;

void Release(PerThread& p) {
  if (!p.held) return;
  p.held = false;
  p.mu.unlock();
}

// Wakes the observer when the watermark passes the ts it waits for: the
// leader loop completes it, as it completes rolisd's waiting replies.
class ObserverWake final : public WatermarkWaiter {
 public:
  void Done(bool, const std::string&) override {
    {
      std::lock_guard<std::mutex> g(mu_);
      done_ = true;
    }
    cv_.notify_one();
  }
  // Until completed or `timeout`; true once completed (the waiter may then
  // be registered again).
  bool WaitFor(std::chrono::microseconds timeout) {
    std::unique_lock<std::mutex> g(mu_);
    return cv_.wait_for(g, timeout, [this] { return done_; });
  }
  void Rearm() {
    std::lock_guard<std::mutex> g(mu_);
    done_ = false;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
};

// A worker blocked in ReplicatedControl::WaitReplicated.
class ReplicatedWait final : public WatermarkWaiter {
 public:
  void Done(bool ok, const std::string& why) override {
    {
      std::lock_guard<std::mutex> g(mu_);
      done_ = true;
      ok_ = ok;
      why_ = why;
    }
    cv_.notify_one();
  }
  // Registered with the replicator by `await` unless it returned true (covered already).
  template <class Await>
  Status Wait(Await&& await, std::chrono::milliseconds timeout) {
    {
      std::lock_guard<std::mutex> g(mu_);
      done_ = false;
    }
    if (await(this)) return Status::OK();
    std::unique_lock<std::mutex> g(mu_);
    if (!cv_.wait_for(g, timeout, [this] { return done_; })) {
      return Status::FailedPrecondition("not replicated within " + std::to_string(timeout.count()) + " ms");
    }
    return ok_ ? Status::OK() : Status::FailedPrecondition("not replicated: " + why_);
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  bool ok_ = false;
  std::string why_;
};

class Replicated final : public Mode, public CommitHook, public WorkerHooks, public ReplicatedControl {
 public:
  Replicated(ModeOptions o, std::string rolisd) : o_(std::move(o)), rolisd_(std::move(rolisd)) {
    for (uint32_t t = 0; t < o_.threads; t++) {
      per_.push_back(std::make_unique<PerThread>());
      waits_.push_back(std::make_unique<ReplicatedWait>());
    }
  }
  ~Replicated() override { Shutdown(); }

  Status Init();

  const ModeOptions& options() const override { return o_; }
  CommitHook* commit_hook() override { return this; }
  Status AfterOpen(Database* db) override;
  Status Start(Database* db) override;
  WorkerHooks* worker_hooks() override { return this; }
  std::vector<int> driver_cpus() const override { return worker_cpus_; }
  Status Finish(RunResult* result) override;
  void Shutdown() override;
  std::string Placement() const override { return placement_; }

  // CommitHook: the worker's thread, its mutex held.
  void OnCommit(WorkerId worker, uint64_t commit_ts, const CommittedWrites& writes) override {
    if (!forwarding_.load(std::memory_order_relaxed)) return;  // the load, before the leader opens
    repl_->OnCommit(worker, commit_ts, writes);
    if (tls_thread != nullptr) tls_thread->commit_ts = commit_ts;
  }

  // WorkerHooks.
  void ThreadStart(uint32_t t, Worker* worker) override {
    repl_->RegisterStream(worker->id(), t);
    tls_thread = per_[t].get();
  }
  void BeforeTxn(uint32_t t) override {
    PerThread& p = *per_[t];
    if (!p.held) {
      p.mu.lock();
      p.held = true;
      p.run = 0;
    }
  }
  void AfterTxn(uint32_t t, uint64_t start, uint64_t end, bool measured) override {
    PerThread& p = *per_[t];
    if (++p.run >= kTxnsPerHold) Release(p);
    if (p.commit_ts != 0) {
      if (measured && !p.committed.TryPush(Unacked{p.commit_ts, start})) p.unsampled++;
      p.commit_ts = 0;
    }
  }
  void Idle(uint32_t t) override { Release(*per_[t]); }

  // ReplicatedControl.
  void Pause(uint32_t t) override { Release(*per_[t]); }
  void Resume(uint32_t t) override { BeforeTxn(t); }
  Status WaitReplicated(uint32_t t, uint64_t commit_ts) override {
    Release(*per_[t]);
    Status s = waits_[t]->Wait([&](ReplicatedWait* w) { return repl_->AwaitWatermark(commit_ts, w); },
                               std::chrono::milliseconds(10000));
    if (s.ok()) NoteAcked(commit_ts);
    return s;
  }
  void ThreadEnd(uint32_t t) override {
    Release(*per_[t]);
    tls_thread = nullptr;
  }

 private:
  void Observe();
  void NoteAcked(uint64_t ts) {
    uint64_t m = max_acked_ts_.load(std::memory_order_relaxed);
    while (ts > m && !max_acked_ts_.compare_exchange_weak(m, ts, std::memory_order_relaxed)) {
    }
  }
  Status CheckAcked(RunResult* result);
  Status Elect();
  Status AwaitFollowers();
  Status SpawnFollowers(Database* db);
  std::string MemberDataDir(uint32_t id) const { return data_dir_ + "/member-" + std::to_string(id); }
  // Follower id's ports (ids 2..replicas): client, admin, metrics.
  const int* FollowerPorts(uint32_t id) const { return &ports_[o_.replicas + 3 * (id - 2)]; }
  std::string FollowerAdmin(uint32_t id) const { return Hp(FollowerPorts(id)[1]); }

  ModeOptions o_;
  std::string rolisd_;
  std::vector<int> ports_;  // replication port of member i+1, then 3 per follower
  std::vector<int> worker_cpus_, other_cpus_;
  std::string placement_;
  std::string dir_;  // follower logs
  std::string data_dir_;  // --durability=disk: member i's data directory is member-<i> in it
  std::unique_ptr<ObserverWake> observer_wake_ = std::make_unique<ObserverWake>();  // outlives repl_
  // Outlive repl_: a waiter still registered when it stops is completed or dropped by it.
  std::vector<std::unique_ptr<ReplicatedWait>> waits_;
  std::unique_ptr<replication::PaxosReplicator> repl_;
  FollowerSet followers_;
  std::vector<std::unique_ptr<PerThread>> per_;
  std::atomic<bool> forwarding_{false};
  // The observer: sees when the watermark passes each committed transaction.
  std::thread observer_;
  std::atomic<bool> observer_stop_{false};
  LogLinearHistogram latency_;  // observer's until it is joined
  uint64_t never_acked_ = 0;
  bool stopped_ = false;
  // --kill-follower-at and --check-acked (ModeOptions).
  std::atomic<uint64_t> max_acked_ts_{0};  // the largest commit ts acknowledged
  uint32_t killed_ = 0;  // the follower killed, once the kill timer is stopped
  std::atomic<bool> frozen_{false};  // CheckAcked stopped the leader: nothing more will be acknowledged
};

Status Replicated::Init() {
  // As rolisd's main does, before any gRPC object exists: without it the
  // leader's gRPC threads update absl's lock graph on every mutex
  // acquisition (GraphCycles in the followers' CPU's profile).
  server::TuneProcessRuntime();
  const uint32_t followers = o_.replicas - 1;
  Status s = FreePorts(o_.replicas + 3 * followers, &ports_);
  if (!s.ok()) return s;
  char tmpl[] = "/tmp/rolis-bench-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) return Status::Internal("cannot create a folder for the follower logs in /tmp");
  dir_ = tmpl;
  if (o_.durability == "disk") {
    // Apart from the logs: --data-root chooses the file system that is synced.
    std::string root = o_.data_root;
    if (root.empty()) root = std::getenv("TMPDIR") != nullptr ? std::getenv("TMPDIR") : "/tmp";
    std::string data = root + "/rolis-bench-data-XXXXXX";
    if (mkdtemp(data.data()) == nullptr) {
      return Status::InvalidArgument("--data-root: cannot create a directory in " + root + ": " + std::strerror(errno));
    }
    data_dir_ = data;
  }

  // Workers on the first CPUs; followers and replication threads on the rest.
  const std::vector<int> cpus = AllowedCpus();
  if (o_.pin && cpus.size() > o_.threads) {
    worker_cpus_.assign(cpus.begin(), cpus.begin() + o_.threads);
    other_cpus_.assign(cpus.begin() + o_.threads, cpus.end());
    placement_ = "workers pinned to CPU " + CpuList(worker_cpus_) + "; followers (sched_setaffinity before exec) " +
                 "and the leader's other threads pinned to CPU " + CpuList(other_cpus_);
    // From here on, threads inherit this thread's CPU mask: the engine's
    // epoch thread and gRPC's threads (made by the replicator below) as well
    // as the replicator's stay off the workers' CPUs, which then run only
    // workers. Unpinned, they woke on the worker's CPU whenever the other was
    // busy with the followers (~2% of its time), where the unreplicated run
    // finds the other CPU idle.
    PinThreadTo(other_cpus_);
  } else {
    placement_ = o_.pin ? "followers not pinned: " + std::to_string(o_.threads) + " workers use all " +
                              std::to_string(cpus.size()) + " CPUs"
                        : "nothing pinned (--no-pin)";
  }

  // The leader: constructed before Database::Open (the base of its ts clock).
  server::ServerConfig c;
  c.id = kLeaderId;
  for (uint32_t i = 0; i < o_.replicas; i++) c.peers.push_back({i + 1, Hp(ports_[i])});
  c.worker_threads = o_.threads;
  c.batch_size = o_.batch_size;
  c.batch_timeout = o_.batch_timeout;
  c.epoch_period_ms = o_.epoch_period_ms;
  c.listen = c.admin_listen = c.metrics_listen = "127.0.0.1:0";  // no client or admin API in the bench
  if (!data_dir_.empty()) {
    // The leader's own vote counts once it is on its disk, as rolisd's.
    c.durability = server::Durability::kDisk;
    c.data_dir = MemberDataDir(kLeaderId);
  }
  repl_.reset(static_cast<replication::PaxosReplicator*>(replication::MakeReplicator(c).release()));
  return Status::OK();
}

Status Replicated::AfterOpen(Database* db) {
  // rolisd's tables are "kv" (id 0) and then --tables in order: the same ids
  // here, so that the followers' replay finds the workload's tables.
  return db->CreateTable("kv", nullptr);
}

Status Replicated::SpawnFollowers(Database* db) {
  std::string tables, peers;
  for (TableId id = 1;; id++) {
    Table* t = nullptr;
    if (!db->GetTable(id, &t).ok()) break;
    tables += (tables.empty() ? "" : ",") + t->name();
  }
  for (uint32_t i = 0; i < o_.replicas; i++) peers += (i ? "," : "") + std::to_string(i + 1) + "=" + Hp(ports_[i]);
  for (uint32_t id = 2; id <= o_.replicas; id++) {
    const int* p = FollowerPorts(id);
    FollowerSpec f;
    f.id = id;
    f.log_path = dir_ + "/rolisd-" + std::to_string(id) + ".log";
    f.cpus = other_cpus_;
    f.args = {"--id=" + std::to_string(id),
              "--peers=" + peers,
              "--listen=" + Hp(p[0]),
              "--admin-listen=" + Hp(p[1]),
              "--metrics-listen=" + Hp(p[2]),
              "--worker-threads=" + std::to_string(o_.threads),
              "--tables=" + tables,
              "--batch-size=" + std::to_string(o_.batch_size),
              "--batch-timeout=" + std::to_string(o_.batch_timeout.count()) + "us",
              "--epoch-period-ms=" + std::to_string(o_.epoch_period_ms),
              std::string("--huge-pages=") + (o_.huge_pages ? "true" : "false"),
              "--prefault-memory=" + std::to_string(o_.prefault_memory),
              "--shutdown-grace=0s",
              "--log-level=warn"};
    if (!data_dir_.empty()) {
      f.args.push_back("--data-dir=" + MemberDataDir(id));
      f.args.push_back("--durability=disk");
    }
    Status s = followers_.Spawn(rolisd_, f);
    if (!s.ok()) return s;
  }
  return Status::OK();
}

Status Replicated::Start(Database* db) {
  std::vector<std::mutex*> mus;
  for (auto& p : per_) mus.push_back(&p->mu);
  repl_->Attach(db, std::move(mus));
  // An empty data directory (made by Init): nothing to recover; the leader
  // journals its votes there from now on.
  Status s = repl_->Recover();
  if (!s.ok()) return s;
  s = SpawnFollowers(db);
  if (!s.ok()) return s;
  repl_->Start();
  s = Elect();
  if (!s.ok()) return s;
  s = AwaitFollowers();
  if (!s.ok()) return s;
  forwarding_.store(true);
  observer_ = std::thread([this] { Observe(); });
  // A crash of the last follower mid-run: SIGKILL, no shutdown of any kind.
  // The run goes on with the others, which are still a majority.
  if (o_.kill_follower_at > 0) followers_.KillAfter(o_.replicas, std::chrono::duration<double>(o_.kill_follower_at));
  return Status::OK();
}

// As the run ends: the leader stops as if it crashed (nothing more reaches
// the followers), then a majority must hold what it acknowledged
// (acked_check.h).
Status Replicated::CheckAcked(RunResult* result) {
  const uint64_t acked = max_acked_ts_.load();
  frozen_.store(true);
  repl_->Stop();
  v1::StatusResponse leader;
  repl_->FillStatus(&leader);
  std::vector<std::string> followers;
  for (uint32_t id = 2; id <= o_.replicas; id++) {
    if (id != killed_) followers.push_back(FollowerAdmin(id));
  }
  Status s = CheckAcknowledgedOnMajority(leader, followers, o_.replicas, acked);
  result->acked_check = s.ok() ? "ok" : "failed";
  return s;
}

// What rolisd's leader loop does when G advances (complete the waiting
// replies), for the latency: each worker's oldest committed transactions
// whose ts the watermark covers are acknowledged now (a worker's commit ts
// grow, so the front is the oldest). Between passes the observer waits on
// the watermark itself, for the oldest transaction still waiting: the leader
// loop wakes it when G covers it (once per advance of G, not on a timer: a
// 200 us poll woke it ~3,700 times a second beside the followers' replay).
// With nothing waiting it polls the rings every 200 us. After the run it
// drains for up to 10 s.
void Replicated::Observe() {
  NameThisThread("bench-observer");
  std::chrono::steady_clock::time_point deadline{};
  // A member: a waiter still registered when the observer ends is completed
  // (or dropped) by the replicator, which goes before it.
  ObserverWake& wake = *observer_wake_;
  bool armed = false;  // `wake` is registered and not yet completed
  for (;;) {
    const bool stopping = observer_stop_.load();
    if (stopping && deadline == std::chrono::steady_clock::time_point{}) {
      deadline = std::chrono::steady_clock::now() + (frozen_.load() ? std::chrono::seconds(0) : std::chrono::seconds(10));
    }
    bool all_acked = true;
    uint64_t oldest = UINT64_MAX;
    for (auto& pt : per_) {
      PerThread& p = *pt;
      Unacked u;
      while (p.committed.TryPop(&u)) p.waiting.push_back(u);
      // After the pops: everything popped started before it (read earlier,
      // a transaction pushed meanwhile would get a negative latency).
      const uint64_t now = CycleNow();
      while (!p.waiting.empty() && repl_->WatermarkCovers(p.waiting.front().ts)) {
        latency_.Record(now - p.waiting.front().start);
        NoteAcked(p.waiting.front().ts);
        p.waiting.pop_front();
      }
      all_acked = all_acked && p.waiting.empty();
      if (!p.waiting.empty()) oldest = std::min(oldest, p.waiting.front().ts);
    }
    if (stopping && (all_acked || std::chrono::steady_clock::now() > deadline)) break;
    if (!armed && oldest != UINT64_MAX) {
      wake.Rearm();
      armed = !repl_->AwaitWatermark(oldest, &wake);
      if (!armed) continue;  // covered meanwhile
    }
    if (armed) {
      // Bounded, so that the rings are drained and a stop is seen even
      // while G stands still.
      if (wake.WaitFor(std::chrono::milliseconds(2))) armed = false;
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }
  for (auto& p : per_) {
    never_acked_ += p->waiting.size();
    p->waiting.clear();
  }
}

Status Replicated::Elect() {
  // The members first probe each other (a new cluster: a majority of the
  // others never voted); then this member runs the failover steps to epoch 1.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  std::string last = "the start-up probe has not finished";
  while (std::chrono::steady_clock::now() < deadline) {
    Status alive = followers_.CheckAlive();
    if (!alive.ok()) return alive;
    if (repl_->role() != rolis::Role::kCatchingUp) {
      grpc::Status g = repl_->RunElection();
      if (g.ok()) return Status::OK();
      last = g.error_message();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return Status::Internal("the in-process leader was not elected within 60 s: " + last);
}

// The run starts once every follower follows the leader's epoch. A member
// that booted after the other two had formed the cluster first catches up
// by state transfer and does not count toward a majority until it has
// (docs/replication.md): a run that started before then, and killed the
// other follower, would have no majority and stall for good.
Status Replicated::AwaitFollowers() {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  v1::StatusResponse leader;
  repl_->FillStatus(&leader);
  for (uint32_t id = 2; id <= o_.replicas; id++) {
    const std::string admin = FollowerAdmin(id);
    std::string last;
    for (;;) {
      if (Status alive = followers_.CheckAlive(); !alive.ok()) return alive;
      v1::StatusResponse f;
      Status s = MemberStatus(admin, &f);
      if (s.ok() && f.role() == v1::FOLLOWER && f.epoch() == leader.epoch()) break;
      last = s.ok() ? "it is " + v1::Role_Name(f.role()) + " in epoch " + std::to_string(f.epoch()) : s.ToString();
      if (std::chrono::steady_clock::now() > deadline) {
        return Status::Internal("follower " + std::to_string(id) + " did not follow epoch " +
                                std::to_string(leader.epoch()) + " within 60 s (" + last + "); its log: " + dir_ +
                                "/rolisd-" + std::to_string(id) + ".log");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  return Status::OK();
}

Status Replicated::Finish(RunResult* result) {
  // Every worker has stopped: what they committed is in the rings.
  Status kill_status;
  killed_ = followers_.StopKillTimer(&kill_status);
  if (!kill_status.ok()) return kill_status;
  result->killed_follower = killed_;
  Status check;
  if (o_.kill_follower_at > 0 && killed_ == 0) {
    check = Status::InvalidArgument("--kill-follower-at=" + std::to_string(o_.kill_follower_at) +
                                    ": the run ended before (it counts from the start of the warmup)");
  } else if (o_.check_acked) {
    check = CheckAcked(result);  // before the drain: what is acknowledged by now
  }
  observer_stop_.store(true);
  if (observer_.joinable()) observer_.join();
  result->has_ack_latency = true;
  result->ack_latency.Merge(latency_);
  result->unacked = never_acked_;
  for (auto& p : per_) result->unsampled += p->unsampled;
  result->flow_control_wait_ms = static_cast<double>(repl_->flow_control_wait_nanos()) / 1e6;
  if (!worker_cpus_.empty()) result->threads_on_worker_cpus = ThreadsAllowedOn(worker_cpus_);
  if (!check.ok()) return check;
  Status s = followers_.CheckAlive();
  if (!s.ok()) return s;
  if (!frozen_ && repl_->role() != rolis::Role::kLeader) {
    return Status::Internal("the in-process member stopped leading during the run");
  }
  return Status::OK();
}

void Replicated::Shutdown() {
  if (stopped_) return;
  stopped_ = true;
  followers_.StopKillTimer(nullptr);
  observer_stop_.store(true);
  if (observer_.joinable()) observer_.join();
  forwarding_.store(false);
  if (repl_) repl_->Stop();
  followers_.Stop(std::chrono::milliseconds(2000));
  std::error_code ec;
  if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
  if (!data_dir_.empty()) std::filesystem::remove_all(data_dir_, ec);
}

}  // namespace

Status MakeReplicatedMode(const ModeOptions& given, std::unique_ptr<Mode>* mode, ReplicatedControl** control) {
  ModeOptions o = given;
  if (o.replicas % 2 == 0) {
    return Status::InvalidArgument("--replicas=" + std::to_string(o.replicas) +
                                   ": want an odd number (1, 3, 5 or 7); an even count tolerates no more failures "
                                   "than one fewer");
  }
  if (o.batch_size == 0) o.batch_size = server::kDefaultBatchSize;  // rolisd's
  if (o.batch_size > 100000) return Status::InvalidArgument("--batch-size: want 1..100000");
  if (o.threads > 64) return Status::InvalidArgument("--threads: the replicated mode runs at most 64 (rolisd's limit)");
  std::string rolisd = o.rolisd.empty() ? RolisdNextToSelf() : o.rolisd;
  if (o.replicas > 1 && access(rolisd.c_str(), X_OK) != 0) {
    return Status::InvalidArgument("rolisd not found at " + rolisd + " (the followers run it): build it next to " +
                                   "rolis-bench (ninja rolisd) or pass --rolisd=PATH");
  }
  o.rolisd = rolisd;
  if ((o.kill_follower_at > 0 || o.check_acked) && o.replicas < 3) {
    return Status::InvalidArgument("--kill-follower-at and --check-acked need followers (--replicas=3 or more)");
  }
  auto r = std::make_unique<Replicated>(o, rolisd);
  Status s = r->Init();
  if (!s.ok()) return s;
  if (control != nullptr) *control = r.get();
  *mode = std::move(r);
  return Status::OK();
}

}  // namespace rolis::bench
