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

// Checks the options (odd replicas, rolisd present) and starts the followers.
Status MakeReplicatedMode(const ModeOptions& options, std::unique_ptr<Mode>* mode);

}  // namespace rolis::bench
