#include "membership.h"

#include <algorithm>
#include <set>

namespace rolis::replication {

std::vector<uint32_t> MemberIds(const std::vector<MemberAddr>& members) {
  std::vector<uint32_t> ids;
  for (const MemberAddr& m : members) ids.push_back(m.id);
  std::sort(ids.begin(), ids.end());
  return ids;
}

bool Contains(const std::vector<MemberAddr>& members, uint32_t id) {
  return std::any_of(members.begin(), members.end(), [id](const MemberAddr& m) { return m.id == id; });
}

bool HasMajority(const std::vector<uint32_t>& members, const std::vector<uint32_t>& voters) {
  std::set<uint32_t> in(members.begin(), members.end());
  size_t n = 0;
  for (uint32_t v : std::set<uint32_t>(voters.begin(), voters.end())) n += in.count(v);
  return !members.empty() && n >= MajorityOf(in.size());
}

bool NewerRecord(const Decided& a, const Decided& b) {
  return a.record.epoch != b.record.epoch ? a.record.epoch > b.record.epoch : a.config > b.config;
}

uint64_t InstanceAfter(const Decided* d) {
  if (d == nullptr) return 0;
  return (d->record.epoch << kConfigBits) | (d->config & ((1ull << kConfigBits) - 1));
}

PrepareQuorum CheckPrepareQuorum(const DecidedPtr& known, const std::vector<MemberAddr>& initial,
                                 const std::vector<std::pair<uint32_t, PromiseReply>>& replies) {
  PrepareQuorum q;
  q.newest = known;
  for (const auto& [id, r] : replies) {
    if (r.ok && !r.amnesic && r.decided && (!q.newest || NewerRecord(*r.decided, *q.newest))) q.newest = r.decided;
  }
  auto config_of = [&](const DecidedPtr& d) { return MemberIds(d && !d->members.empty() ? d->members : initial); };
  q.configs.push_back(config_of(q.newest));
  const uint64_t instance = InstanceAfter(q.newest.get());
  for (const auto& [id, r] : replies) {
    if (!r.ok || r.amnesic) continue;
    q.voters.push_back(id);
    if (q.newest && r.ctl_instance == instance && r.ctl_accepted &&
        r.ctl_accepted->record.epoch == q.newest->record.epoch) {
      auto cfg = config_of(r.ctl_accepted);
      if (std::find(q.configs.begin(), q.configs.end(), cfg) == q.configs.end()) q.configs.push_back(cfg);
    }
  }
  q.ok = true;
  for (const auto& cfg : q.configs) q.ok = q.ok && HasMajority(cfg, q.voters);
  return q;
}

std::string PrepareQuorum::Describe() const {
  std::string s;
  std::vector<uint32_t> sorted = voters;
  std::sort(sorted.begin(), sorted.end());
  for (const auto& cfg : configs) {
    if (!s.empty()) s += " and ";
    s += "a majority of {";
    for (size_t i = 0; i < cfg.size(); i++) s += (i ? "," : "") + std::to_string(cfg[i]);
    s += "}";
  }
  s += " (promised by {";
  for (size_t i = 0; i < sorted.size(); i++) s += (i ? "," : "") + std::to_string(sorted[i]);
  return s + "})";
}

std::string MembersString(const std::vector<MemberAddr>& members) {
  std::string s;
  for (const MemberAddr& m : members) {
    if (!s.empty()) s += ",";
    s += std::to_string(m.id);
    if (!m.address.empty()) s += "=" + m.address;
  }
  return "{" + s + "}";
}

Status CheckMembershipChange(const std::vector<MemberAddr>& current, const std::vector<MemberAddr>& target,
                             uint32_t leader, MembershipChange* out) {
  *out = MembershipChange{};
  if (target.empty()) return Status::InvalidArgument("the new membership is empty");
  std::map<uint32_t, MemberAddr> want;
  for (const MemberAddr& m : target) {
    if (m.id == 0) return Status::InvalidArgument("member id 0 (ids start at 1)");
    if (!want.emplace(m.id, m).second) {
      return Status::InvalidArgument("member " + std::to_string(m.id) + " is listed twice");
    }
  }
  std::map<uint32_t, MemberAddr> have;
  for (const MemberAddr& m : current) have.emplace(m.id, m);
  std::vector<MemberAddr> added, removed;
  for (const auto& [id, m] : want) {
    auto it = have.find(id);
    if (it == have.end()) {
      if (m.address.empty()) {
        return Status::InvalidArgument("new member " + std::to_string(id) + " has no replication address");
      }
      added.push_back(m);
    } else if (!m.address.empty() && !it->second.address.empty() && m.address != it->second.address) {
      return Status::InvalidArgument("member " + std::to_string(id) + " has replication address " +
                                     it->second.address + ", not " + m.address +
                                     " (an address does not change by a membership change: remove the member, then "
                                     "add it again)");
    }
  }
  for (const auto& [id, m] : have) {
    if (!want.count(id)) removed.push_back(m);
  }
  out->members.clear();
  for (const MemberAddr& m : target) {
    MemberAddr x = m;
    if (auto it = have.find(m.id); it != have.end() && !it->second.address.empty()) x.address = it->second.address;
    out->members.push_back(x);
  }
  std::sort(out->members.begin(), out->members.end(),
            [](const MemberAddr& a, const MemberAddr& b) { return a.id < b.id; });
  if (added.empty() && removed.empty()) {
    out->same = true;
    return Status::OK();
  }
  if (added.size() + removed.size() > 1) {
    return Status::InvalidArgument(
        "the new membership " + MembersString(out->members) + " adds " + std::to_string(added.size()) +
        " and removes " + std::to_string(removed.size()) + " members of " + MembersString(current) +
        ": change one member at a time, so that majorities of consecutive configurations intersect");
  }
  if (!removed.empty() && removed[0].id == leader) {
    return Status::FailedPrecondition("member " + std::to_string(leader) +
                                      " leads and cannot remove itself: fail over to another member first, then "
                                      "remove it through the new leader");
  }
  out->add = !added.empty();
  out->member = out->add ? added[0] : removed[0];
  return Status::OK();
}

}  // namespace rolis::replication
