// Values and messages of the replication protocol (docs/replication.md) as
// plain C++ types. The in-process transport passes them as they are; the
// gRPC transport converts them to and from proto/rolis/v1/replication.proto.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "failover_plan.h"

namespace rolis::replication {

using SteadyClock = std::chrono::steady_clock;

// The value of one slot. Immutable once made: one copy is shared by the
// leader's log, its sends to every peer and (in-process) the acceptors.
struct Batch {
  BatchKind kind = BatchKind::kTxns;
  uint64_t epoch = 0;    // epoch of the leader that created it
  uint64_t last_ts = 0;  // key of a kTxns batch is (epoch, last_ts)
  uint32_t txn_count = 0;
  uint32_t crc = 0;      // CRC32C of payload
  std::string payload;   // encoded transactions (codec.h)

  LogKey key() const { return LogKey{epoch, kind == BatchKind::kTxns ? last_ts : 0}; }
  size_t bytes() const { return sizeof(Batch) + payload.size(); }
};
using BatchPtr = std::shared_ptr<const Batch>;

struct Slot {
  uint64_t index = 0;
  uint64_t ballot = 0;  // epoch under which it was accepted
  BatchPtr value;
};

// A voting member: its id and replication address (host:port).
struct MemberAddr {
  uint32_t id = 0;
  std::string address;
  bool operator==(const MemberAddr&) const = default;
};

// A decided record: (epoch, V) with the leader it was decided for and G' at
// the decision. EpochRecord (failover_plan.h) holds epoch and cut. It also
// carries the configuration in force (membership.h): `config` counts the
// membership changes, `members` are the voting members (empty: the members
// the cluster started with, --peers).
struct Decided {
  EpochRecord record;
  uint32_t leader_id = 0;
  LogKey watermark{};
  uint64_t config = 0;
  std::vector<MemberAddr> members;
  bool operator==(const Decided&) const = default;
};
using DecidedPtr = std::shared_ptr<const Decided>;

// Phase 2 of stream `stream`: leader of `epoch` proposes `slot`.
struct AcceptMsg {
  uint32_t from = 0;
  uint64_t epoch = 0;
  uint32_t stream = 0;
  Slot slot;
  LogKey commit_watermark{};  // leader's G (followers replay up to it)
  uint64_t log_start = 0;     // first slot of the leader's log in this stream
  uint64_t compact_below = 0; // every member has replayed the slots below (may compact)
  DecidedPtr decided;         // the record of this epoch (followers need its cut)
  std::string leader_client_address;
};

struct AcceptReply {
  uint32_t from = 0;
  bool ok = false;
  uint64_t promised_epoch = 0;  // when !ok: the newer epoch promised
  uint32_t stream = 0;
  uint64_t slot_index = 0;
  // First slot at or after max(first slot, log_start) that this acceptor does
  // not hold with ballot == epoch: it holds [.., need_from) of this epoch.
  uint64_t need_from = 0;
  // With a durable acceptor need_from counts only slots on disk; this is the
  // same prefix counting what is held in memory (a leader resends from here,
  // not from need_from). 0: the same as need_from.
  uint64_t held_from = 0;
  uint64_t replayed_next = 0;   // next slot this member will replay
  uint64_t first_slot = 0;      // slots below are compacted
  bool catching_up = false;     // when !ok: this member is not voting yet (state transfer)
  std::string error;            // bad input: why (nothing changed)
};

// Phase 1 across every stream at once; with peek, a read that promises
// nothing (state transfer of a member that restarts empty).
struct PromiseMsg {
  uint32_t from = 0;
  uint64_t epoch = 0;
  bool peek = false;
  // A peek only: per stream, the answer carries the slots with index at or
  // above from_slot[t] (UINT64_MAX: none). Empty: every slot. A list of
  // another length than the streams, or any list on a real Promise (whose
  // proposer needs every slot), is refused (docs/replication.md, "Members
  // that lose their memory").
  std::vector<uint64_t> from_slot;
};

// from_slot for a peek that reads none of the slots of `streams` streams.
inline std::vector<uint64_t> NoSlots(uint32_t streams) { return std::vector<uint64_t>(streams, UINT64_MAX); }

struct StreamSlots {
  uint64_t first_slot = 0;      // slots below are compacted into the store
  LogKey base_key{};            // reach of the compacted prefix
  uint64_t base_barrier = 0;    // epoch of the last barrier in the compacted prefix
  std::vector<Slot> slots;      // sorted by index
};

struct PromiseReply {
  uint32_t from = 0;
  bool ok = false;
  uint64_t promised_epoch = 0;
  std::vector<StreamSlots> streams;
  DecidedPtr decided;           // latest decided record this member knows
  bool amnesic = false;         // restarted empty and not yet caught up: no vote
  bool virgin = false;          // has never accepted a value nor learned a decided record
  std::string error;
  // Its vote on the control stream, in the instance following `decided`.
  uint64_t ctl_instance = 0;
  uint64_t ctl_promised = 0;
  uint64_t ctl_accepted_ballot = 0;
  DecidedPtr ctl_accepted;
};

// The control stream: a single-decree Paxos instance per previous epoch
// decides the record that follows it (compare-and-set).
struct ControlMsg {
  enum class Kind { kPrepare, kAccept, kLearn, kQuery };
  Kind kind = Kind::kQuery;
  uint32_t from = 0;
  uint64_t instance = 0;  // the previous epoch
  uint64_t ballot = 0;    // (round << 8) | member id
  DecidedPtr value;       // kAccept, kLearn
  DecidedPtr prev;        // the record of epoch `instance` (null for instance 0)
};

struct ControlReply {
  uint32_t from = 0;
  bool ok = false;
  uint64_t promised = 0;
  uint64_t accepted_ballot = 0;
  DecidedPtr accepted;    // kPrepare: value accepted in this instance, if any
  DecidedPtr latest;      // the newest decided record known
  std::string error;
};

// State transfer: the store of a caught-up member at its replayed key.
struct SnapshotMsg {
  uint32_t from = 0;
};
struct SnapshotWrite {
  uint32_t table = 0;
  std::string key;
  std::string value;
};
struct SnapshotReply {
  bool ok = false;
  std::string error;
  LogKey at{};                         // every valid entry at or below is in it
  std::vector<uint64_t> next_slot;     // per stream: replay continues here
  std::vector<uint64_t> skip;          // per stream: txns of the batch at next_slot already in it
  std::vector<LogKey> stream_key;      // per stream: reach of the slots below next_slot
  std::vector<uint64_t> stream_barrier;
  DecidedPtr decided;
  uint64_t leader_epoch = 0;
  std::vector<SnapshotWrite> writes;
};

}  // namespace rolis::replication
