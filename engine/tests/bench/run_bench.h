// Runs the built rolis-bench (ROLIS_BENCH_BINARY, followers from
// ROLISD_BINARY) with arguments and returns its output: what the suite's
// end-to-end tests share.
#pragma once

#include <cstdio>
#include <string>

namespace rolis::bench::testing {

inline std::string RunBench(const std::string& args, int* exit_code) {
  const std::string cmd = std::string(ROLIS_BENCH_BINARY) + " --rolisd=" + ROLISD_BINARY + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return "";
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  *exit_code = pclose(p);
  return out;
}

inline std::string LastLine(const std::string& out) {
  const size_t end = out.find_last_not_of('\n');
  if (end == std::string::npos) return "";
  const size_t nl = out.rfind('\n', end);
  const size_t begin = nl == std::string::npos ? 0 : nl + 1;
  return out.substr(begin, end + 1 - begin);
}

}  // namespace rolis::bench::testing
