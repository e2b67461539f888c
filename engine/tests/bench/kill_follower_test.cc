// No acknowledged transaction lost after killing a member, per replicated
// mode (docs/benchmarks.md, "Correctness"): rolis-bench SIGKILLs one rolisd
// follower mid-run (--kill-follower-at), the run goes on with the leader and
// the other follower, and --check-acked then stops the leader as if it
// crashed and asks the surviving follower which slots it holds: every
// transaction (calvin: every batch of inputs) acknowledged must be there.
// The workload's own check runs too: the bank total, TPC-C's conditions.
#include <gtest/gtest.h>

#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

#include "run_bench.h"

namespace {

using rolis::bench::testing::LastLine;
using rolis::bench::testing::RunBench;

const char* kShort =
    " --seconds=1.2 --warmup=0.2 --bank-accounts=1000 --tpcc-items=1000 --tpcc-customers=100 --tpcc-new-orders=30"
    " --kill-follower-at=0.6 --check-acked";

struct Case {
  std::string mode, workload;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.mode << " " << c.workload; }

class KillFollower : public ::testing::TestWithParam<Case> {};

TEST_P(KillFollower, AcknowledgedTransactionsSurvive) {
  const Case& c = GetParam();
  int code = -1;
  const std::string out = RunBench("--mode=" + c.mode + " --workload=" + c.workload + kShort, &code);
  ASSERT_EQ(code, 0) << out;
  EXPECT_NE(out.find("killed follower 3 (SIGKILL)"), std::string::npos) << out;
  nlohmann::json j;
  ASSERT_NO_THROW(j = nlohmann::json::parse(LastLine(out))) << out;
  EXPECT_EQ(j.at("system"), c.mode);
  EXPECT_EQ(j.at("killed_follower").get<int>(), 3);
  EXPECT_EQ(j.at("acked_check"), "ok");
  EXPECT_GT(j.at("commits").get<double>(), 0);
  EXPECT_EQ(j.at("check"), c.workload == "bank" ? "bank_total_ok" : "tpcc_consistent");
}

std::vector<Case> Cases() {
  std::vector<Case> cases;
  for (const char* mode : {"rolis", "2pl", "calvin"}) {
    for (const char* w : {"bank", "tpcc"}) cases.push_back({mode, w});
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(ReplicatedModes, KillFollower, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return (info.param.mode == "2pl" ? std::string("twopl") : info.param.mode) + "_" +
                                  info.param.workload;
                         });

TEST(KillFollowerFlags, NeedFollowersAndAKillWithinTheRun) {
  int code = -1;
  std::string out = RunBench("--mode=silo --workload=bank --seconds=0.3 --warmup=0 --check-acked", &code);
  EXPECT_NE(code, 0);
  EXPECT_NE(out.find("need a replicated mode with followers"), std::string::npos) << out;
  out = RunBench("--mode=rolis --workload=bank --seconds=0.3 --warmup=0 --bank-accounts=1000 --kill-follower-at=30",
                 &code);
  EXPECT_NE(code, 0);
  EXPECT_NE(out.find("the run ended before"), std::string::npos) << out;
}

}  // namespace
