// YCSB-like microbenchmark of the engine core alone (not a test):
// `keys` records with 8-byte big-endian keys and 8-byte values; each thread
// alternates a read-only transaction of 4 gets and a read-modify-write
// transaction of 4 keys, uniform keys. Prints txn/s and txn/s per CPU-second.
//
//   core_microbench [keys=1000000] [txns_per_thread=2000000] [threads=1] [ro=1]
//
// ro=1 runs the read-only half with BeginReadOnly (snapshots), ro=0 with
// Begin. For instruction counts, run under
//   valgrind --tool=callgrind --toggle-collect='rolis::bench::RunTxns*' ...
// and divide Ir by threads * txns_per_thread.
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "rolis/db.h"

namespace rolis::bench {

struct Rng {
  uint64_t s;
  uint64_t Next() {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s;
  }
};

inline std::string_view Key(uint64_t x, char* buf) {
  uint64_t be = __builtin_bswap64(x);
  std::memcpy(buf, &be, 8);
  return {buf, 8};
}

__attribute__((noinline)) uint64_t RunTxns(Worker* w, Table* t, uint64_t keys, uint64_t n, uint64_t seed, bool ro) {
  Rng rng{seed * 0x9e3779b97f4a7c15ull + 1};
  std::string value;
  uint64_t aborts = 0;
  char kb[4][8];
  for (uint64_t i = 0; i < n; ++i) {
    uint64_t k[4];
    for (int j = 0; j < 4; ++j) k[j] = rng.Next() % keys;
    if (i % 2 == 0) {
      auto txn = ro ? w->BeginReadOnly() : w->Begin();
      for (int j = 0; j < 4; ++j) (void)txn->Get(t, Key(k[j], kb[j]), &value);
      (void)txn->Commit();
    } else {
      for (;;) {
        auto txn = w->Begin();
        for (int j = 0; j < 4; ++j) {
          (void)txn->Get(t, Key(k[j], kb[j]), &value);
          uint64_t v = 0;
          std::memcpy(&v, value.data(), std::min<size_t>(8, value.size()));
          ++v;
          (void)txn->Put(t, Key(k[j], kb[j]), std::string_view(reinterpret_cast<char*>(&v), 8));
        }
        if (txn->Commit().ok()) break;
        ++aborts;
      }
    }
  }
  return aborts;
}

double ThreadCpuSeconds() {
  rusage ru;
  getrusage(RUSAGE_THREAD, &ru);
  return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

}  // namespace rolis::bench

int main(int argc, char** argv) {
  using namespace rolis;
  uint64_t keys = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1000000;
  uint64_t txns = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 2000000;
  int threads = argc > 3 ? std::atoi(argv[3]) : 1;
  bool ro = argc > 4 ? std::atoi(argv[4]) != 0 : true;
  Options o;
  auto db = Database::Open(o);
  Table* t = nullptr;
  if (!db->CreateTable("ycsb", &t).ok()) return 1;
  {
    auto w = db->RegisterWorker();
    char kb[8];
    uint64_t v = 0;
    for (uint64_t lo = 0; lo < keys; lo += 1000) {
      auto txn = w->Begin();
      for (uint64_t k = lo; k < std::min(keys, lo + 1000); ++k) {
        (void)txn->Put(t, bench::Key(k, kb), std::string_view(reinterpret_cast<char*>(&v), 8));
      }
      if (!txn->Commit().ok()) return 2;
    }
  }
  // Let snapshots include the load.
  uint64_t target = db->Stats().current_epoch;
  while (db->Stats().snapshot_epoch < target) std::this_thread::sleep_for(std::chrono::milliseconds(5));

  std::atomic<uint64_t> aborts{0};
  std::vector<double> cpu(static_cast<size_t>(threads));
  auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> ths;
  for (int i = 0; i < threads; ++i) {
    ths.emplace_back([&, i] {
      auto w = db->RegisterWorker();
      double c0 = bench::ThreadCpuSeconds();
      aborts += bench::RunTxns(w.get(), t, keys, txns, static_cast<uint64_t>(i) + 1, ro);
      cpu[static_cast<size_t>(i)] = bench::ThreadCpuSeconds() - c0;
    });
  }
  for (auto& th : ths) th.join();
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  double cpu_total = 0;
  for (double c : cpu) cpu_total += c;
  double total = static_cast<double>(txns) * threads;
  DatabaseStats s = db->Stats();
  std::printf("threads=%d txns=%.0f secs=%.3f txn/s=%.0f txn/s/cpu=%.0f aborts=%lu live_versions=%lu\n", threads,
              total, secs, total / secs, total / cpu_total, (unsigned long)aborts.load(),
              (unsigned long)s.live_versions);
  return 0;
}
