// The replicated mode of rolis-bench (Rolis): the leader's engine runs in
// this process with the replication layer rolisd uses (PaxosReplicator) as
// its commit hook; the followers are rolisd processes on loopback that this
// mode starts (FollowerSet) and stops.
//
// - A transaction counts as committed (throughput) when the engine commits
//   it. Its client-visible latency runs from its first Begin to when the
//   watermark G passes its commit ts, which is when rolisd would acknowledge
//   it. Workers hand (commit ts, start) to an observer thread (beside the
//   replication threads) that checks the watermark every ~200 us, as rolisd's
//   leader loop completes waiting replies when G moves.
// - The initial data set is loaded before the leader opens, with the hook
//   off: the followers hold only what the measured run writes.
// - Placement: with more CPUs than workers, workers are pinned to the first
//   CPUs, and the followers and this process's replication threads to the
//   others.
#pragma once

#include <memory>

#include "mode.h"

namespace rolis::bench {

// What the baselines built on the replicated mode (baseline_modes.h) need
// from it, on worker thread t.
class ReplicatedControl {
 public:
  virtual ~ReplicatedControl() = default;
  // Lets go of the worker's mutex (the replicator closes idle batches under
  // it) before the worker blocks; Resume takes it again before a transaction.
  virtual void Pause(uint32_t t) = 0;
  virtual void Resume(uint32_t t) = 0;
  // Pauses, then blocks until the watermark G covers commit_ts (a majority
  // holds the transaction and all before it): rolisd's acknowledgement.
  // kFailedPrecondition when the leader loses its role or after 10 s.
  virtual Status WaitReplicated(uint32_t t, uint64_t commit_ts) = 0;
};

// Checks the options (odd replicas, rolisd present) and starts the
// followers. `control`, when given, is set to the mode's (owned by it).
Status MakeReplicatedMode(const ModeOptions& options, std::unique_ptr<Mode>* mode,
                          ReplicatedControl** control = nullptr);

}  // namespace rolis::bench
