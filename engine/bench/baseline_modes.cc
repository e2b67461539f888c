#include "baseline_modes.h"

#include <string>

#include "baselines/calvin.h"
#include "baselines/two_phase_locking.h"
#include "cycle_clock.h"
#include "replicated_mode.h"

namespace rolis::bench {
namespace {

// What a mode over another (replicated or not) forwards to it.
class Forwarding : public Mode {
 public:
  Forwarding(ModeOptions o, std::unique_ptr<Mode> inner) : o_(std::move(o)), inner_(std::move(inner)) {}
  const ModeOptions& options() const override { return o_; }
  CommitHook* commit_hook() override { return inner_ ? inner_->commit_hook() : nullptr; }
  Status AfterOpen(Database* db) override { return inner_ ? inner_->AfterOpen(db) : Status::OK(); }
  Status Start(Database* db) override { return inner_ ? inner_->Start(db) : Status::OK(); }
  WorkerHooks* worker_hooks() override { return inner_ ? inner_->worker_hooks() : nullptr; }
  std::vector<int> driver_cpus() const override { return inner_ ? inner_->driver_cpus() : std::vector<int>(); }
  Status Finish(RunResult* result) override { return inner_ ? inner_->Finish(result) : Status::OK(); }
  void Shutdown() override {
    if (inner_) inner_->Shutdown();
  }
  std::string Placement() const override { return inner_ ? inner_->Placement() : ""; }

 protected:
  ModeOptions o_;
  std::unique_ptr<Mode> inner_;
};

class TwoPhaseLockingMode final : public Forwarding {
 public:
  TwoPhaseLockingMode(ModeOptions o, std::unique_ptr<Mode> inner, ReplicatedControl* control)
      : Forwarding(std::move(o), std::move(inner)), runner_(o_.threads, Hooks(control)) {}
  workloads::TxnRunner* txn_runner() override { return &runner_; }

 private:
  static baselines::TwoPhaseLockingHooks Hooks(ReplicatedControl* c) {
    baselines::TwoPhaseLockingHooks h;
    if (c == nullptr) return h;
    h.pause = [c](uint32_t t) { c->Pause(t); };
    h.resume = [c](uint32_t t) { c->Resume(t); };
    h.wait_replicated = [c](uint32_t t, uint64_t ts) { return c->WaitReplicated(t, ts); };
    return h;
  }
  baselines::TwoPhaseLocking runner_;
};

class CalvinMode final : public Mode {
 public:
  CalvinMode(ModeOptions o, std::unique_ptr<Mode> log_mode, ReplicatedControl* control, std::vector<int> cpus)
      : o_(std::move(o)), log_mode_(std::move(log_mode)), control_(control), cpus_(std::move(cpus)) {
    baselines::CalvinOptions c;
    c.threads = o_.threads;
    c.epoch = std::chrono::milliseconds(o_.calvin_epoch_ms);
    c.outstanding_per_thread = o_.calvin_outstanding;
    c.now = [] { return CycleNow(); };
    baselines::Calvin::Replicate replicate;
    if (log_mode_) replicate = [this](uint64_t epoch, std::string_view batch) { return Replicate(epoch, batch); };
    calvin_ = std::make_unique<baselines::Calvin>(c, std::move(replicate));
  }
  ~CalvinMode() override { Shutdown(); }

  const ModeOptions& options() const override { return o_; }
  CommitHook* commit_hook() override { return nullptr; }  // Calvin replicates inputs, not writes
  std::vector<int> driver_cpus() const override { return cpus_; }
  workloads::TxnRunner* txn_runner() override { return calvin_.get(); }

  Status AfterOpen(Database* db) override {
    if (!log_mode_) return Status::OK();
    Options options;
    options.epoch_period_ms = o_.epoch_period_ms;
    options.commit_hook = log_mode_->commit_hook();
    log_db_ = Database::Open(options);
    if (!log_db_) return Status::Internal("cannot open Calvin's batch log database");
    Status s = log_mode_->AfterOpen(log_db_.get());
    if (s.ok()) s = log_db_->CreateTable("calvin_batch", &batch_table_);
    return s;
  }

  Status Start(Database* db) override {
    if (log_mode_) {
      Status s = log_mode_->Start(log_db_.get());
      if (!s.ok()) return s;
    }
    calvin_->Start();
    return Status::OK();
  }

  Status Finish(RunResult* result) override {
    calvin_->Stop();  // every worker has drained what it submitted
    if (!log_mode_) return Status::OK();
    RunResult log_result;  // the log stream's own figures are not the run's
    Status s = log_mode_->Finish(&log_result);
    // Its --kill-follower-at and --check-acked: those of the batch log.
    result->killed_follower = log_result.killed_follower;
    result->acked_check = log_result.acked_check;
    return s;
  }

