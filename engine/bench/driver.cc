#include "rolis/thread_name.h"
#include "driver.h"

#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <thread>

#include "cycle_clock.h"
#include "proc_stat.h"

namespace rolis::bench {
namespace {

enum Phase : int { kWarmup = 0, kMeasure = 1, kStop = 2 };


double ThreadCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Seconds this thread has spent ready to run while another task had its
// CPU (the second field of /proc/thread-self/schedstat); -1 where the
// kernel does not keep scheduler statistics.
double ThreadRunqueueSeconds() {
  std::FILE* f = std::fopen("/proc/thread-self/schedstat", "r");
  if (f == nullptr) return -1;
  unsigned long long on_cpu = 0, waiting = 0;
  const bool read = std::fscanf(f, "%llu %llu", &on_cpu, &waiting) == 2;
  std::fclose(f);
  return read ? static_cast<double>(waiting) * 1e-9 : -1;
}

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#endif
}

// Paces one thread of an open-loop run: Next() waits until the next
// transaction is due and returns its due tick.
class Pacer {
 public:
  Pacer(double ticks_per_txn, uint64_t first) : step_(ticks_per_txn), first_(first) {}
  // Waits until the next transaction is due (calling on_wait first if it
  // has to) and returns its due time.
  template <typename OnWait>
  uint64_t Next(double ticks_per_micro, OnWait on_wait) {
    const uint64_t due = first_ + static_cast<uint64_t>(step_ * static_cast<double>(n_++));
    uint64_t now = CycleNow();
    if (now < due) {
      on_wait();
      // Sleep through most of a long gap (the worker's CPU is then free for
      // the replicator), spin the rest.
      const double gap_us = static_cast<double>(due - now) / ticks_per_micro;
      if (gap_us > 200) std::this_thread::sleep_for(std::chrono::microseconds(static_cast<int64_t>(gap_us - 100)));
      while ((now = CycleNow()) < due) CpuRelax();
    } else {
      max_lag_ = std::max(max_lag_, now - due);
    }
    return due;
  }
  uint64_t max_lag() const { return max_lag_; }

 private:
  double step_;
  uint64_t first_;
  uint64_t n_ = 0;
  uint64_t max_lag_ = 0;
};

struct PerThread {
  std::vector<TxnTypeStats> types;
  uint64_t max_lag_ticks = 0;
  bool pinned = false;
  double cpu_seconds = 0;  // in the measured window
  double runqueue_seconds = -1;  // in the measured window; -1: not counted
  Status error;
  // For the timeline, read while the thread runs; on a line of its own, as
  // another worker's PerThread is next to this one.
  alignas(64) std::atomic<uint64_t> window_commits{0};
};

// Samples the window's commits (and the other CPUs' busy time) every
// `interval` seconds for RunResult::timeline; does nothing when interval <= 0.
class TimelineSampler {
 public:
  TimelineSampler(double interval, std::chrono::steady_clock::time_point begin, CpuTimes others_at_begin,
                  const std::vector<PerThread>* per, const std::vector<int>* other_cpus)
      : interval_(interval), begin_(begin), last_at_(begin), last_others_(others_at_begin), per_(per),
        other_cpus_(other_cpus) {}
  // `last`: the window is over; its remainder is the last interval.
  void Poll(std::chrono::steady_clock::time_point now, bool last = false) {
    if (interval_ <= 0) return;
    const auto interval = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
        std::chrono::duration<double>(interval_));
    if (last ? now - last_at_ < interval / 10 : now < last_at_ + interval) return;  // not a whole interval yet
    uint64_t commits = 0;
    for (const PerThread& me : *per_) commits += me.window_commits.load(std::memory_order_relaxed);
    const CpuTimes others = ProcStat::Read().Of(*other_cpus_);
    const uint64_t n = commits - last_commits_;
    TimelinePoint p;
    p.end_seconds = std::chrono::duration<double>(now - begin_).count();
    p.tps = n / std::chrono::duration<double>(now - last_at_).count();
    if (!other_cpus_->empty() && others.busy_ms >= 0 && last_others_.busy_ms >= 0) {
      p.other_cpus_us_per_txn = MicrosPerTxn(others.busy_ms - last_others_.busy_ms, n);
    }
    points_.push_back(p);
    last_at_ = now;
    last_commits_ = commits;
    last_others_ = others;
  }
  std::vector<TimelinePoint> Take() { return std::move(points_); }

