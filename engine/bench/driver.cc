#include "driver.h"

#include <pthread.h>
#include <sched.h>
#include <time.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include "cycle_clock.h"

namespace rolis::bench {
namespace {

enum Phase : int { kWarmup = 0, kMeasure = 1, kStop = 2 };

bool PinTo(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0;
}

double ThreadCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

struct PerThread {
  std::vector<TxnTypeStats> types;
  bool pinned = false;
  double cpu_seconds = 0;  // in the measured window
  Status error;
};

}  // namespace

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

  std::vector<PerThread> per(threads);
  std::atomic<int> phase{fixed_work || options.warmup_seconds <= 0 ? kMeasure : kWarmup};
  std::atomic<uint32_t> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> pool;
  pool.reserve(threads);
  for (uint32_t t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      PerThread& me = per[t];
      me.types.resize(type_names.size());
      if (options.pin_threads && !cpus.empty()) me.pinned = PinTo(cpus[t % cpus.size()]);
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

      int last_phase = kWarmup;
      double cpu_start = -1;  // thread CPU time when the measured window began
      for (uint64_t n = 0;; ++n) {
        const int p = phase.load(std::memory_order_relaxed);
        if (p != last_phase) {
          if (p == kMeasure) cpu_start = ThreadCpuSeconds();
          last_phase = p;
        }
        if (p == kStop || (fixed_work && n >= options.txns_per_thread)) break;
        const uint64_t start = CycleNow();
        hooks->BeforeTxn(t);
        workloads::TxnOutcome out = workload->RunOne(ctx);
        const uint64_t end = CycleNow();
        hooks->AfterTxn(t, start, end, p == kMeasure && out.error.ok());
        if (!out.error.ok()) {
          me.error = std::move(out.error);
          phase.store(kStop);
          break;
        }
        if (p != kMeasure) continue;
        TxnTypeStats& ts = me.types[out.type];
        ts.conflict_aborts += out.conflict_aborts;
        if (out.committed) ++ts.commits;
        else ++ts.rollbacks;
        ts.latency.Record(end - start);
      }
      if (cpu_start >= 0) me.cpu_seconds = ThreadCpuSeconds() - cpu_start;
      hooks->ThreadEnd(t);
    });
  }
  while (ready.load() < threads) std::this_thread::sleep_for(std::chrono::microseconds(100));

  using Seconds = std::chrono::duration<double>;
  go.store(true, std::memory_order_release);
  ClockPoint begin = ClockPoint::Now();
  if (!fixed_work) {
    if (phase.load() == kWarmup) {
      std::this_thread::sleep_for(Seconds(options.warmup_seconds));
      begin = ClockPoint::Now();
      int expected = kWarmup;
      phase.compare_exchange_strong(expected, kMeasure);
    }
    const auto deadline = begin.wall + std::chrono::duration_cast<std::chrono::steady_clock::duration>(Seconds(options.seconds));
    while (phase.load() != kStop && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    int expected = kMeasure;
    phase.compare_exchange_strong(expected, kStop);
  }
  const ClockPoint stop_point = ClockPoint::Now();
  for (auto& th : pool) th.join();
  const ClockPoint end = fixed_work ? ClockPoint::Now() : stop_point;

  RunResult& r = *result;
  r = RunResult();
  r.measured_seconds = Seconds(end.wall - begin.wall).count();
  r.nanos_per_tick = NanosPerTick(begin, end);
  r.types.resize(type_names.size());
  r.pinned = options.pin_threads && !cpus.empty();
  Status first_error;
  for (size_t i = 0; i < type_names.size(); ++i) r.types[i].name = std::string(type_names[i]);
  for (PerThread& me : per) {
    r.pinned = r.pinned && me.pinned;
    r.worker_cpu_seconds += me.cpu_seconds;
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