  void Shutdown() override {
    if (calvin_) calvin_->Stop();
    log_worker_.reset();
    if (log_mode_) log_mode_->Shutdown();
  }

  std::string Placement() const override {
    std::string p = "calvin: epoch " + std::to_string(o_.calvin_epoch_ms) + " ms, " +
                    std::to_string(o_.calvin_outstanding) + " transactions submitted per worker";
    if (log_mode_) p += "; batch log: " + log_mode_->Placement();
    return p;
  }

 private:
  // On the sequencer's thread: the batch as one transaction of the log
  // database (in chunks under the value limit), then wait for the watermark.
  Status Replicate(uint64_t epoch, std::string_view batch) {
    WorkerHooks* hooks = log_mode_->worker_hooks();
    if (!log_worker_) {
      log_worker_ = log_db_->RegisterWorker();
      if (!log_worker_) return Status::ResourceExhausted("RegisterWorker failed");
      hooks->ThreadStart(0, log_worker_.get());
    }
    constexpr size_t kChunk = 60000;
    for (int attempt = 0;; ++attempt) {
      hooks->BeforeTxn(0);
      std::unique_ptr<Transaction> txn = log_worker_->Begin();
      Status s;
      for (size_t off = 0, chunk = 0; off < batch.size() && s.ok(); off += kChunk, ++chunk) {
        char key[12];
        workloads::StoreBigEndian64(key, epoch);
        workloads::StoreBigEndian32(key + 8, static_cast<uint32_t>(chunk));
        s = txn->Put(batch_table_, std::string_view(key, 12), batch.substr(off, kChunk));
      }
      if (s.ok()) s = txn->Commit();
      else txn->Abort();
      hooks->AfterTxn(0, 0, 0, /*measured=*/false);
      if (s.ok()) return control_->WaitReplicated(0, txn->commit_ts());
      if (!s.IsAborted() || attempt > 100) return s;
    }
  }

  ModeOptions o_;
  std::unique_ptr<Mode> log_mode_;
  ReplicatedControl* control_;
  std::vector<int> cpus_;
  std::unique_ptr<Database> log_db_;
  Table* batch_table_ = nullptr;
  std::unique_ptr<Worker> log_worker_;
  std::unique_ptr<baselines::Calvin> calvin_;
};

}  // namespace

Status MakeTwoPhaseLockingMode(const ModeOptions& given, std::unique_ptr<Mode>* mode) {
  ModeOptions o = given;
  o.mode = "2pl";
  std::unique_ptr<Mode> inner;
  ReplicatedControl* control = nullptr;
  if (o.replicas > 1) {
    if (o.batch_size == 0) o.batch_size = 1;
    Status s = MakeReplicatedMode(o, &inner, &control);
    if (!s.ok()) return s;
    o = inner->options();
  } else {
    if (o.durability != "memory") return Status::InvalidArgument("--durability needs --replicas=3");
    o.batch_size = 0;
  }
  *mode = std::make_unique<TwoPhaseLockingMode>(o, std::move(inner), control);
  return Status::OK();
}

Status MakeCalvinMode(const ModeOptions& given, std::unique_ptr<Mode>* mode) {
  ModeOptions o = given;
  o.mode = "calvin";
  if (o.calvin_epoch_ms == 0 || o.calvin_outstanding == 0) {
    return Status::InvalidArgument("--calvin-epoch-ms and --calvin-outstanding: want at least 1");
  }
  // Before the log's replicated mode pins this thread away from its one stream's CPU.
  std::vector<int> cpus = AllowedCpus();
  if (o.pin && cpus.size() > o.threads) cpus.resize(o.threads);
  std::unique_ptr<Mode> log_mode;
  ReplicatedControl* control = nullptr;
  if (o.replicas > 1) {
    ModeOptions log = o;
    log.threads = 1;  // the sequencer's stream
    if (log.batch_size == 0) log.batch_size = 1;  // one Paxos batch per epoch, sent at once
    Status s = MakeReplicatedMode(log, &log_mode, &control);
    if (!s.ok()) return s;
    o.batch_size = log_mode->options().batch_size;
    o.rolisd = log_mode->options().rolisd;
  } else {
    if (o.durability != "memory") return Status::InvalidArgument("--durability needs --replicas=3");
    o.batch_size = 0;
  }
  *mode = std::make_unique<CalvinMode>(o, std::move(log_mode), control, std::move(cpus));
  return Status::OK();
}

}  // namespace rolis::bench
