// What /proc/stat says about a run's CPUs, read at the start and the end of
// the measured window:
//   - steal time, how long the hypervisor ran something else while a vCPU
//     had work (the 8th number of a "cpuN" line). On a shared VM it tells a
//     slow run caused by the host from one caused by the code: a worker whose
//     CPU was stolen for 40 ms has a 40 ms stall in its latencies;
//   - busy time (user, nice, system, irq, softirq) of the CPUs the workers do
//     not use: with --replicas=3 and pinned workers, what the followers and
//     the leader's replication threads cost, which a throughput ratio only
//     shows through the noise of the host;
//   - context switches, machine-wide (the "ctxt" line).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace rolis::bench {

struct CpuTimes {
  double steal_ms = -1;  // -1: /proc/stat could not be read
  double busy_ms = -1;
  double context_switches = -1;
};

// Times so far from the text of a /proc/stat, summed over the given CPUs
// (steal 0 where the kernel does not count it).
CpuTimes CpuTimesIn(std::string_view proc_stat, const std::vector<int>& cpus, long ticks_per_second);

// One reading of /proc/stat, for the times of several groups of CPUs at the
// same moment.
class ProcStat {
 public:
  static ProcStat Read();  // an unreadable /proc/stat gives times of -1
  CpuTimes Of(const std::vector<int>& cpus) const;

 private:
  std::string text_;
  bool read_ = false;
};

}  // namespace rolis::bench
