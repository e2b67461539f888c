// Seeded fault runs: a bank-transfer workload and a unique-key insert
// workload on the leader while the network drops, duplicates, delays and
// reorders messages, and the leader crashes or is partitioned and a new one
// is elected. Invariants checked after each run, on the leader and on every
// caught-up follower:
//   - every acknowledged insert is present (no acknowledged txn lost);
//   - the bank total is unchanged (no partial or lost transfer);
//   - every follower's store equals the leader's, key by key.
// ROLIS_SOAK_RUNS (default 4) sets the number of seeds; ROLIS_SOAK_SEED the first.
// The summary line counts the faults injected and the runs that passed.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <set>
#include <string>

#include "cluster_harness.h"

namespace rolis::replication::testing {
namespace {

constexpr int kAccounts = 8;
constexpr int64_t kInitial = 1000;

std::string Acct(int i) { return "acct/" + std::to_string(i); }

// A balance as a fixed-width row (12 digits and a memo), so that a transfer
// changes a few of its bytes and goes into the log as a patch when the same
// stream wrote the account last (docs/replication.md, "Patches").
std::string Balance(int64_t v) {
  char digits[16];
  std::snprintf(digits, sizeof digits, "%012lld", static_cast<long long>(v));
  return std::string(digits) + "|memo: a fixed-width account row of 64 bytes.|";
}
int64_t BalanceOf(const std::string& row) { return std::stoll(row.substr(0, 12)); }

struct Ledger {
  std::mutex mu;
  std::set<std::string> acked_inserts;
  int transfers_acked = 0;
};

bool ack_pause(std::mt19937_64& rng) { return rng() % 4 == 0; }

void Load(Cluster& c, uint32_t stream, std::atomic<uint32_t>& leader, std::atomic<bool>& stop, Ledger& ledger,
          uint64_t seed) {
  std::mt19937_64 rng(seed);
  int n = 0;
  while (!stop.load()) {
    // A commit on a member that crashed meanwhile is refused (Commit holds
    // the member while it runs; the body reads the table inside it).
    uint32_t id = leader.load();
    if (id == 0) {
      std::this_thread::sleep_for(2ms);
      continue;
    }
    if (rng() % 2 == 0) {
      int a = rng() % kAccounts, b = rng() % kAccounts;
      if (a == b) continue;
      int64_t x = rng() % 50;
      auto ack = c.Commit(id, stream, [&](Transaction* t) {
        Table* table = c.m(id).table;
        std::string va, vb;
        Status s = t->Get(table, Acct(a), &va);
        if (!s.ok()) return s;
        s = t->Get(table, Acct(b), &vb);
        if (!s.ok()) return s;
        s = t->Put(table, Acct(a), Balance(BalanceOf(va) - x));
        if (!s.ok()) return s;
        return t->Put(table, Acct(b), Balance(BalanceOf(vb) + x));
      }, 200ms);
      if (ack == Cluster::Ack::kAcked) {
        std::lock_guard<std::mutex> g(ledger.mu);
        ledger.transfers_acked++;
      }
    } else {
      std::string k = "ins/" + std::to_string(stream) + "/" + std::to_string(n++);
      auto ack = c.Commit(id, stream, [&](Transaction* t) { return t->Insert(c.m(id).table, k, "1"); }, 200ms);
      if (ack == Cluster::Ack::kAcked) {
        std::lock_guard<std::mutex> g(ledger.mu);
        ledger.acked_inserts.insert(k);
      }
    }
    if (ack_pause(rng)) std::this_thread::sleep_for(std::chrono::microseconds(rng() % 500));
  }
}

// What the runs did, for the summary line.
struct SoakCounts {
  int crashes = 0, leader_partitions = 0, follower_partitions = 0;
  int moved = 0;  // re-elections of the old leader refused, the follower elected instead
};

// The keys on which two stores differ (at most a few, for the message).
std::string Differences(const std::map<std::string, std::string>& want, const std::map<std::string, std::string>& got) {
  std::string out;
  int n = 0;
  auto note = [&](const std::string& k, const char* how) {
    if (n++ < 5) out += " " + k + " (" + how + ")";
  };
  for (const auto& [k, v] : want) {
    auto it = got.find(k);
    if (it == got.end()) note(k, "missing");
    else if (it->second != v) note(k, "other value");
  }
  for (const auto& [k, v] : got) {
    if (!want.count(k)) note(k, "extra");
  }
  if (n > 5) out += " and " + std::to_string(n - 5) + " more";
  return out;
}

void CheckMember(Cluster& c, uint32_t id, Ledger& ledger, const char* what,
                 const std::map<std::string, std::string>* leader_store = nullptr) {
  auto dump = c.Dump(id);
  if (leader_store) {
    EXPECT_TRUE(dump == *leader_store) << what << " member " << id << ": store differs from the leader's:"
                                       << Differences(*leader_store, dump);
  }
  int64_t total = 0;
  for (int i = 0; i < kAccounts; i++) {
    auto it = dump.find(Acct(i));
    ASSERT_NE(it, dump.end()) << what << " member " << id << " lacks " << Acct(i);
    total += BalanceOf(it->second);
  }
  EXPECT_EQ(total, kAccounts * kInitial) << what << " member " << id << ": bank total changed";
  std::lock_guard<std::mutex> g(ledger.mu);
  for (const std::string& k : ledger.acked_inserts) {
    EXPECT_TRUE(dump.count(k)) << what << " member " << id << " lost acknowledged insert " << k;
  }
}

void RunSeed(uint64_t seed, SoakCounts& counts) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  ClusterOptions o;
  o.seed = seed;
  o.batch_size = 1 + rng() % 16;
  Cluster c(o);
  LinkFaults f;
  f.drop = (rng() % 6) / 100.0;
  f.duplicate = (rng() % 6) / 100.0;
  f.delay_max = std::chrono::microseconds(rng() % 2000);
  c.net().SetAllFaults(f);
  // Under drops the first failover may find no majority, as any: retried.
  Status first = c.FailoverRetrying(1);
  ASSERT_TRUE(first.ok()) << "first failover: " << first.ToString() << "\n" << c.Describe();
  for (int i = 0; i < kAccounts; i++) {
    ASSERT_EQ(c.Put(1, 0, Acct(i), Balance(kInitial)), Cluster::Ack::kAcked);
  }
  Ledger ledger;
  std::atomic<uint32_t> leader{1};
  std::atomic<bool> stop{false};
  std::vector<std::thread> load;
  // Stops and joins the load on every return: an ASSERT that returned with
  // the threads running ended the process (std::terminate).
  struct JoinLoad {
    std::atomic<bool>& stop;
    std::vector<std::thread>& load;
    ~JoinLoad() {
      stop.store(true);
      for (auto& t : load) {
        if (t.joinable()) t.join();
      }
    }
  } join_load{stop, load};
  for (uint32_t t = 0; t < 2; t++) {
    load.emplace_back([&, t] { Load(c, t, leader, stop, ledger, seed * 31 + t); });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(150 + rng() % 200));

