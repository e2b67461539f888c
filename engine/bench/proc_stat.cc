#include "proc_stat.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <sstream>
#include <string>

namespace rolis::bench {

CpuTimes CpuTimesIn(std::string_view proc_stat, const std::vector<int>& cpus, long ticks_per_second) {
  CpuTimes out;
  if (ticks_per_second <= 0) return out;
  unsigned long long steal = 0, busy = 0;
  size_t pos = 0;
  while (pos < proc_stat.size()) {
    size_t eol = proc_stat.find('\n', pos);
    if (eol == std::string_view::npos) eol = proc_stat.size();
    std::string_view line = proc_stat.substr(pos, eol - pos);
    pos = eol + 1;
    if (line.substr(0, 5) == "ctxt ") {
      unsigned long long n = 0;
      if (std::from_chars(line.data() + 5, line.data() + line.size(), n).ec == std::errc()) {
        out.context_switches = static_cast<double>(n);
      }
      continue;
    }
    if (line.substr(0, 3) != "cpu" || line.size() < 4 || line[3] < '0' || line[3] > '9') continue;
    int cpu = -1;
    auto [p, ec] = std::from_chars(line.data() + 3, line.data() + line.size(), cpu);
    if (ec != std::errc() || std::find(cpus.begin(), cpus.end(), cpu) == cpus.end()) continue;
    // user nice system idle iowait irq softirq steal ...
    std::istringstream fields{std::string(p, line.data() + line.size())};
    unsigned long long v[8] = {};
    int n = 0;
    for (; n < 8 && (fields >> v[n]); n++) {
    }
    busy += v[0] + v[1] + v[2] + v[5] + v[6];
    if (n == 8) steal += v[7];
  }
  const double ms_per_tick = 1000.0 / static_cast<double>(ticks_per_second);
  out.steal_ms = static_cast<double>(steal) * ms_per_tick;
  out.busy_ms = static_cast<double>(busy) * ms_per_tick;
  return out;
}

ProcStat ProcStat::Read() {
  ProcStat s;
  std::ifstream in("/proc/stat");
  if (!in) return s;
  std::stringstream text;
  text << in.rdbuf();
  s.text_ = text.str();
  s.read_ = true;
  return s;
}

CpuTimes ProcStat::Of(const std::vector<int>& cpus) const {
  return read_ ? CpuTimesIn(text_, cpus, sysconf(_SC_CLK_TCK)) : CpuTimes();
}

}  // namespace rolis::bench
