// How a Replica is set up (rolisd's flags map onto ReplicaOptions), and the
// bounds of the engine's commit-timestamp clock that the leader's
// heartbeats and read fences rely on.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace rolis::replication {

// Who decides the cluster's epoch records (docs/replication.md, "One
// decider per cluster"): the control stream (DecideEpoch: rolisctl and the
// built-in election) or the operator (a compare-and-set in Kubernetes,
// handed to OpenEpoch). A member refuses the other one.
enum class Decider { kControlStream, kOperator };
const char* DeciderName(Decider d);  // "control-stream" or "operator"

struct ReplicaOptions {
  uint32_t id = 1;
  Decider decider = Decider::kControlStream;
  // The members the cluster started with (--peers), this one included: the
  // configuration until a decided record names another (membership.h).
  std::vector<uint32_t> members;
  std::map<uint32_t, std::string> addresses;  // their replication addresses, if known
  uint32_t streams = 1;           // worker streams (the same on every member)
  uint32_t batch_size = 50;       // a batch closes at this many transactions (rolisd: --batch-size) ...
  std::chrono::microseconds batch_timeout{1000};  // ... or after this long (idle: an empty batch)
  // An idle stream's empty batch (heartbeat) goes out every batch_timeout
  // only while a commit of this epoch is above G or a read waits for G;
  // otherwise every idle_heartbeat (followers' failure detection must allow
  // for it: the built-in election sets it well below its timeout). Each
  // costs every follower a message, a reply and a few thread wakeups per
  // stream, which an idle cluster of 8 streams paid 160 times a second at
  // 100 ms.
  std::chrono::milliseconds idle_heartbeat{250};
  uint32_t max_inflight = 64;     // per stream: batches beyond the majority-accepted prefix
  uint32_t peer_window = 64;      // per stream and peer: batches sent and not acknowledged
  std::chrono::milliseconds retransmit{100};   // resend what a peer has not acknowledged
  std::chrono::milliseconds rpc_timeout{2000};  // Promise, Control, Snapshot calls
  std::chrono::milliseconds open_timeout{5000};  // OpenEpoch waits this long for a majority
  std::chrono::milliseconds live_window{3000};   // a peer silent longer no longer holds back compaction
  // A peer further behind than either bound (per stream) no longer holds
  // back compaction: it catches up by state transfer.
  uint64_t max_log_slots = 20000;
  uint64_t max_log_bytes = uint64_t{256} << 20;
  uint64_t compact_every = 64;     // compact once this many slots can go
  // Per stream, the leader keeps its newest slots whatever the peers say, up
  // to whichever bound comes first. In bytes too: TPC-C batches of 50 are
  // ~125 KB, so 4096 slots would hold half a gigabyte, all freshly faulted.
  uint64_t min_retained = 4096;
  uint64_t min_retained_bytes = uint64_t{16} << 20;
  std::string client_address;      // announced to followers (redirects)
  // Start-up probe: find out from the other members whether this member
  // restarted empty (then it catches up by state transfer before it votes).
  bool probe_at_start = true;
  // Clock of commit timestamps (see Clock below); default: CLOCK_MONOTONIC
  // based bounds set by the caller through SetClock.
};

// Bounds of the engine's commit-timestamp clock: floor() is at or below
// every ts a worker may assign from now on, ceiling() at or above every ts
// assigned so far. (The engine's ts is (clock ticks << 8) | worker.)
struct TsClock {
  std::function<uint64_t()> floor;
  std::function<uint64_t()> ceiling;
};
// The engine's clock is CLOCK_MONOTONIC nanoseconds since the Database was
// opened. Reading CLOCK_MONOTONIC just before and just after Open gives
// bases between which the engine's lies: ticks from the later base are a
// floor, ticks from the earlier one a ceiling.
TsClock MonotonicTsClock(uint64_t nanos_before_open, uint64_t nanos_after_open);
uint64_t MonotonicNanos();

}  // namespace rolis::replication