  // The fault: crash the leader, partition it, or partition a follower.
  const int fault = rng() % 3;
  uint32_t old = 1;
  uint32_t next = 2 + rng() % 2;
  uint32_t cut = 0;  // the follower partitioned by fault 2
  if (fault == 0) {
    leader.store(0);
    c.Crash(old);  // while the load's commits run on it
    ASSERT_FALSE(c.Up(old)) << "the crash of member " << old << " did not happen";
    counts.crashes++;
  } else if (fault == 1) {
    c.net().Partition({old});
    counts.leader_partitions++;
  } else {
    cut = next == 2 ? 3u : 2u;
    c.net().Partition({cut});
    next = 1;  // the leader keeps its majority; a re-election on it must keep everything
    counts.follower_partitions++;
  }
  Status s = c.FailoverRetrying(next);
  if (!s.ok() && fault == 2) {
    // A try that lost its messages can depose the old leader, which then
    // holds commits the failover discarded and refuses to be the candidate
    // until a state transfer ("choose another candidate", seen once in 12
    // runs). Only that refusal moves the election to the connected
    // follower, as the operator would; any other failure fails the run.
    // The summary counts these runs.
    ASSERT_EQ(s.code(), StatusCode::kFailedPrecondition) << "re-election of member 1: " << s.ToString();
    ASSERT_NE(s.message().find("choose another candidate"), std::string::npos)
        << "re-election of member 1: " << s.ToString();
    std::printf("seed %lu: member 1 refused its re-election (%s); electing the connected follower\n",
                static_cast<unsigned long>(seed), s.message().c_str());
    counts.moved++;
    const uint32_t follower = cut == 2 ? 3u : 2u;
    s = c.FailoverRetrying(follower);
    if (s.ok()) next = follower;
  }
  ASSERT_TRUE(s.ok()) << "failover to " << next << " (fault " << fault << "): " << s.ToString();
  leader.store(next);
  std::this_thread::sleep_for(std::chrono::milliseconds(150 + rng() % 200));
  stop.store(true);
  for (auto& t : load) t.join();
  load.clear();

