#include "member_state.h"

namespace rolis::replication {

MemberState::MemberState(uint32_t self, std::vector<MemberAddr> initial, Transport* transport)
    : self_(self), initial_(std::move(initial)), transport_(transport) {
  for (const MemberAddr& m : initial_) known_.insert(m.id);
}

MemberState::Leader MemberState::leader() const {
  std::lock_guard<std::mutex> g(mu_);
  return leader_;
}

bool MemberState::FollowLeader(uint64_t epoch, uint32_t id, const std::string& client_address) {
  std::lock_guard<std::mutex> g(mu_);
  if (epoch < leader_.epoch) return false;
  if (epoch > leader_.epoch || leader_.id != id) {
    leader_ = Leader{epoch, id, client_address};
  } else if (!client_address.empty()) {
    leader_.client_address = client_address;
  }
  return true;
}

void MemberState::Lead(uint64_t epoch, const std::string& client_address) {
  std::lock_guard<std::mutex> g(mu_);
  leader_ = Leader{epoch, self_, client_address};
}

void MemberState::AnnounceOwnAddress(uint64_t epoch, const std::string& client_address) {
  std::lock_guard<std::mutex> g(mu_);
  if (epoch >= leader_.epoch && !client_address.empty()) leader_.client_address = client_address;
}

std::vector<uint32_t> MemberState::peers() const {
  std::lock_guard<std::mutex> g(mu_);
  std::vector<uint32_t> out;
  for (uint32_t m : known_) {
    if (m != self_) out.push_back(m);
  }
  return out;
}

bool MemberState::Knows(uint32_t id) const {
  std::lock_guard<std::mutex> g(mu_);
  return known_.count(id) > 0;
}

void MemberState::Know(const std::vector<MemberAddr>& members) {
  for (const MemberAddr& m : members) {
    if (m.id == self_) continue;
    {
      std::lock_guard<std::mutex> g(mu_);
      known_.insert(m.id);
    }
    transport_->AddPeer(m.id, m.address);
  }
}

}  // namespace rolis::replication
