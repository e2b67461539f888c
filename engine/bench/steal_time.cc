#include "steal_time.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <sstream>
#include <string>

namespace rolis::bench {

double StolenMillisIn(std::string_view proc_stat, const std::vector<int>& cpus, long ticks_per_second) {
  if (ticks_per_second <= 0) return -1;
  unsigned long long ticks = 0;
  size_t pos = 0;
  while (pos < proc_stat.size()) {
    size_t eol = proc_stat.find('\n', pos);
    if (eol == std::string_view::npos) eol = proc_stat.size();
    std::string_view line = proc_stat.substr(pos, eol - pos);
    pos = eol + 1;
    if (line.substr(0, 3) != "cpu" || line.size() < 4 || line[3] < '0' || line[3] > '9') continue;
    int cpu = -1;
    auto [p, ec] = std::from_chars(line.data() + 3, line.data() + line.size(), cpu);
    if (ec != std::errc() || std::find(cpus.begin(), cpus.end(), cpu) == cpus.end()) continue;
    // user nice system idle iowait irq softirq steal ...
    std::istringstream fields{std::string(p, line.data() + line.size())};
    unsigned long long v = 0, steal = 0;
    int n = 0;
    for (; n < 8 && (fields >> v); n++) steal = v;
    if (n == 8) ticks += steal;
  }
  return static_cast<double>(ticks) * 1000.0 / static_cast<double>(ticks_per_second);
}

double StolenMillis(const std::vector<int>& cpus) {
  std::ifstream in("/proc/stat");
  if (!in) return -1;
  std::stringstream text;
  text << in.rdbuf();
  return StolenMillisIn(text.str(), cpus, sysconf(_SC_CLK_TCK));
}

}  // namespace rolis::bench
