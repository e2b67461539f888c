// The role of a member, one word for the server and the replication layer:
// what `rolisctl status`, the admin API and the rolis_role metric report,
// and what the server checks before serving a write (docs/replication.md).
#pragma once

namespace rolis {

enum class Role {
  kStandalone,  // no replication (rolisd without --peers): serves everything
  kLeader,      // the open leader of its epoch: serves writes
  kFollower,    // replays what its leader's G covers: serves reads
  kCandidate,   // preparing or opening a new epoch
  kCatchingUp,  // not voting yet, or its store needs a state transfer
};

// Lower case, as in the rolis_role metric.
constexpr const char* RoleName(Role r) {
  switch (r) {
    case Role::kStandalone: return "standalone";
    case Role::kLeader: return "leader";
    case Role::kFollower: return "follower";
    case Role::kCandidate: return "candidate";
    case Role::kCatchingUp: return "catching_up";
  }
  return "unknown";
}

}  // namespace rolis
