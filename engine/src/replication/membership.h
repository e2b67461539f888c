// Membership (docs/replication.md, "Membership"): configurations, the
// one-member-at-a-time rule, and majorities. Pure functions, no I/O.
//
// A configuration is the set of voting members. Configuration k+1 differs
// from configuration k by exactly one member, so that every majority of k
// and every majority of k+1 share a member: maj(n) + maj(n+1) = n + 2, more
// than the n + 1 members of the larger one. It is decided on the control
// stream, in the
// instance that follows the record in force, as a record of the same epoch
// with config = k+1 and the new member list.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "rolis/status.h"
#include "types.h"

namespace rolis::replication {

inline size_t MajorityOf(size_t n) { return n / 2 + 1; }

// The member ids of a configuration, sorted.
std::vector<uint32_t> MemberIds(const std::vector<MemberAddr>& members);
bool Contains(const std::vector<MemberAddr>& members, uint32_t id);

// True if `voters` holds a majority of `members`.
bool HasMajority(const std::vector<uint32_t>& members, const std::vector<uint32_t>& voters);

// The slot before which a majority of every configuration in `configs`
// holds the whole prefix: per configuration the majority-th largest of its
// members' need_from(id) (the first slot the member lacks), then the
// minimum over configurations (while a change settles the leader counts the
// old and the new configuration together).
template <typename NeedFrom>
uint64_t MajorityPrefix(const std::vector<std::vector<uint32_t>>& configs, NeedFrom need_from) {
  uint64_t out = UINT64_MAX;
  uint64_t votes[64];
  for (const auto& cfg : configs) {
    if (cfg.empty() || cfg.size() > 64) continue;
    size_t n = 0;
    for (uint32_t id : cfg) votes[n++] = need_from(id);
    std::sort(votes, votes + n, [](uint64_t a, uint64_t b) { return a > b; });
    out = std::min(out, votes[MajorityOf(n) - 1]);
  }
  return out == UINT64_MAX ? 0 : out;
}

// Records are ordered by (epoch, config): a membership change is a record
// of the same epoch with the next configuration.
bool NewerRecord(const Decided& a, const Decided& b);
// The control-stream instance that decides the record following `d`
// (0: the first record). Epoch in the high bits, configuration in the low.
uint64_t InstanceAfter(const Decided* d);
constexpr int kConfigBits = 20;

// One membership change, checked: the full target membership against the
// configuration in force. Errors (nothing changes): kInvalidArgument for a
// malformed target (no member, id 0, duplicate id, an address missing or
// changed, more than one member added or removed), kFailedPrecondition for
// removing `leader` (fail over first). `*same` is true when the target is
// the configuration in force (an idempotent retry: nothing to do).
struct MembershipChange {
  bool same = false;
  bool add = false;
  MemberAddr member;                // the member added or removed
  std::vector<MemberAddr> members;  // the target, sorted by id
};
Status CheckMembershipChange(const std::vector<MemberAddr>& current, const std::vector<MemberAddr>& target,
                             uint32_t leader, MembershipChange* out);

// The quorum of a failover's Prepare (docs/replication.md, "Membership").
// From the replies so far: the newest record known (to the candidate, its
// driver, or any reply) decides the configuration; a membership change of
// that record's epoch that a reply accepted in the instance after it may
// have been chosen, so its configuration needs a majority too. Every
// configuration listed must have a majority among the voters (replies that
// promised, from members of it). Since each change is decided by a
// majority of the configuration before it, a quorum of an older
// configuration always shows the next one: the check is redone on every
// reply, and the candidate waits for the newer majority it reveals.
struct PrepareQuorum {
  DecidedPtr newest;
  std::vector<std::vector<uint32_t>> configs;
  std::vector<uint32_t> voters;
  bool ok = false;
  std::string Describe() const;  // "majority of {1,2,3} (has 1,2)" for errors
};
PrepareQuorum CheckPrepareQuorum(const DecidedPtr& known, const std::vector<MemberAddr>& initial,
                                 const std::vector<std::pair<uint32_t, PromiseReply>>& replies);

std::string MembersString(const std::vector<MemberAddr>& members);

}  // namespace rolis::replication
