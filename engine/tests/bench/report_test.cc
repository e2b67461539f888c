// The table and the JSON line say when --other-cpu-load could not pin its
// threads (a run whose load may have shared the workers' CPUs).
#include "report.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace rolis::bench {
namespace {

std::string TableOf(const RunInfo& info, const RunResult& r) {
  char* buf = nullptr;
  size_t len = 0;
  std::FILE* out = open_memstream(&buf, &len);
  PrintTable(out, info, r);
  std::fclose(out);
  std::string text(buf, len);
  std::free(buf);
  return text;
}

RunInfo LoadedRun() {
  RunInfo info;
  info.workload = "ycsbpp";
  info.other_cpu_load = "stream";
  return info;
}

TEST(Report, SaysWhenTheOtherCpuLoadCouldNotBePinned) {
  RunResult r;
  r.measured_seconds = 1;
  r.other_cpu_load_rounds = 40;
  r.other_cpu_load_unpinned = 2;
  const RunInfo info = LoadedRun();
  EXPECT_NE(TableOf(info, r).find("warning: 2 of the load's threads could not be pinned"), std::string::npos);
  EXPECT_NE(JsonLine(info, r).find("\"other_cpu_load_unpinned\":2,"), std::string::npos) << JsonLine(info, r);
}

TEST(Report, NoWarningWhenEveryLoadThreadWasPinned) {
  RunResult r;
  r.measured_seconds = 1;
  r.other_cpu_load_rounds = 40;
  const RunInfo info = LoadedRun();
  EXPECT_EQ(TableOf(info, r).find("could not be pinned"), std::string::npos);
  EXPECT_NE(JsonLine(info, r).find("\"other_cpu_load_unpinned\":0,"), std::string::npos) << JsonLine(info, r);
}

}  // namespace
}  // namespace rolis::bench
