// 2PL+Paxos: a transaction keeps its locks while it waits for replication.
// Two threads transfer between the same two accounts, so every pair of
// transactions conflicts: with the locks held across wait_replicated no
// two threads are ever in it at once (released at commit, they would be);
// the total is kept.
#include "baselines/two_phase_locking.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "../workloads/small_workload_run.h"
#include "workloads/bank.h"

namespace rolis::baselines {
namespace {

TEST(TwoPhaseLocking, LocksAreHeldUntilReplicated) {
  workloads::BankConfig c;
  c.accounts = 2;
  c.read_only_percent = 0;
  workloads::Bank bank(c);
  auto db = workloads::OpenAndLoad(bank);
  std::atomic<int> inside{0}, most{0}, calls{0};
  TwoPhaseLockingHooks hooks;
  hooks.wait_replicated = [&](uint32_t, uint64_t ts) -> Status {
    const int now = inside.fetch_add(1) + 1;
    int m = most.load();
    while (now > m && !most.compare_exchange_weak(m, now)) {
    }
    calls.fetch_add(1);
    std::this_thread::sleep_for(std::chrono::microseconds(200));  // a replication round trip
    inside.fetch_sub(1);
    return ts != 0 ? Status::OK() : Status::Internal("no commit ts");
  };
  TwoPhaseLocking runner(2, hooks);
  bench::RunResult r = workloads::RunFixed(db.get(), bank, 300, 2, &runner);
  EXPECT_EQ(r.commits, 600u);
  EXPECT_EQ(calls.load(), 600);
  EXPECT_EQ(most.load(), 1);
  EXPECT_EQ(r.conflict_aborts, runner.deaths());
  Status s = bank.CheckTotal(db.get());
  EXPECT_TRUE(s.ok()) << s.ToString();
}

}  // namespace
}  // namespace rolis::baselines
