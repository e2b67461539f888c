// Configurations and majorities (membership.h): the one-member-at-a-time
// rule, the leader's joint count while a change settles, and the quorum a
// failover's Prepare must gather when the configuration moved.
#include "membership.h"

#include <gtest/gtest.h>

namespace rolis::replication {
namespace {

std::vector<MemberAddr> Cfg(std::initializer_list<uint32_t> ids) {
  std::vector<MemberAddr> out;
  for (uint32_t id : ids) out.push_back(MemberAddr{id, "127.0.0.1:" + std::to_string(7000 + id)});
  return out;
}

std::vector<std::vector<uint32_t>> Subsets(const std::vector<uint32_t>& ids) {
  std::vector<std::vector<uint32_t>> out;
  for (uint32_t mask = 0; mask < (1u << ids.size()); mask++) {
    std::vector<uint32_t> s;
    for (size_t i = 0; i < ids.size(); i++) {
      if (mask & (1u << i)) s.push_back(ids[i]);
    }
    out.push_back(s);
  }
  return out;
}

TEST(Membership, MajoritiesOfConfigurationsOneMemberApartAlwaysIntersect) {
  // Every change the check accepts, from every size 1..7: any majority of
  // the old and any majority of the new configuration share a member.
  for (uint32_t n = 1; n <= 7; n++) {
    std::vector<MemberAddr> cur;
    for (uint32_t id = 1; id <= n; id++) cur.push_back(MemberAddr{id, "h:" + std::to_string(id)});
    std::vector<std::vector<MemberAddr>> targets;
    auto grown = cur;
    grown.push_back(MemberAddr{n + 1, "h:new"});
    targets.push_back(grown);
    for (uint32_t drop = 2; drop <= n; drop++) {  // member 1 leads
      std::vector<MemberAddr> t;
      for (const auto& m : cur) {
        if (m.id != drop) t.push_back(m);
      }
      targets.push_back(t);
    }
    for (const auto& target : targets) {
      MembershipChange ch;
      ASSERT_TRUE(CheckMembershipChange(cur, target, 1, &ch).ok());
      auto a = MemberIds(cur), b = MemberIds(ch.members);
      std::vector<uint32_t> all = a;
      for (uint32_t id : b) {
        if (!Contains(cur, id)) all.push_back(id);
      }
      for (const auto& qa : Subsets(all)) {
        if (!HasMajority(a, qa)) continue;
        for (const auto& qb : Subsets(all)) {
          if (!HasMajority(b, qb)) continue;
          bool meet = false;
          for (uint32_t x : qa) meet = meet || std::find(qb.begin(), qb.end(), x) != qb.end();
          ASSERT_TRUE(meet) << n << " members: majorities of consecutive configurations do not meet";
        }
      }
    }
  }
}

TEST(Membership, TwoMembersApartCanHaveDisjointMajorities) {
  // Why one at a time: {1,2,3} and {1,2,3,4,5} have disjoint majorities.
  EXPECT_TRUE(HasMajority({1, 2, 3}, {1, 2}));
  EXPECT_TRUE(HasMajority({1, 2, 3, 4, 5}, {3, 4, 5}));
  MembershipChange ch;
  Status s = CheckMembershipChange(Cfg({1, 2, 3}), Cfg({1, 2, 3, 4, 5}), 1, &ch);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("one member at a time"), std::string::npos) << s.message();
}

TEST(Membership, BadTargetsAreRefusedWithAReason) {
  MembershipChange ch;
  auto code = [&](std::vector<MemberAddr> target, uint32_t leader = 1) {
    return CheckMembershipChange(Cfg({1, 2, 3}), target, leader, &ch).code();
  };
  EXPECT_EQ(code({}), StatusCode::kInvalidArgument);
  EXPECT_EQ(code(Cfg({1, 2, 3, 0})), StatusCode::kInvalidArgument);
  EXPECT_EQ(code(Cfg({1, 2, 2, 3})), StatusCode::kInvalidArgument) << "duplicate id";
  EXPECT_EQ(code(Cfg({1})), StatusCode::kInvalidArgument) << "two removed at once";
  EXPECT_EQ(code(Cfg({1, 2})), StatusCode::kOk);
  EXPECT_EQ(code(Cfg({2, 3})), StatusCode::kFailedPrecondition) << "the leader removes itself";
  EXPECT_NE(CheckMembershipChange(Cfg({1, 2, 3}), Cfg({2, 3}), 1, &ch).message().find("fail over"), std::string::npos);
  auto no_address = Cfg({1, 2, 3});
  no_address.push_back(MemberAddr{4, ""});
  EXPECT_EQ(code(no_address), StatusCode::kInvalidArgument) << "a new member without an address";
  auto moved = Cfg({1, 2, 3});
  moved[1].address = "elsewhere:1";
  EXPECT_EQ(code(moved), StatusCode::kInvalidArgument) << "an address change";
  auto swap = Cfg({1, 2, 4});
  EXPECT_EQ(code(swap), StatusCode::kInvalidArgument) << "one removed and one added";
}

TEST(Membership, TheSameMembershipIsAnIdempotentNoOp) {
  MembershipChange ch;
  auto target = Cfg({3, 1, 2});
  target[0].address = "";  // addresses of current members may be left out
  ASSERT_TRUE(CheckMembershipChange(Cfg({1, 2, 3}), target, 1, &ch).ok());
  EXPECT_TRUE(ch.same);
  EXPECT_EQ(ch.members, Cfg({1, 2, 3})) << "sorted, with the known addresses";
}

TEST(Membership, AddAndRemoveNameTheMember) {
  MembershipChange ch;
  ASSERT_TRUE(CheckMembershipChange(Cfg({1, 2, 3}), Cfg({1, 2, 3, 4}), 1, &ch).ok());
  EXPECT_TRUE(ch.add);
  EXPECT_EQ(ch.member.id, 4u);
  ASSERT_TRUE(CheckMembershipChange(Cfg({1, 2, 3, 4}), Cfg({1, 2, 4}), 1, &ch).ok());
  EXPECT_FALSE(ch.add);
  EXPECT_EQ(ch.member.id, 3u);
}

TEST(Membership, JointCountNeedsAMajorityOfBothConfigurations) {
  std::map<uint32_t, uint64_t> need{{1, 100}, {2, 90}, {3, 10}, {4, 10}};
  auto f = [&](uint32_t id) { return need.count(id) ? need[id] : 0; };
  EXPECT_EQ(MajorityPrefix({{1, 2, 3}}, f), 90u);
  // {1,2,3,4}: the third largest is 10 (1 and 2 alone are not a majority).
  EXPECT_EQ(MajorityPrefix({{1, 2, 3, 4}}, f), 10u);
  EXPECT_EQ(MajorityPrefix({{1, 2, 3}, {1, 2, 3, 4}}, f), 10u);
  need[4] = 95;
  EXPECT_EQ(MajorityPrefix({{1, 2, 3}, {1, 2, 3, 4}}, f), 90u);
  // A member not heard from holds nothing.
  EXPECT_EQ(MajorityPrefix({{1, 2, 3, 4, 5}}, f), 90u);
  EXPECT_EQ(MajorityPrefix({{1, 5, 6}}, f), 0u);
}

TEST(Membership, RecordsOrderByEpochThenConfiguration) {
  Decided a, b;
  a.record.epoch = 3;
  a.config = 5;
  b.record.epoch = 4;
  EXPECT_TRUE(NewerRecord(b, a));
  b.record.epoch = 3;
  b.config = 6;
  EXPECT_TRUE(NewerRecord(b, a));
  EXPECT_FALSE(NewerRecord(a, a));
  EXPECT_LT(InstanceAfter(&a), InstanceAfter(&b));
  EXPECT_EQ(InstanceAfter(nullptr), 0u);
}

PromiseReply Vote(uint32_t id, DecidedPtr decided, DecidedPtr accepted = nullptr) {
  PromiseReply r;
  r.from = id;
  r.ok = true;
  r.decided = decided;
  r.ctl_instance = InstanceAfter(decided.get());
  r.ctl_accepted = accepted;
  r.ctl_accepted_ballot = accepted ? 1 : 0;
  return r;
}

DecidedPtr Record(uint64_t epoch, uint64_t config, std::vector<MemberAddr> members) {
  auto d = std::make_shared<Decided>();
  d->record.epoch = epoch;
  d->config = config;
  d->members = std::move(members);
  return d;
}

TEST(Membership, PrepareWaitsForAMajorityOfTheNewestConfigurationItLearns) {
  auto c0 = Record(2, 0, Cfg({1, 2, 3}));
  auto c1 = Record(2, 1, Cfg({1, 2, 3, 4}));
  auto c2 = Record(2, 2, Cfg({1, 2, 3, 4, 5}));
  // A candidate that knows only {1,2,3}: 1 and 2 promise, and 2 knows that
  // the configuration is {1,2,3,4,5}: a majority of it is needed.
  std::vector<std::pair<uint32_t, PromiseReply>> rs{{1, Vote(1, c0)}, {2, Vote(2, c2)}};
  PrepareQuorum q = CheckPrepareQuorum(c0, Cfg({1, 2, 3}), rs);
  EXPECT_FALSE(q.ok) << q.Describe();
  EXPECT_EQ(q.newest, c2);
  rs.push_back({5, Vote(5, c2)});
  EXPECT_TRUE(CheckPrepareQuorum(c0, Cfg({1, 2, 3}), rs).ok);

  // A change accepted (maybe chosen) in the instance after the newest
  // record: a majority of its configuration is needed as well.
  std::vector<std::pair<uint32_t, PromiseReply>> rs2{{1, Vote(1, c0, c1)}, {2, Vote(2, c0)}};
  q = CheckPrepareQuorum(c0, Cfg({1, 2, 3}), rs2);
  EXPECT_FALSE(q.ok) << "{1,2} is a majority of {1,2,3} but not of {1,2,3,4}";
  EXPECT_NE(q.Describe().find("{1,2,3,4}"), std::string::npos) << q.Describe();
  rs2.push_back({4, Vote(4, c0)});
  EXPECT_TRUE(CheckPrepareQuorum(c0, Cfg({1, 2, 3}), rs2).ok);

  // Members that do not vote (not in the configuration, or catching up)
  // are not counted.
  std::vector<std::pair<uint32_t, PromiseReply>> rs3{{4, Vote(4, c0)}, {5, Vote(5, c0)}};
  rs3[0].second.amnesic = true;
  EXPECT_FALSE(CheckPrepareQuorum(c0, Cfg({1, 2, 3}), rs3).ok);
  // Without any record, the configuration the cluster started with.
  std::vector<std::pair<uint32_t, PromiseReply>> rs4{{1, Vote(1, nullptr)}, {3, Vote(3, nullptr)}};
  EXPECT_TRUE(CheckPrepareQuorum(nullptr, Cfg({1, 2, 3}), rs4).ok);
}

}  // namespace
}  // namespace rolis::replication
