// What Replica::GetStatus reports (rolisctl status, the admin API).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "member_state.h"
#include "types.h"

namespace rolis::replication {

struct StreamStatus {
  uint64_t first_slot = 0, next_slot = 0, committed_slot = 0;
  LogKey committed_key{}, replayed_key{};
  // This member applied everything of the stream up to G (a leader: always;
  // a follower whose next item in it is above G). Metrics: its lag is 0.
  bool through_watermark = false;
};
struct ReplicaStatus {
  uint32_t id = 0;
  Role role = Role::kFollower;
  uint64_t epoch = 0;           // the epoch this member is in (its leader's)
  uint64_t promised_epoch = 0;
  LogKey watermark{};           // G as this member knows it
  // CLOCK_MONOTONIC of this host at which the leader's clock read G's ts:
  // exact on the leader, estimated on a follower from the accepts it took
  // (docs/operations.md, "Metrics"); 0 when unknown.
  int64_t watermark_mono_ns = 0;
  LogKey replayed{};
  uint32_t leader_id = 0;
  std::string leader_address;
  DecidedPtr decided;
  std::vector<StreamStatus> streams;
  uint64_t config = 0;          // the configuration in force (membership.h) ...
  std::vector<MemberAddr> members;  // ... and its voting members
  bool dirty = false;           // holds commits a failover discarded: needs a state transfer
  uint64_t log_bytes = 0;
  uint64_t state_transfers = 0;
  uint64_t leader_snapshots = 0;  // snapshots it served while leading (its writes paused)
  uint64_t checkpoint_snapshots = 0;  // state transfers it served from its checkpoint while leading
  // Durability (docs/replication.md, "Durability").
  bool durable = false;         // a data directory keeps its votes
  std::string durability;       // what it recovered and checkpointed
  bool data_loss_suspected = false;
  std::string data_loss_reason;
};

}  // namespace rolis::replication
