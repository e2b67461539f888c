// The benchmark suite end to end (docs/benchmarks.md, "Suite"): every mode
// (silo, rolis, 2pl, calvin; the replicated ones with two rolisd followers)
// runs every workload it supports for about a second, exits 0 and prints, as
// its last line, valid JSON naming the mode and workload, with commits and
// the workload's check where it has one (the bank total, TPC-A's sums,
// TPC-C's consistency conditions).
#include <gtest/gtest.h>

#include <cstdio>
#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

#include "run_bench.h"

namespace {

using rolis::bench::testing::LastLine;
using rolis::bench::testing::RunBench;

// Small data sets: the point is that each runs and reports, not its figure.
const char* kSmall =
    " --seconds=0.8 --warmup=0.2 --ycsb-keys=10000 --retwis-keys=10000 --tpca-branches=4 --bank-accounts=1000"
    " --tpcc-items=1000 --tpcc-customers=100 --tpcc-new-orders=30";

struct Case {
  std::string mode, workload, extra;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.mode << " " << c.workload << " " << c.extra; }

class Suite : public ::testing::TestWithParam<Case> {};

TEST_P(Suite, RunsAndPrintsJson) {
  const Case& c = GetParam();
  int code = -1;
  const std::string out = RunBench("--mode=" + c.mode + " --workload=" + c.workload + kSmall + " " + c.extra, &code);
  ASSERT_EQ(code, 0) << out;
  const std::string line = LastLine(out);
  nlohmann::json j;
  ASSERT_NO_THROW(j = nlohmann::json::parse(line)) << line;
  EXPECT_EQ(j.at("system"), c.mode);
  EXPECT_EQ(j.at("workload"), c.workload);
  EXPECT_EQ(j.at("replicas").get<int>(), c.mode == "silo" ? 1 : 3);
  EXPECT_GT(j.at("commits").get<double>(), 0);
  EXPECT_GT(j.at("throughput_tps").get<double>(), 0);
  EXPECT_GE(j.at("abort_rate").get<double>(), 0);
  EXPECT_GT(j.at("per_thread_tps").get<double>(), 0);
  if (c.workload == "bank") EXPECT_EQ(j.at("check"), "bank_total_ok");
  if (c.workload == "tpca") EXPECT_EQ(j.at("check"), "tpca_sums_ok");
  if (c.workload == "tpcc") EXPECT_EQ(j.at("check"), "tpcc_consistent");
}

std::vector<Case> Cases() {
  std::vector<Case> cases;
  for (const char* mode : {"silo", "rolis", "2pl", "calvin"}) {
    for (const char* w : {"ycsbpp", "retwis", "tpca", "bank", "hash", "tpcc"}) {
      const std::string wl = w;
      std::string extra;
      if (wl == "ycsbpp") extra = "--zipf=0.9";
      if (wl == "bank") extra = "--mix=10/90";
      if (wl == "hash") extra = "--mix=90/10";
      cases.push_back({mode, wl, extra});
    }
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(ModesAndWorkloads, Suite, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           std::string m = info.param.mode == "2pl" ? "twopl" : info.param.mode;
                           return m + "_" + info.param.workload;
                         });

TEST(SuiteFlags, OldFlagsStillWork) {
  int code = -1;
  std::string out = RunBench("--mode=unreplicated --workload=ycsbpp --seconds=0.3 --warmup=0 --ycsb-keys=1000", &code);
  ASSERT_EQ(code, 0) << out;
  nlohmann::json j = nlohmann::json::parse(LastLine(out));
  EXPECT_EQ(j.at("mode"), "unreplicated");
  EXPECT_EQ(j.at("system"), "silo");
  out = RunBench("--mode=calvin --workload=ycsbpp --zipf=1.5" + std::string(kSmall), &code);
  EXPECT_NE(code, 0);
  EXPECT_NE(out.find("--zipf"), std::string::npos) << out;
}

}  // namespace
