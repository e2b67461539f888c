// Steal time: how long the hypervisor ran something else while a vCPU had
// work (the 8th number of a "cpuN" line of /proc/stat). On a shared VM it
// tells a slow run caused by the host from one caused by the code: a worker
// whose CPU was stolen for 40 ms has a 40 ms stall in its latencies.
#pragma once

#include <string_view>
#include <vector>

namespace rolis::bench {

// Milliseconds stolen so far from the given CPUs, summed (0 where the
// kernel does not count steal time); -1 if /proc/stat cannot be read.
double StolenMillis(const std::vector<int>& cpus);
// The same from the text of a /proc/stat (for tests).
double StolenMillisIn(std::string_view proc_stat, const std::vector<int>& cpus, long ticks_per_second);

}  // namespace rolis::bench