 private:
  const double interval_;
  const std::chrono::steady_clock::time_point begin_;
  std::chrono::steady_clock::time_point last_at_;
  CpuTimes last_others_;
  uint64_t last_commits_ = 0;
  const std::vector<PerThread>* per_;
  const std::vector<int>* other_cpus_;
  std::vector<TimelinePoint> points_;
};

}  // namespace

cpu_set_t CpuSetOf(const std::vector<int>& cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cpus) CPU_SET(c, &set);
  return set;
}

bool PinThreadTo(const std::vector<int>& cpus) {
  const cpu_set_t set = CpuSetOf(cpus);
  return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0;
}

std::vector<int> AllowedCpus() {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    for (int c = 0; c < CPU_SETSIZE; ++c) {
      if (CPU_ISSET(c, &set)) cpus.push_back(c);
    }
  }
  return cpus;
}

std::vector<int> CpusOtherThan(const std::vector<int>& cpus) {
  std::vector<int> out;
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  for (int c = 0; c < online; c++) {
    if (std::find(cpus.begin(), cpus.end(), c) == cpus.end()) out.push_back(c);
  }
  return out;
}

void WaitForSnapshot(Database* db, uint32_t timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  const uint64_t epoch = db->Stats().current_epoch;
  while (std::chrono::steady_clock::now() < deadline) {
    if (db->Stats().snapshot_epoch >= epoch) return;  // snapshots show versions of epochs <= it
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

Status RunWorkload(Database* db, workloads::Workload* workload, const DriverOptions& options, RunResult* result) {
  const uint32_t threads = options.threads == 0 ? 1 : options.threads;
  const auto type_names = workload->txn_types();
  const std::vector<int> cpus = options.cpus.empty() ? AllowedCpus() : options.cpus;
  WorkerHooks no_hooks;
  WorkerHooks* hooks = options.hooks != nullptr ? options.hooks : &no_hooks;
  const bool fixed_work = options.txns_per_thread > 0;
  if (options.other_cpu_load != OtherCpuLoadKind::kNone && (!options.pin_threads || cpus.size() <= threads)) {
    return Status::InvalidArgument(
        "--other-cpu-load needs pinned workers and a CPU they do not use (fewer --threads than CPUs, no --no-pin)");
  }

  // Open loop: ticks per second, measured over a short sleep.
  double ticks_per_micro = 0;
  if (options.rate_tps > 0) {
    const ClockPoint a = ClockPoint::Now();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ticks_per_micro = 1000.0 / NanosPerTick(a, ClockPoint::Now());
  }
  std::atomic<uint64_t> first_due{0};

  std::vector<PerThread> per(threads);
  std::atomic<int> phase{fixed_work || options.warmup_seconds <= 0 ? kMeasure : kWarmup};
  std::atomic<uint32_t> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> pool;
  pool.reserve(threads);
  std::atomic<uint32_t> finished{0};  // workers whose thread has returned
  for (uint32_t t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      struct CountFinished {
        std::atomic<uint32_t>& n;
        ~CountFinished() { n.fetch_add(1); }
      } count_finished{finished};
      PerThread& me = per[t];
      NameThisThread("bench-worker-" + std::to_string(t));
      me.types.resize(type_names.size());
      if (options.pin_threads && !cpus.empty()) me.pinned = PinThreadTo({cpus[t % cpus.size()]});
      std::unique_ptr<Worker> worker = db->RegisterWorker();
      if (!worker) {
        me.error = Status::ResourceExhausted("RegisterWorker failed");
        ready.fetch_add(1);
        return;
      }
      workloads::WorkerContext ctx(worker.get(), t, threads, options.seed);
      workload->InitThread(ctx);
      hooks->ThreadStart(t, worker.get());
      ready.fetch_add(1);
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();

      std::optional<Pacer> pacer;
      if (options.rate_tps > 0) {
        // Threads are offset from each other by a share of the interval.
        const double step = ticks_per_micro * 1e6 * threads / options.rate_tps;
        pacer.emplace(step, first_due.load() + static_cast<uint64_t>(step * t / threads));
      }
      int last_phase = kWarmup;
      double cpu_start = -1;       // thread CPU time when the measured window began
      double runqueue_start = -1;  // and its time on the run queue
      for (uint64_t n = 0;; ++n) {
        const int p = phase.load(std::memory_order_relaxed);
        if (p != last_phase) {
          if (p == kMeasure) {
            cpu_start = ThreadCpuSeconds();
            runqueue_start = ThreadRunqueueSeconds();
          }
          last_phase = p;
        }
        if (p == kStop || (fixed_work && n >= options.txns_per_thread)) break;
        const uint64_t start = pacer ? pacer->Next(ticks_per_micro, [&] { hooks->Idle(t); }) : CycleNow();
        hooks->BeforeTxn(t);
        workloads::TxnOutcome out = options.runner ? options.runner->RunOne(ctx, workload) : workload->RunOne(ctx);
        const uint64_t end = CycleNow();
        // A runner that queues transactions (Calvin) says when this one was submitted.
        const uint64_t began = out.submitted_at != 0 && out.submitted_at < end ? out.submitted_at : start;
        hooks->AfterTxn(t, start, end, p == kMeasure && out.error.ok());
        if (!out.error.ok()) {
          me.error = std::move(out.error);
          phase.store(kStop);
          break;
        }
        if (p != kMeasure) continue;
        TxnTypeStats& ts = me.types[out.type];
        ts.conflict_aborts += out.conflict_aborts;
        if (out.committed) {
          ++ts.commits;
          me.window_commits.store(me.window_commits.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
        } else {
          ++ts.rollbacks;
        }
        ts.latency.Record(end - began);
      }
      if (options.runner) {
        Status s = options.runner->ThreadEnd(ctx, workload);
        if (!s.ok() && me.error.ok()) me.error = std::move(s);
      }
      if (cpu_start >= 0) me.cpu_seconds = ThreadCpuSeconds() - cpu_start;
      if (const double now = ThreadRunqueueSeconds(); runqueue_start >= 0 && now >= 0) {
        me.runqueue_seconds = now - runqueue_start;
      }
      if (pacer) me.max_lag_ticks = pacer->max_lag();
      hooks->ThreadEnd(t);
    });
  }
  while (ready.load() < threads) std::this_thread::sleep_for(std::chrono::microseconds(100));

  // The CPUs the workers run on (all allowed ones when they are not pinned).
  std::vector<int> worker_cpus = cpus;
  if (options.pin_threads && cpus.size() > threads) worker_cpus.resize(threads);
  // The rest: where followers and replication threads run (replicated_mode.h).
  const std::vector<int> other_cpus = options.pin_threads ? CpusOtherThan(worker_cpus) : std::vector<int>();
  std::optional<OtherCpuLoad> other_load;
  if (options.other_cpu_load != OtherCpuLoadKind::kNone) other_load.emplace(options.other_cpu_load, other_cpus);
  ProcStat at_begin = ProcStat::Read();
  std::vector<TimelinePoint> timeline_points;

  using Seconds = std::chrono::duration<double>;
  first_due.store(CycleNow());
  go.store(true, std::memory_order_release);
  ClockPoint begin = ClockPoint::Now();
  if (!fixed_work) {
    if (phase.load() == kWarmup) {
      std::this_thread::sleep_for(Seconds(options.warmup_seconds));
      begin = ClockPoint::Now();
      at_begin = ProcStat::Read();
      int expected = kWarmup;
      phase.compare_exchange_strong(expected, kMeasure);
    }
    const auto deadline = begin.wall + std::chrono::duration_cast<std::chrono::steady_clock::duration>(Seconds(options.seconds));
    TimelineSampler timeline(options.timeline_seconds, begin.wall, at_begin.Of(other_cpus), &per, &other_cpus);
    while (phase.load() != kStop && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      timeline.Poll(std::chrono::steady_clock::now());
    }
    timeline.Poll(std::chrono::steady_clock::now(), /*last=*/true);
    timeline_points = timeline.Take();
    int expected = kMeasure;
    phase.compare_exchange_strong(expected, kStop);
  }
  const ClockPoint stop_point = ClockPoint::Now();
  const ProcStat at_end = ProcStat::Read();
  const uint64_t other_load_rounds = other_load ? other_load->rounds() : 0;
  const int other_load_unpinned = other_load ? other_load->unpinned() : 0;
  other_load.reset();
  if (!fixed_work) {
    // A worker inside a commit that can never be acknowledged (a replicated
    // run that lost its majority waits in flow control for good) would
    // hang the join: say so and end instead.
    const auto join_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (finished.load() < threads) {
      if (std::chrono::steady_clock::now() > join_deadline) {
        std::fprintf(stderr,
                     "rolis-bench: %u of %u workers were still inside a transaction 60 s after the run ended "
                     "(a replicated run whose members lost their majority?); ending without a result\n",
                     threads - finished.load(), threads);
        std::fflush(stderr);
        std::_Exit(3);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  for (auto& th : pool) th.join();
  const ClockPoint end = fixed_work ? ClockPoint::Now() : stop_point;

  RunResult& r = *result;
  r = RunResult();
  r.measured_seconds = Seconds(end.wall - begin.wall).count();
  r.nanos_per_tick = NanosPerTick(begin, end);
  r.types.resize(type_names.size());
  r.pinned = options.pin_threads && !cpus.empty();
  r.other_cpu_load_rounds = other_load_rounds;
  r.other_cpu_load_unpinned = other_load_unpinned;
  r.rate_tps = options.rate_tps;
  const CpuTimes workers_at_begin = at_begin.Of(worker_cpus), workers_at_end = at_end.Of(worker_cpus);
  const CpuTimes others_at_begin = at_begin.Of(other_cpus), others_at_end = at_end.Of(other_cpus);
  if (workers_at_begin.steal_ms >= 0 && workers_at_end.steal_ms >= 0) {
    r.steal_ms = workers_at_end.steal_ms - workers_at_begin.steal_ms;
  }
  if (!other_cpus.empty() && others_at_begin.busy_ms >= 0 && others_at_end.busy_ms >= 0) {
    r.other_cpus_busy_ms = others_at_end.busy_ms - others_at_begin.busy_ms;
  }
  if (workers_at_begin.context_switches >= 0 && workers_at_end.context_switches >= 0) {
    r.context_switches = workers_at_end.context_switches - workers_at_begin.context_switches;
  }
  r.timeline = std::move(timeline_points);
  Status first_error;
  for (size_t i = 0; i < type_names.size(); ++i) r.types[i].name = std::string(type_names[i]);
  for (PerThread& me : per) {
    r.pinned = r.pinned && me.pinned;
    r.worker_cpu_seconds += me.cpu_seconds;
    if (me.runqueue_seconds >= 0) r.worker_runqueue_ms = std::max(r.worker_runqueue_ms, 0.0) + me.runqueue_seconds * 1e3;
    r.max_lag_micros = std::max(r.max_lag_micros, static_cast<double>(me.max_lag_ticks) * r.nanos_per_tick / 1000.0);
    if (first_error.ok() && !me.error.ok()) first_error = me.error;
    for (size_t i = 0; i < me.types.size(); ++i) {
      TxnTypeStats& to = r.types[i];
      const TxnTypeStats& from = me.types[i];
      to.commits += from.commits;
      to.conflict_aborts += from.conflict_aborts;
      to.rollbacks += from.rollbacks;
      to.latency.Merge(from.latency);
    }
  }
  for (const TxnTypeStats& ts : r.types) {
    r.commits += ts.commits;
    r.conflict_aborts += ts.conflict_aborts;
    r.rollbacks += ts.rollbacks;
    r.latency.Merge(ts.latency);
  }
  return first_error;
}

}  // namespace rolis::bench
