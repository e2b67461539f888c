// What every role of one member reads and sets about the member as a whole:
// its role and the flags of its store (lock-free), the leader it follows,
// and the members it knows of (docs/replication.md).
//
// Invariants kept here: I7 (no vote after amnesia) through `voting`, which
// is false from a start that may have lost state until the votes of a
// majority are adopted; I5 (followers never run ahead) through `dirty` and
// `needs_transfer`, which keep a member whose store holds discarded commits
// from serving reads or leading until a state transfer replaces it.
//
// Lock order: mu_ is a leaf; every other lock of the Replica may be held
// while it is taken, and nothing is called while holding it.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "membership.h"
#include "rolis/role.h"
#include "transport.h"
#include "types.h"

namespace rolis::replication {

class MemberState {
 public:
  // `initial`: the members the cluster started with (--peers), this one
  // included. `transport` is told of every member learned later.
  MemberState(uint32_t self, std::vector<MemberAddr> initial, Transport* transport);

  uint32_t self() const { return self_; }

  // Flags, read and set lock-free by every role.
  std::atomic<Role> role{Role::kFollower};
  std::atomic<bool> voting{true};          // false while probing or catching up from empty
  std::atomic<bool> dirty{false};          // local commits a failover discarded (or unreplicated)
  std::atomic<bool> needs_transfer{false};  // the store must be replaced by a state transfer
  std::atomic<bool> stopping{false};       // Replica::Stop has begun

  // The role of a member that does not lead: catching up while it holds
  // commits a failover discarded or its store awaits a state transfer
  // (either way it serves no reads and cannot be a candidate), else follower.
  Role FollowerRole() const {
    return dirty.load() || needs_transfer.load() ? Role::kCatchingUp : Role::kFollower;
  }

  // After this member's pending candidacy was dropped: a candidate becomes a
  // follower (catching up if it holds discarded commits or awaits a transfer).
  void LeaveCandidateRole() {
    if (role.load() == Role::kCandidate) role.store(FollowerRole());
  }

  // When this member last took an accept from an open leader, or promised
  // another candidate a newer epoch (or started).
  void NoteLeaderContact() {
    last_contact_.store(SteadyClock::now().time_since_epoch().count(), std::memory_order_relaxed);
  }
  SteadyClock::time_point last_leader_contact() const {
    return SteadyClock::time_point(SteadyClock::duration(last_contact_.load(std::memory_order_relaxed)));
  }

  // The leader this member follows (or leads): its epoch, id and client address.
  struct Leader {
    uint64_t epoch = 0;
    uint32_t id = 0;
    std::string client_address;
  };
  Leader leader() const;
  // Follows `id` as the leader of `epoch`; false (and no change) when it
  // already follows a newer epoch.
  bool FollowLeader(uint64_t epoch, uint32_t id, const std::string& client_address);
  // This member opened `epoch`: it leads, and serves clients at `client_address`.
  void Lead(uint64_t epoch, const std::string& client_address);
  // The operator announced this member's client address for `epoch`.
  void AnnounceOwnAddress(uint64_t epoch, const std::string& client_address);

  // Members. The configuration a decided record names (the initial one
  // when it names none), and whether this member votes in it.
  const std::vector<MemberAddr>& initial() const { return initial_; }
  std::vector<MemberAddr> ConfigOf(const DecidedPtr& d) const {
    return d && !d->members.empty() ? d->members : initial_;
  }
  bool InConfig(const DecidedPtr& d) const { return Contains(ConfigOf(d), self_); }
  // Every other member this one knows of (started with, or learned from a
  // configuration): calls fan out to all of them.
  std::vector<uint32_t> peers() const;
  bool Knows(uint32_t id) const;
  // Learns the ids and addresses of `members` (the transport can call them).
  void Know(const std::vector<MemberAddr>& members);

 private:
  const uint32_t self_;
  const std::vector<MemberAddr> initial_;
  Transport* const transport_;
  std::atomic<int64_t> last_contact_{SteadyClock::now().time_since_epoch().count()};

  mutable std::mutex mu_;
  std::set<uint32_t> known_;  // every member id known, this one included
  Leader leader_;
};

}  // namespace rolis::replication