  c.net().Heal();
  c.net().SetAllFaults({});
  if (fault == 0) c.Restart(old);
  // One more write so every follower learns the final watermark.
  ASSERT_EQ(c.Put(next, 0, "final", "1"), Cluster::Ack::kAcked);
  ASSERT_TRUE(Cluster::WaitUntil([&] {
    for (uint32_t id : c.ids()) {
      if (id != next && c.r(id).role() != Role::kFollower) return false;
    }
    return true;
  }, 15s)) << "members did not all become followers\n" << c.Describe();
  ASSERT_TRUE(c.WaitReplicated(next, 15s)) << c.Describe();
  CheckMember(c, next, ledger, "leader");
  const auto leader_store = c.Dump(next);
  for (uint32_t id : c.ids()) {
    if (id != next) CheckMember(c, id, ledger, "follower", &leader_store);
  }
  uint64_t patches = 0;
  for (uint32_t id : c.ids()) patches += c.m(id).hook->patches.load();
  std::lock_guard<std::mutex> g(ledger.mu);
  EXPECT_GT(ledger.acked_inserts.size() + ledger.transfers_acked, 0u);
  if (ledger.transfers_acked > 20) {
    EXPECT_GT(patches, 0u) << "transfers went into the log without patches";
  }
  std::printf(
      "seed %lu: fault %d, batch %u, drop %.2f dup %.2f delay<=%ldus: %zu inserts, %d transfers acknowledged, "
      "%lu writes as patches\n",
      static_cast<unsigned long>(seed), fault, o.batch_size, f.drop, f.duplicate, static_cast<long>(f.delay_max.count()),
      ledger.acked_inserts.size(), ledger.transfers_acked, static_cast<unsigned long>(patches));
}

TEST(FaultSoak, AcknowledgedTransactionsSurviveFaultsAndFailovers) {
  int runs = 4;
  uint64_t first = 1;
  if (const char* e = std::getenv("ROLIS_SOAK_RUNS")) runs = std::atoi(e);
  if (const char* e = std::getenv("ROLIS_SOAK_SEED")) first = std::strtoull(e, nullptr, 10);
  int passed = 0;
  SoakCounts counts;
  for (int i = 0; i < runs; i++) {
    int failures_before = ::testing::UnitTest::GetInstance()->current_test_info()->result()->total_part_count();
    RunSeed(first + i, counts);
    if (::testing::UnitTest::GetInstance()->current_test_info()->result()->total_part_count() == failures_before) {
      passed++;
    }
  }
  std::printf(
      "fault soak: %d faults injected (%d leader crashes, %d leader partitions, %d follower partitions; %d "
      "re-elections refused by the old leader and moved to the follower), %d of %d seeded runs passed\n",
      counts.crashes + counts.leader_partitions + counts.follower_partitions, counts.crashes, counts.leader_partitions,
      counts.follower_partitions, counts.moved, passed, runs);
}

}  // namespace
}  // namespace rolis::replication::testing
