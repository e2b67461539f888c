// The Rolis paper's baselines as rolis-bench modes, on the same engine, the
// same workloads and the same replication as the rolis mode
// (docs/benchmarks.md, "Suite"):
// - 2pl: the replicated mode (the leader's engine here, rolisd followers on
//   loopback) with the transactions run by baselines::TwoPhaseLocking: locks
//   on the declared sets (wait-die), released once the transaction's writes
//   are on a majority. Its batch size defaults to 1 (a transaction waits for
//   its own batch; a longer one only adds the batch timeout).
// - calvin: the engine here runs the transactions unreplicated, in the order
//   baselines::Calvin schedules; each epoch's batch of inputs is committed
//   as one transaction to a second, replicated database (its own replicated
//   mode with one stream, followers holding the batches), and scheduled once
//   the watermark covers it. The followers keep the input log but do not
//   execute it (rolisd knows no Calvin): the leader's execution stands for
//   every member's.
// With --replicas=1 neither replicates (2PL's locks go at commit; Calvin's
// batches are scheduled as they close).
#pragma once

#include <memory>

#include "mode.h"

namespace rolis::bench {

Status MakeTwoPhaseLockingMode(const ModeOptions& options, std::unique_ptr<Mode>* mode);
Status MakeCalvinMode(const ModeOptions& options, std::unique_ptr<Mode>* mode);

}  // namespace rolis::bench
