// rolis-fsync-probe: the latency of fdatasync after an append of a given
// size, in a given directory (the disk a data directory would be on). It
// bounds what group commit can do: a member in --durability=disk answers an
// accept at most once per sync, so one stream with one batch in flight
// commits at most 1/latency batches per second (docs/replication.md,
// "Durability").
//
//   rolis-fsync-probe --dir=/var/lib/rolis [--sizes=512,4096,65536,1048576] [--count=200]
//
// Prints a table (microseconds) and one JSON line. The file it writes is
// removed at the end.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "file_env.h"

using rolis::durability::Env;
using rolis::durability::WritableFile;

namespace {

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"fdatasync latency of appends in a directory"};
  std::string dir;
  std::vector<size_t> sizes = {512, 4096, 65536, 1048576};
  int count = 200;
  app.add_option("--dir", dir, "directory to write in (on the disk to measure)")->required();
  app.add_option("--sizes", sizes, "append sizes in bytes")->delimiter(',');
  app.add_option("--count", count, "appends (each followed by fdatasync) per size")->check(CLI::Range(1, 1000000));
  CLI11_PARSE(app, argc, argv);

  Env* env = Env::Posix();
  const std::string path = rolis::durability::JoinPath(dir, "rolis-fsync-probe." + std::to_string(::getpid()) + ".tmp");
  std::unique_ptr<WritableFile> f;
  if (rolis::Status s = env->OpenAppendable(path, &f); !s.ok()) {
    std::fprintf(stderr, "rolis-fsync-probe: %s\n", s.ToString().c_str());
    return 1;
  }
  struct Row {
    size_t bytes;
    double write_p50, p50, p90, p99, max, mbps;
  };
  std::vector<Row> rows;
  for (size_t size : sizes) {
    std::string data(size, 'r');
    std::vector<double> writes, syncs;
    auto begin = std::chrono::steady_clock::now();
    for (int i = 0; i < count; i++) {
      auto t0 = std::chrono::steady_clock::now();
      rolis::Status s = rolis::durability::WriteAll(*f, data);
      auto t1 = std::chrono::steady_clock::now();
      if (s.ok()) s = f->Sync();
      auto t2 = std::chrono::steady_clock::now();
      if (!s.ok()) {
        std::fprintf(stderr, "rolis-fsync-probe: %s\n", s.ToString().c_str());
        (void)env->Remove(path);
        return 1;
      }
      writes.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
      syncs.push_back(std::chrono::duration<double, std::micro>(t2 - t1).count());
    }
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    rows.push_back(Row{size, Percentile(writes, 0.5), Percentile(syncs, 0.5), Percentile(syncs, 0.9),
                       Percentile(syncs, 0.99), *std::max_element(syncs.begin(), syncs.end()),
                       static_cast<double>(size) * count / secs / 1e6});
  }
  f.reset();
  (void)env->Remove(path);

  std::printf("fdatasync after an append, %d appends per size, in %s (microseconds)\n", count, dir.c_str());
  std::printf("%10s %10s %10s %10s %10s %10s %10s %10s\n", "bytes", "write_p50", "sync_p50", "sync_p90", "sync_p99",
              "sync_max", "syncs/s", "MB/s");
  for (const Row& r : rows) {
    std::printf("%10zu %10.1f %10.1f %10.1f %10.1f %10.1f %10.0f %10.1f\n", r.bytes, r.write_p50, r.p50, r.p90, r.p99,
                r.max, r.p50 > 0 ? 1e6 / r.p50 : 0, r.mbps);
  }
  std::printf("{\"probe\":\"fdatasync\",\"dir\":\"%s\",\"count\":%d,\"results\":[", dir.c_str(), count);
  for (size_t i = 0; i < rows.size(); i++) {
    const Row& r = rows[i];
    std::printf("%s{\"bytes\":%zu,\"write_p50_us\":%.1f,\"sync_p50_us\":%.1f,\"sync_p90_us\":%.1f,"
                "\"sync_p99_us\":%.1f,\"sync_max_us\":%.1f,\"mb_per_s\":%.1f}",
                i ? "," : "", r.bytes, r.write_p50, r.p50, r.p90, r.p99, r.max, r.mbps);
  }
  std::printf("]}\n");
  return 0;
}
